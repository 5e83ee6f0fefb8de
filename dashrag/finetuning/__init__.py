"""Fine-tuning on a user's own judgements: judged pairs, hard negatives, trainers, the pipeline.

``dashrag finetune embedding`` / ``reranker`` / ``pipeline`` (cli/finetune_commands.py) drive these
modules; nothing here is imported by ``import dashrag`` (torch, datasets and accelerate load on use).
The decisions are recorded in docs/finetuning.md.
"""
