"""The Trainer settings both trainers share: deterministic, CPU-friendly, quiet, nothing saved mid-run.

Both trainers (bi-encoder and cross-encoder) run Hugging Face's Trainer in a scratch folder that is
thrown away: the model folder is written once, atomically, at the end, so ``save_strategy`` is off;
``full_determinism`` with the seed for data order and initialisation gives the same weights on a
rerun; progress goes through dashrag's own display, so the Trainer's tqdm and reporters are off.
"""

from __future__ import annotations

from typing import Any, Protocol


class Schedule(Protocol):
    """What both hyperparameter sets (frozen dataclasses) give the Trainer."""

    @property
    def epochs(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def learning_rate(self) -> float: ...
    @property
    def warmup_ratio(self) -> float: ...
    @property
    def seed(self) -> int: ...


def shared_arguments(hyper: Schedule, scratch: str, device: str) -> dict[str, Any]:
    return {
        "output_dir": scratch,
        "num_train_epochs": hyper.epochs,
        "per_device_train_batch_size": hyper.batch_size,
        "learning_rate": hyper.learning_rate,
        "warmup_steps": hyper.warmup_ratio,  # a float below 1 is a ratio of the steps (transformers 5)
        "seed": hyper.seed,
        "data_seed": hyper.seed,
        "full_determinism": True,
        "save_strategy": "no",
        "logging_strategy": "epoch",
        "report_to": "none",
        "disable_tqdm": True,
        "use_cpu": device == "cpu",
        "dataloader_num_workers": 0,
    }
