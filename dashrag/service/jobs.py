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
from dashrag.core.persistence import MANIFEST_NAME, cleanup_warnings
from dashrag.core.progress import seconds_left
from dashrag.core.retriever import Retriever
from dashrag.documents.model import SourceDocument
from dashrag.indexes.engine import EngineIndex
from dashrag.service.build_process import WorkerLimits, run_in_this_process, run_in_worker
from dashrag.service.collections import CollectionRegistry
from dashrag.service.pipeline import safe_message

logger = logging.getLogger(__name__)


class NameTaken(Exception):
    pass


class TooManyBuilds(Exception):
    """More jobs queued or running than ``max_pending_builds``, or more uploaded bytes waiting than
    ``max_queued_upload_bytes``: a client cannot queue unbounded work (answered 429)."""


#: Where each stage of ``build_tree`` lies on the job's 0..1 bar (fitting, which embeds, is the long one).
STAGE_SPANS: dict[str, tuple[float, float]] = {
    "reading the corpus": (0.0, 0.02), "chunking": (0.02, 0.08), "storing": (0.08, 0.1), "fitting": (0.1, 0.85),
    "loading the embedding model": (0.1, 0.1), "embedding chunks": (0.1, 0.85),  # a dense node's fit
    "saving": (0.85, 0.95), "exporting the query encoder": (0.85, 0.85), "publishing": (0.95, 0.99),
    "loading": (0.0, 0.1), "updating": (0.1, 0.85),  # ``update_tree``'s stages (a document update job)
    "hashing the folder": (0.0, 0.02), "reading files": (0.02, 0.1),  # ``sync_tree``'s own, before the update
    # a learn job's (build_worker.LEARN_STAGES): training takes most of the time budget
    "learning: mining hard negatives": (0.02, 0.1), "learning: embedding with the base model": (0.1, 0.2),
    "learning: training": (0.2, 0.7), "learning: embedding with the learned model": (0.7, 0.8),
    "learning: tuning the tree": (0.8, 0.97),
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
    files: dict[str, Any] | None = None  # a done build of a folder: each file read, skipped or failed
    warnings: list[str] = field(default_factory=list)  # a done job's: published, but something was left behind
    updating: bool = False  # a document update of a saved tree, not a build
    learning: bool = False  # learning from a saved tree's documents (submit_learn): the tree itself is untouched
    stage: str | None = None
    stages: list[str] = field(default_factory=list)  # every stage entered, in order: a client polling slower
    # than a stage lasts still learns that it ran
    done: int = 0
    total: int | None = None
    started: float = field(default_factory=time.monotonic)
    stage_started: float = field(default_factory=time.monotonic)
    reported: float = field(default_factory=time.monotonic)  # when the stage's counter last moved
    finished: float | None = None
    cancel_requested: bool = False
    upload_bytes: int = 0  # what its uploaded corpus holds on disk until it ends (the queued-upload budget)
    report: dict[str, Any] | None = None  # a done learn job's: which tree it chose and why (documents_job.summary)

    def enter(self, stage: str, done: int = 0, total: int | None = None) -> None:
        self.check_cancel()
        now, new_stage = time.monotonic(), stage != self.stage
        if new_stage:
            self.stage, self.stage_started = stage, now
            self.stages.append(stage)
        if new_stage or done != self.done:
            self.reported = now
        self.done, self.total = done, total
        self.status = "running"
        start, end = STAGE_SPANS.get(stage, (self.progress, self.progress))
        share = done / total if total else 0.0
        self.progress = max(self.progress, start + (end - start) * min(share, 1.0))
        self.message = f"{stage} ({done}/{total})" if total else stage

    def stage_eta_s(self) -> float | None:
        """The stage's remaining seconds at its pace up to its last count, less the time since that count: it
        counts down between reports instead of climbing while a batch runs (issue 39: 7 s grew to 74 s because
        the time since the last count was taken as pace); None before its counter moved or when uncounted."""
        if self.status != "running" or not self.total or self.done >= self.total:
            return None
        left = seconds_left(self.reported - self.stage_started, self.done, self.total)
        return None if left is None else round(max(left - (time.monotonic() - self.reported), 0.0), 1)

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
                "stage": self.stage, "stages": self.stages, "done": self.done, "total": self.total,
                "elapsed_s": round(elapsed, 3),
                "stage_eta_s": self.stage_eta_s(), "counts": self.counts, "files": self.files,
                "warnings": self.warnings, "report": self.report}


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


def bytes_under(paths: list[Path]) -> int:
    """The bytes of the files in ``paths`` (folders walked): what an upload holds on disk while its job waits."""
    files = [f for p in paths for f in ([p] if p.is_file() else p.rglob("*"))]
    return sum(f.stat().st_size for f in files if f.is_file())


