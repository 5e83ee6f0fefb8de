"""Tree builds as jobs: a thread pool runs them, ``GET /jobs/{id}`` reports progress.

A job is :func:`dashrag.api.build_tree` (the build of every face), run in a worker process held
to the service's memory and time limits (:mod:`dashrag.service.build_process`), into a hidden
folder of ``--trees`` (``.building-<id>``; caches in ``.work-<id>`` unless the
service shares a cache folder), which is only then renamed to the tree's name, so a
half-built tree is never listed or served; the collection registry never looks at
hidden folders. With ``overwrite`` a saved tree is rebuilt in its own folder (build_tree
switches the manifest last, so the old tree is served until the new one is whole: no
moment without the tree). The build's stages become the job's progress. A document update
job runs :func:`dashrag.api.update_tree` in a worker the same way.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dashrag.api import update_tree
from dashrag.core.persistence import MANIFEST_NAME
from dashrag.core.retriever import Retriever
from dashrag.documents.model import SourceDocument
from dashrag.service.build_process import WorkerLimits, run_in_worker
from dashrag.service.collections import CollectionRegistry
from dashrag.service.pipeline import safe_message

logger = logging.getLogger(__name__)


class NameTaken(Exception):
    pass


class TooManyBuilds(Exception):
    """More builds queued or running than ``max_pending_builds``: a client cannot queue unbounded work."""


#: Where each stage of ``build_tree`` lies on the job's 0..1 bar (fitting, which embeds, is the long one).
STAGE_SPANS: dict[str, tuple[float, float]] = {
    "reading the corpus": (0.0, 0.02), "chunking": (0.02, 0.08), "storing": (0.08, 0.1), "fitting": (0.1, 0.85),
    "embedding chunks": (0.1, 0.85), "saving": (0.85, 0.95), "publishing": (0.95, 0.99),
    "loading": (0.0, 0.1), "updating": (0.1, 0.85),  # ``update_tree``'s stages (a document update job)
    "hashing the folder": (0.0, 0.02), "reading files": (0.02, 0.1),  # ``sync_tree``'s own, before the update
}


class Cancelled(Exception):
    """Raised from the build's progress callback when the job was asked to stop (``build_tree`` unwinds)."""


@dataclass
class Job:
    """A build's state as ``GET /jobs/{id}`` shows it: the stage it is in with its counts, the time since it
    started and, once a counted stage has moved, an estimate of that stage's remaining seconds."""

    id: str
    tree: str
    status: str = "queued"
    progress: float = 0.0
    message: str = "queued"
    error: str | None = None
    cleanup: list[Path] = field(default_factory=list)
    counts: dict[str, int] | None = None
    updating: bool = False  # a document update of a saved tree, not a build
    stage: str | None = None
    done: int = 0
    total: int | None = None
    started: float = field(default_factory=time.monotonic)
    stage_started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    cancel_requested: bool = False

    def enter(self, stage: str, done: int = 0, total: int | None = None) -> None:
        self.check_cancel()
        if stage != self.stage:
            self.stage, self.stage_started = stage, time.monotonic()
        self.done, self.total = done, total
        self.status = "running"
        start, end = STAGE_SPANS.get(stage, (self.progress, self.progress))
        share = done / total if total else 0.0
        self.progress = max(self.progress, start + (end - start) * min(share, 1.0))
        self.message = f"{stage} ({done}/{total})" if total else stage

    def stage_eta_s(self) -> float | None:
        """The stage's remaining seconds at its pace so far; None before its counter moved or when uncounted."""
        if self.status != "running" or not self.total or not self.done or self.done >= self.total:
            return None
        spent = time.monotonic() - self.stage_started
        return round(spent / self.done * (self.total - self.done), 1)

    def check_cancel(self) -> None:
        if self.cancel_requested:
            raise Cancelled(f"cancelled during {self.stage or 'the start'}")

    def end(self, status: str, message: str, error: str | None = None) -> None:
        self.status, self.message, self.error, self.finished = status, message, error, time.monotonic()
        if status == "done":
            self.progress = 1.0

    def to_json(self) -> dict[str, Any]:
        elapsed = (self.finished or time.monotonic()) - self.started
        return {"id": self.id, "status": self.status, "progress": self.progress, "message": self.message,
                "tree": self.tree if self.status == "done" else None, "error": self.error,
                "stage": self.stage, "done": self.done, "total": self.total, "elapsed_s": round(elapsed, 3),
                "stage_eta_s": self.stage_eta_s(), "counts": self.counts}


