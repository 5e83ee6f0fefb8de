"""Learning from a saved tree's documents or a folder as one call: what the service's "learn from these documents"
job runs in its worker process (docs/finetuning.md, "From the service and the page").

It is ``dashrag finetune pipeline --corpus`` whole (``run_pipeline`` with ``PseudoQueries``: the same pseudo-queries,
budget, keep-the-base rule), pointed at a corpus the service holds: a tree's own stored documents (written out as a
JSONL file in the job's work folder, so titles and metadata such as a converted file's sections reach the
pseudo-queries), or a folder under the data root. The model folder, the preset and the full report go to one
folder beside the trees; what a client is answered is :func:`summary`: the choice and why, the figures, the plan,
without a server path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dashrag.core.persistence import atomic_write_json
from dashrag.finetuning.embedding_trainer import EmbeddingHyperparameters
from dashrag.finetuning.progress import Progress, no_progress

PRESET_FILE = "preset.json"
MODEL_FOLDER = "model"
REPORT_FILE = "report.json"
DOCUMENTS_FILE = "documents.jsonl"


def stored_documents_file(folder: Path, store_url: str | None, target: Path) -> Path:
    """The saved tree's documents (read-only from its store) as a BEIR-style JSONL file at ``target``."""
    from dashrag.core.saved_tree import saved_store_url
    from dashrag.store.store import Store

    store = Store(saved_store_url(folder, store_url), read_only=True)
    try:
        documents = store.read_documents()
    finally:
        store.close()
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as lines:
        for document in documents:
            lines.write(json.dumps({"_id": document.id, "title": document.title, "text": document.text,
                                    "metadata": dict(document.metadata)}, ensure_ascii=False) + "\n")
    return target


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """What a client is told of a run: which tree was chosen and why, the held-out figures, the tuning, the plan and
    the time; never a server path (those stay in the report file beside the model)."""
    card = report["model_card"]
    plan = card["plan"]
    choice = report["choice"]
    return {
        "shipped": choice["shipped"],
        "reason": choice["reason"],
        "held_out": {"metric": choice["metric"], "queries": choice["held_out_queries"], "base": choice["base"],
                     "learned": choice["learned"], "dense_alone": choice["dense_alone"],
                     "dense_model": choice["dense_model"]},
        "sources": choice["sources"],
        "written": choice["written"],
        "training": {"steps": card["figures"]["train_steps"], "loss": card["figures"]["train_loss"],
                     "pairs_trained": plan["pairs_trained"], "plan": plan["reasons"]},
        "tuning": {"queries": report["tuning"]["queries"], "points": report["tuning"]["points"],
                   "best": report["tuning"]["best"], "grid_chosen": report["tuning"]["grid_chosen"]},
        "budget": report["budget"],
        "timings": {name: round(seconds, 2) for name, seconds in report["timings"].items()},
    }


def learn_from_documents(corpus: Path, out: Path, workdir: Path, *, time_budget_s: float | None,
                         max_steps: int | None = None,
                         hyper: EmbeddingHyperparameters | None = None,
                         progress: Progress = no_progress) -> dict[str, Any]:
    """Run the ``--corpus`` pipeline on ``corpus`` into ``out`` (model folder, preset, report); the summary."""
    from dashrag.finetuning.pipeline import PipelineSettings, PseudoQueries, run_pipeline

    out.mkdir(parents=True, exist_ok=True)
    settings = PipelineSettings(dataset=corpus, out=out / PRESET_FILE, model_dir=out / MODEL_FOLDER, workdir=workdir,
                                hyper=hyper or EmbeddingHyperparameters(), time_budget_s=time_budget_s,
                                max_steps=max_steps, learn_from=PseudoQueries())
    report = run_pipeline(settings, progress)
    atomic_write_json(out / REPORT_FILE, report)
    return summary(report)


__all__ = ["DOCUMENTS_FILE", "MODEL_FOLDER", "PRESET_FILE", "REPORT_FILE", "learn_from_documents",
           "stored_documents_file", "summary"]