def process_bound(tree: Retriever) -> bool:
    """Whether the served tree holds files no other process may open while it is served (an embedded Qdrant
    folder): a worker process could not load it, so its update runs in the service's process."""
    return any(isinstance(node, EngineIndex) and node.process_bound for _, node in tree.iter_nodes())


NO_LIMITS = WorkerLimits()


class BuildJobs:
    """Every job of the service (builds, document additions, removals) passes one gate, :meth:`_admit`: at most
    ``max_pending`` at once, and at most ``max_upload_bytes`` of uploaded corpora waiting on disk."""

    def __init__(self, registry: CollectionRegistry, workers: int, cache_dir: Path | None, max_pending: int = 4,
                 limits: WorkerLimits = NO_LIMITS, max_upload_bytes: int = 400 << 20):
        self.registry = registry
        self.max_pending = max_pending
        self.max_upload_bytes = max_upload_bytes
        self.limits = limits
        self.cache_dir = cache_dir
        self._jobs: dict[str, Job] = {}
        self._inline = 0  # removals running in a request thread: they count as jobs while they run
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dashrag-build")
        if registry.trees_dir is not None and registry.trees_dir.is_dir():
            remove_leftovers(registry.trees_dir)

    def new_job_id(self) -> str:
        return uuid.uuid4().hex

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def _pending(self) -> list[Job]:
        return [j for j in self._jobs.values() if j.status in ("queued", "running")]

    def check_room(self, upload_bytes: int = 0) -> None:
        """TooManyBuilds unless one more job with ``upload_bytes`` of upload would be taken now: the routes ask
        before they read a body (its ``Content-Length``), so a refused upload is never written."""
        with self._lock:
            self._check_room(upload_bytes)

    def _check_room(self, upload_bytes: int) -> None:
        pending = self._pending()
        if len(pending) + self._inline >= self.max_pending:
            raise TooManyBuilds(f"{len(pending) + self._inline} jobs (builds and document updates) are queued or "
                                f"running, the most this service takes (max_pending_builds = {self.max_pending}); "
                                "try again when one has finished")
        queued = sum(j.upload_bytes for j in pending)
        if queued and queued + upload_bytes > self.max_upload_bytes:  # one upload alone is bounded by its 413
            raise TooManyBuilds(f"queued uploads hold {queued} bytes and this one {upload_bytes} more, over "
                                f"max_queued_upload_bytes = {self.max_upload_bytes}; try again when a job has finished")

    def _admit(self, job: Job) -> Job:
        """The one gate of every job kind (call under the lock): room for it, then it is pending."""
        job.upload_bytes = bytes_under(job.cleanup)
        self._check_room(job.upload_bytes)
        self._jobs[job.id] = job
        return job

    def submit(self, job_id: str, name: str, root: Retriever, corpus: Path, chunker: dict | None, overwrite: bool,
               cleanup: list[Path] = (), source_folder: str | None = None) -> Job:  # type: ignore[assignment]
        """A build job; ``source_folder``: the corpus folder relative to the data root, recorded in the manifest
        for later syncs (service/source_folders.py; None: uploaded files, a JSONL corpus)."""
        with self._lock:
            pending = self._pending()
            busy = any(j.tree == name and not j.learning for j in pending)  # learning reads, never writes, the tree
            exists = (self.registry.folder_of(name) / MANIFEST_NAME).is_file()
            if busy or (exists and not overwrite):
                raise NameTaken(f"a tree named {name!r} {'is being built' if busy else 'exists'}"
                                + ("" if busy else "; send overwrite: true to replace it"))
            job = self._admit(Job(job_id, name, cleanup=list(cleanup)))
        self._pool.submit(self._run, job, root, corpus, chunker, overwrite, source_folder)
        return job

    def _run(self, job: Job, root: Retriever, corpus_path: Path, chunker: dict | None, overwrite: bool,
             source_folder: str | None) -> None:
        target = self.registry.folder_of(job.tree)
        work, staging = target.parent / f".work-{job.id}", target.parent / f".building-{job.id}"
        # a saved tree is overwritten in place: build_tree switches its manifest last, so queries are answered
        # by the old tree until then and never meet a missing folder; a new tree is built aside and renamed in
        in_place = overwrite and (target / MANIFEST_NAME).is_file()
        task = {"kind": "build", "config": root.to_config(), "corpus": str(corpus_path),
                "out": str(target if in_place else staging), "name": job.tree, "chunker": chunker,
                "cache_dir": str(self.cache_dir or work), "overwrite": in_place, "source_folder": source_folder}
        try:
            result = run_in_worker(task, self.limits, job.enter, job.check_cancel)
            job.files = result.get("files")
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
            if any(j.tree == name and j.status in ("queued", "running") and not j.updating and not j.learning
                   for j in self._jobs.values()):
                raise NameTaken(f"the tree {name!r} is being built")
            job = self._admit(Job(job_id, name, cleanup=list(cleanup), updating=True))
        self._pool.submit(self._run_update, job, task)
        return job

    def _run_update(self, job: Job, task: dict[str, Any]) -> None:
        try:
            task = {**task, "folder": str(self.registry.folder_of(job.tree)),
                    "store_url": self.registry.store_of(job.tree)}
            served = self.registry.tree(job.tree)
            if served is not None and process_bound(served.retriever):  # its folder is this process's to change
                report = run_in_this_process(task, self.limits, job.enter)
            else:
                report = run_in_worker(task, self.limits, job.enter, job.check_cancel)
            if report["changed"]:
                self.registry.load_tree(job.tree)  # the swap: queries move to the new tree at once
            job.counts, job.warnings = report["counts"], report["warnings"]
            job.end("done", f"updated {job.tree}" + (f" ({len(job.warnings)} warning(s))" if job.warnings else ""))
        except Cancelled as exc:  # the saved tree is the old one
            job.end("cancelled", str(exc))
        except Exception as exc:  # a failed update is a job state; the saved tree is the old one
            logger.warning("update job %s failed: %s", job.id, type(exc).__name__, exc_info=logger.isEnabledFor(10))
            job.end("failed", f"update failed during {job.stage or 'the start'}", safe_message(exc))
        finally:
            for path in job.cleanup:
                shutil.rmtree(path, ignore_errors=True)

    def submit_learn(self, job_id: str, name: str, task: dict[str, Any]) -> Job:
        """Learn from the saved tree ``name``'s documents (or ``task["source"]``, a folder under the data root) as a
        job (docs/finetuning.md): ``finetune pipeline --corpus`` in a worker, its model folder, preset and report
        written to the registry's ``learned_folder_of(name)``. One learn job per tree at a time (they would write
        the same folder)."""
        with self._lock:
            if any(j.tree == name and j.status in ("queued", "running") and j.learning for j in self._jobs.values()):
                raise NameTaken(f"the tree {name!r} is already learning from its documents")
            job = self._admit(Job(job_id, name, learning=True))
        self._pool.submit(self._run_learn, job, task)
        return job

    def _run_learn(self, job: Job, task: dict[str, Any]) -> None:
        work = self.registry.folder_of(job.tree).parent / f".work-{job.id}"
        try:
            task = {**task, "kind": "learn", "folder": str(self.registry.folder_of(job.tree)),
                    "store_url": self.registry.store_of(job.tree), "work": str(work),
                    "out": str(self.registry.learned_folder_of(job.tree))}
            job.report = run_in_worker(task, self.limits, job.enter, job.check_cancel)
            job.end("done", f"learned from {job.tree}'s documents: the {job.report['shipped']} tree chosen")
        except Cancelled as exc:
            job.end("cancelled", str(exc))
        except Exception as exc:  # a failed run is a job state; the tree is untouched
            logger.warning("learn job %s failed: %s", job.id, type(exc).__name__, exc_info=logger.isEnabledFor(10))
            job.end("failed", f"learning failed during {job.stage or 'the start'}", safe_message(exc))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def remove_documents(self, name: str, document_ids: list[str], purge: bool = False) -> dict[str, int]:
        """Remove documents from the saved tree ``name`` now (no embedding: a request, not a job), then swap
        the new tree in; an unknown id is a ConfigError and nothing changes. It counts as a job while it runs.
        ``purge``: as ``update_tree``'s (the removed text off the folder's files now)."""
        with self._lock:
            self._check_room(0)
            self._inline += 1
        try:
            with cleanup_warnings() as warned:
                report = update_tree(self.registry.folder_of(name), remove=document_ids,
                                     store_url=self.registry.store_of(name), purge=purge)
            for warning in warned:  # published all the same: the removal succeeded
                logger.warning("removal from %s: %s", name, warning)
            self.registry.load_tree(name)
            return report.counts()
        finally:
            with self._lock:
                self._inline -= 1

    def cancel(self, job_id: str) -> Job | None:
        """Ask a queued or running job to stop: it stops at its next progress report and leaves nothing behind."""
        job = self._jobs.get(job_id)
        if job is not None and job.status in ("queued", "running"):
            job.cancel_requested = True
        return job

    def shutdown(self) -> None:
        """Stop accepting work and wait for running builds (the app's shutdown)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