#: What a job leaves in the trees folder while it runs, and a killed service leaves behind: job folders beside
#: the trees, and temporary stores inside a tree's folder (an overwrite builds in place).
JOB_LEFTOVERS = (".upload-*", ".building-*", ".work-*", ".replaced-*", ".deleted-*", "*/.store-*.sqlite.tmp*")


def remove_leftovers(trees: Path) -> None:
    """Remove what killed jobs left (at the service's start, before any job runs: one service per trees folder)."""
    for pattern in JOB_LEFTOVERS:
        for leftover in trees.glob(pattern):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


NO_LIMITS = WorkerLimits()


class BuildJobs:
    def __init__(self, registry: CollectionRegistry, workers: int, cache_dir: Path | None, max_pending: int = 4,
                 limits: WorkerLimits = NO_LIMITS):
        self.registry = registry
        self.max_pending = max_pending
        self.limits = limits
        self.cache_dir = cache_dir
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dashrag-build")
        if registry.trees_dir is not None and registry.trees_dir.is_dir():
            remove_leftovers(registry.trees_dir)

    def new_job_id(self) -> str:
        return uuid.uuid4().hex

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def submit(self, job_id: str, name: str, root: Retriever, corpus: Path, chunker: dict | None, overwrite: bool,
               cleanup: list[Path] = ()) -> Job:  # type: ignore[assignment]
        with self._lock:
            pending = [j for j in self._jobs.values() if j.status in ("queued", "running")]
            if len(pending) >= self.max_pending:
                raise TooManyBuilds(f"{len(pending)} builds are queued or running, the most this service takes; "
                                    "try again when one has finished")
            busy = any(j.tree == name for j in pending)
            exists = (self.registry.folder_of(name) / MANIFEST_NAME).is_file()
            if busy or (exists and not overwrite):
                raise NameTaken(f"a tree named {name!r} {'is being built' if busy else 'exists'}"
                                + ("" if busy else "; send overwrite: true to replace it"))
            job = Job(job_id, name, cleanup=list(cleanup))
            self._jobs[job_id] = job
        self._pool.submit(self._run, job, root, corpus, chunker, overwrite)
        return job

    def _run(self, job: Job, root: Retriever, corpus_path: Path, chunker: dict | None, overwrite: bool) -> None:
        target = self.registry.folder_of(job.tree)
        work, staging = target.parent / f".work-{job.id}", target.parent / f".building-{job.id}"
        # a saved tree is overwritten in place: build_tree switches its manifest last, so queries are answered
        # by the old tree until then and never meet a missing folder; a new tree is built aside and renamed in
        in_place = overwrite and (target / MANIFEST_NAME).is_file()
        task = {"kind": "build", "config": root.to_config(), "corpus": str(corpus_path),
                "out": str(target if in_place else staging), "name": job.tree, "chunker": chunker,
                "cache_dir": str(self.cache_dir or work), "overwrite": in_place}
        try:
            run_in_worker(task, self.limits, job.enter, job.check_cancel)
            job.enter("publishing")
            if not in_place:
                self._publish(staging, job.tree, overwrite)
            self.registry.load_tree(job.tree)
            job.end("done", f"built {job.tree}")
        except Cancelled as exc:
            job.end("cancelled", str(exc))
        except Exception as exc:  # a failed build is a job state, never a crashed worker
            logger.warning("build job %s failed: %s", job.id, type(exc).__name__, exc_info=logger.isEnabledFor(10))
            job.end("failed", f"build failed during {job.stage or 'the start'}", safe_message(exc))
        finally:
            for path in [work, staging, *job.cleanup]:
                shutil.rmtree(path, ignore_errors=True)

    def _publish(self, staging: Path, name: str, overwrite: bool) -> None:
        target = self.registry.folder_of(name)
        aside: Path | None = None
        if target.exists():
            if not overwrite:
                raise FileExistsError(f"{name} appeared while building")
            aside = target.with_name(f".replaced-{name}-{uuid.uuid4().hex[:8]}")
            os.replace(target, aside)
        os.replace(staging, target)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)

    def submit_update(self, job_id: str, name: str, add: Path | list[SourceDocument], cleanup: list[Path]) -> Job:
        """Add documents to the saved tree ``name`` as a job (docs/updating.md): ``update_tree`` changes the
        folder atomically under its save lock, then the registry swaps the new tree in; queries are answered
        by the old tree until then. A build of the same name running or queued: NameTaken."""
        documents = str(add) if isinstance(add, Path) else [dataclasses.asdict(d) for d in add]
        return self._submit_change(job_id, name, {"kind": "update", "add": documents, "remove": []}, cleanup)

    def submit_sync(self, job_id: str, name: str, source: Path) -> Job:
        """Sync the saved tree ``name`` with the server folder ``source`` as a job (docs/documents.md): the
        worker runs ``sync_tree``, which goes through ``update_tree``; then the same swap as an update."""
        return self._submit_change(job_id, name, {"kind": "sync", "source": str(source)}, [])

    def _submit_change(self, job_id: str, name: str, task: dict[str, Any], cleanup: list[Path]) -> Job:
        with self._lock:
            if any(j.tree == name and j.status in ("queued", "running") and not j.updating
                   for j in self._jobs.values()):
                raise NameTaken(f"the tree {name!r} is being built")
            job = Job(job_id, name, cleanup=list(cleanup), updating=True)
            self._jobs[job_id] = job
        self._pool.submit(self._run_update, job, task)
        return job

    def _run_update(self, job: Job, task: dict[str, Any]) -> None:
        try:
            task = {**task, "folder": str(self.registry.folder_of(job.tree))}
            report = run_in_worker(task, self.limits, job.enter, job.check_cancel)
            if report["changed"]:
                self.registry.load_tree(job.tree)  # the swap: queries move to the new tree at once
            job.counts = report["counts"]
            job.end("done", f"updated {job.tree}")
        except Cancelled as exc:  # the saved tree is the old one
            job.end("cancelled", str(exc))
        except Exception as exc:  # a failed update is a job state; the saved tree is the old one
            logger.warning("update job %s failed: %s", job.id, type(exc).__name__, exc_info=logger.isEnabledFor(10))
            job.end("failed", f"update failed during {job.stage or 'the start'}", safe_message(exc))
        finally:
            for path in job.cleanup:
                shutil.rmtree(path, ignore_errors=True)

    def remove_documents(self, name: str, document_ids: list[str]) -> dict[str, int]:
        """Remove documents from the saved tree ``name`` now (no embedding: a request, not a job), then swap
        the new tree in; an unknown id is a ConfigError and nothing changes."""
        report = update_tree(self.registry.folder_of(name), remove=document_ids)
        self.registry.load_tree(name)
        return report.counts()

    def cancel(self, job_id: str) -> Job | None:
        """Ask a queued or running job to stop: it stops at its next progress report and leaves nothing behind."""
        job = self._jobs.get(job_id)
        if job is not None and job.status in ("queued", "running"):
            job.cancel_requested = True
        return job

    def shutdown(self) -> None:
        """Stop accepting work and wait for running builds (the app's shutdown)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
