"""Peak memory of fine-tuning MiniLM, per phase: attention dropout as the base model has it (before) and off.

Each variant runs in its own process (peak RSS is per process), sampled every 20 ms with psutil,
the peak kept per phase:

  import    torch, transformers, sentence-transformers
  data      reading the split and the corpus, BM25 over the corpus, mining every query's negatives
  probe     loading the model, the measured forward + backward steps (the budget's step time)
  train     the Trainer's steps (the recipe: batch 32, 256 tokens, MultipleNegativesRankingLoss), saving
  encode    encoding documents with the trained model (what the corpus embedding and evaluation do)

``before`` keeps the model's attention dropout (0.1 for MiniLM: what `dashrag finetune` did);
``after`` is the default now (0 while training; docs/finetuning.md says why). The variants may run
at the same time (``--parallel``): peak memory does not depend on speed. Run under ``nice``:

    PYTHONPATH=. .venv/bin/python bench/bench_finetune_memory.py [--steps 1] [--parallel] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
VARIANTS = {"before": None, "after": 0.0}  # attention dropout while training (None: the base model's)


class PeakPerPhase:
    """RSS sampled on a thread; the peak of each phase named by ``phase``."""

    def __init__(self) -> None:
        import psutil

        self.process = psutil.Process()
        self.phase = "start"
        self.peaks: dict[str, int] = {}
        self.running = True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self) -> None:
        while self.running:
            rss = self.process.memory_info().rss
            self.peaks[self.phase] = max(self.peaks.get(self.phase, 0), rss)
            time.sleep(0.02)

    def enter(self, phase: str) -> None:
        self.sample_once()
        self.phase = phase

    def sample_once(self) -> None:
        rss = self.process.memory_info().rss
        self.peaks[self.phase] = max(self.peaks.get(self.phase, 0), rss)

    def stop(self) -> dict[str, float]:
        self.sample_once()
        self.running = False
        self.thread.join()
        return {phase: round(peak / 1e9, 3) for phase, peak in self.peaks.items()}


def child(variant: str, dataset: Path, batch_size: int, max_seq_length: int, steps: int) -> dict[str, object]:
    peaks = PeakPerPhase()
    peaks.enter("import")
    import sentence_transformers  # noqa: F401
    import torch  # noqa: F401

    from dashrag.embeddings.sentence_transformer import SentenceTransformerEmbedding
    from dashrag.finetuning.embedding_trainer import Allowance, EmbeddingHyperparameters, train_embedding
    from dashrag.finetuning.training_data import prepare_training_data

    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="finetune-memory-") as work:
        peaks.enter("data")
        data = prepare_training_data(dataset, dev_fraction=0.0, workdir=Path(work) / "store")
        peaks.enter("probe")
        hyper = EmbeddingHyperparameters(batch_size=batch_size, max_seq_length=max_seq_length,
                                         attention_dropout=VARIANTS[variant])
        card = train_embedding(data, Path(work) / "model", hyper=hyper,
                               allowance=Allowance(max_steps=steps, probe_steps=1),
                               announce=lambda plan: peaks.enter("train"))
        peaks.enter("encode")
        embedding = SentenceTransformerEmbedding({"model": str(Path(work) / "model")})
        embedding.embed_documents(list(data.documents.values())[:256])
        embedding.close()
    wall = time.perf_counter() - began
    phases = peaks.stop()
    return {"variant": variant, "attention_dropout": VARIANTS[variant], "peak_rss_gb": phases,
            "peak_gb": max(phases.values()), "train_steps": card["figures"]["train_steps"],
            "step_s": card["plan"]["measured_step_s"], "wall_s": round(wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=256)
    parser.add_argument("--steps", type=int, default=1, help="Trainer steps after the one probe step")
    parser.add_argument("--parallel", action="store_true", help="run both variants at once")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if args.child:
        print(json.dumps(child(args.child, args.dataset, args.batch_size, args.max_seq_length, args.steps)))
        return
    load_before = os.getloadavg()
    command = [sys.executable, __file__, "--dataset", str(args.dataset), "--batch-size", str(args.batch_size),
               "--max-seq-length", str(args.max_seq_length), "--steps", str(args.steps), "--child"]
    runs = [subprocess.Popen([*command, variant], stdout=subprocess.PIPE, text=True) for variant in VARIANTS] \
        if args.parallel else []
    results = []
    for i, variant in enumerate(VARIANTS):
        process = runs[i] if runs else subprocess.Popen([*command, variant], stdout=subprocess.PIPE, text=True)
        out, _ = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"{variant}: exit {process.returncode}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    before, after = results
    report = {"results": results, "peak_ratio_after_to_before": round(after["peak_gb"] / before["peak_gb"], 3),
              "load_average_before": load_before, "load_average_after": os.getloadavg(),
              "batch_size": args.batch_size, "max_seq_length": args.max_seq_length, "parallel": args.parallel}
    for result in results:
        print(f"{result['variant']:>6} (attention dropout {result['attention_dropout']}): peak "
              f"{result['peak_gb']:.2f} GB; " + ", ".join(f"{k} {v:.2f}" for k, v in result["peak_rss_gb"].items()))
    print(f"after/before peak {report['peak_ratio_after_to_before']}; "
          f"load {load_before} → {report['load_average_after']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
