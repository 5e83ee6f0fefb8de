"""The worker process of one build, update, sync or learn job (run by :mod:`dashrag.service.build_process`).

It reads its task as JSON on stdin, caps its own address space first (``RLIMIT_AS``), sends its
output to stderr so that stdout carries only its JSON lines (``{"progress": [stage, done, total]}``,
then ``{"result": ...}`` or ``{"error": message, "memory": bool}``), and calls the one build or update.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO


def _cap_memory(memory_mb: int | None) -> None:
    if memory_mb:
        import resource

        limit = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _build(task: dict[str, Any], progress: Any) -> dict[str, Any]:
    """The build; a folder corpus (uploaded files, a folder under the data root) also answers what became of
    each of its files (``Corpus.file_outcomes``: the page lists them)."""
    from pathlib import Path

    from dashrag.api import build_tree
    from dashrag.documents.corpus import Corpus

    progress("reading the corpus")
    corpus = Corpus.from_path(task["corpus"])
    report = build_tree(task["config"], corpus, task["out"], name=task["name"], chunker=task["chunker"],
                        cache_dir=task["cache_dir"], overwrite=task.get("overwrite", False),
                        progress=progress, source_folder=task.get("source_folder"))
    files = corpus.file_outcomes(task["corpus"]) if Path(task["corpus"]).is_dir() else None
    return {"documents": report.documents, "chunks": report.chunks, "files": files}


def _update(task: dict[str, Any], progress: Any) -> dict[str, Any]:
    from dashrag.api import update_tree
    from dashrag.core.persistence import cleanup_warnings
    from dashrag.documents.model import SourceDocument

    add = task["add"] if isinstance(task["add"], str) else [SourceDocument(**d) for d in task["add"]]
    with cleanup_warnings() as warned:
        report = update_tree(task["folder"], add=add, remove=task["remove"], progress=progress,
                             store_url=task.get("store_url"))
    return {"changed": report.changed, "counts": report.counts(), "warnings": warned}


def _sync(task: dict[str, Any], progress: Any) -> dict[str, Any]:
    from dashrag.api import sync_tree
    from dashrag.core.persistence import cleanup_warnings

    with cleanup_warnings() as warned:
        report = sync_tree(task["folder"], task["source"], progress=progress, store_url=task.get("store_url"))
    return {"changed": bool(report.update and report.update.changed), "counts": report.counts(), "warnings": warned}


#: The learn job's stages (``finetune pipeline --corpus``'s steps), as the job shows them.
LEARN_STAGES = {"mine": "learning: mining hard negatives", "embed base": "learning: embedding with the base model",
                "train": "learning: training", "embed": "learning: embedding with the learned model",
                "tune": "learning: tuning the tree"}


def _learn(task: dict[str, Any], progress: Any) -> dict[str, Any]:
    """``finetune pipeline --corpus`` on the tree's stored documents or a folder under the data root
    (docs/finetuning.md); its summary (no server path) is the job's report."""
    from pathlib import Path

    from dashrag.finetuning.documents_job import DOCUMENTS_FILE, learn_from_documents, stored_documents_file
    from dashrag.finetuning.embedding_trainer import EmbeddingHyperparameters

    work = Path(task["work"])
    progress("reading the corpus")
    corpus = (Path(task["source"]) if task["source"] is not None
              else stored_documents_file(Path(task["folder"]), task.get("store_url"), work / DOCUMENTS_FILE))
    hyper = EmbeddingHyperparameters(max_seq_length=task["max_seq_length"], batch_size=task["batch_size"])
    return learn_from_documents(corpus, Path(task["out"]), work, time_budget_s=task["time_budget_s"],
                                max_steps=task["max_steps"], hyper=hyper,
                                progress=lambda step, done, total: progress(LEARN_STAGES.get(step, step), done, total))


WORK = {"build": _build, "update": _update, "sync": _sync, "learn": _learn}


def perform(task: dict[str, Any], progress: Any) -> dict[str, Any]:
    """The task's build, update or sync, its stages sent to ``progress``: what the worker runs, and what the
    service runs itself for a tree only its process may open (build_process.run_in_this_process)."""
    return WORK[task["kind"]](task, progress)


def run(task: dict[str, Any], out: TextIO) -> None:
    from dashrag.extras import missing_extra
    from dashrag.service.pipeline import safe_message

    def send(line: dict[str, Any]) -> None:
        out.write(json.dumps(line) + "\n")
        out.flush()

    def progress(stage: str, done: int = 0, total: int | None = None) -> None:
        send({"progress": [stage, done, total]})

    try:
        send({"result": perform(task, progress)})
    except MemoryError:
        send({"error": "out of memory", "memory": True})
    except OSError as exc:  # a read-only or full folder: the reason, never the server's path
        send({"error": f"a file cannot be written or read ({exc.strerror or type(exc).__name__})", "memory": False})
    except Exception as exc:  # reported to the job; the parent shows only what safe_message allows
        needs = missing_extra(exc, "this tree")  # an optional library not installed: the extra that brings it
        send({"error": safe_message(needs or exc), "memory": False})


def main() -> None:
    task = json.loads(sys.stdin.read())
    _cap_memory(task.get("memory_mb"))
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything a library prints goes to the server's stderr, not into the JSON lines
    sys.stdout = sys.stderr
    run(task, out)


if __name__ == "__main__":
    main()


__all__ = ["main", "perform", "run"]
