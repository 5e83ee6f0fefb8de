"""Learn from a saved tree's documents without judgements: ``POST /trees/{name}/learn`` (docs/finetuning.md).

The job runs ``dashrag finetune pipeline --corpus`` (pseudo-queries from the documents' own titles, headings and
sentences; the time budget; the keep-the-base rule) in a worker process like a build, on the tree's stored
documents or a folder under the data root; ``GET /jobs/{id}`` shows its progress and, when done, its report: which
tree it chose (the learned one only when it beat the base on held-out pseudo-queries) and why. The tree itself is
never changed; the model folder and the preset are kept beside the trees (``.learned-<name>``).
``POST /trees/{name}/learned/build`` builds a new tree from that preset through the build path of ``POST /trees``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.exceptions import RequestValidationError

from dashrag.core.factory import build_as
from dashrag.core.persistence import atomic_directory
from dashrag.core.retriever import Retriever
from dashrag.errors import ConfigError
from dashrag.service.json_body import StrictJSONRoute
from dashrag.service.models import JobAccepted, LearnedBuildRequest, LearnRequest
from dashrag.service.routes import errors, invalid
from dashrag.service.routes.served import corpus_under_root, saved_tree
from dashrag.service.routes.trees import refused_jobs
from dashrag.service.state import Service, service_of

router = APIRouter(route_class=StrictJSONRoute)

JOB_TIME_SHARE = 0.8  # of the job time limit a budget may take: the rest for what the pipeline's estimates miss


def _budget_within_limit(service: Service, minutes: float) -> None:
    limit_s = service.settings.build_timeout_sec
    if limit_s is not None and minutes * 60 > JOB_TIME_SHARE * limit_s:
        raise RequestValidationError([{"loc": ["body", "time_budget_minutes"], "type": "value_error",
                                       "msg": f"{minutes:g} min is over {JOB_TIME_SHARE:.0%} of this service's job "
                                              f"time limit ({limit_s / 60:g} min, build_timeout_sec): give at most "
                                              f"{JOB_TIME_SHARE * limit_s / 60:g} min"}])


@router.post("/trees/{name}/learn", status_code=202, response_model=JobAccepted,
             responses={**errors(401, 404, 409, 429, 503),
                        **invalid("A budget over the job time limit, or a corpus_path not under the data root.")})
def learn_from_documents(name: str, body: LearnRequest, request: Request) -> JobAccepted:
    """Learn an embedding from the tree's documents (or a folder under the data root) as a job, within a time budget;
    ``GET /jobs/{id}`` gives its progress, then its report: the tree chosen and why. The tree is not changed."""
    service = service_of(request)
    saved_tree(service, name, "learn")  # 404 unless the tree is served
    _budget_within_limit(service, body.time_budget_minutes)
    source = None if body.corpus_path is None else str(corpus_under_root(service, body.corpus_path))
    task = {"source": source, "time_budget_s": body.time_budget_minutes * 60, "max_steps": body.max_steps,
            "max_seq_length": body.max_seq_length, "batch_size": body.batch_size}
    with refused_jobs([]):
        job = service.jobs.submit_learn(service.jobs.new_job_id(), name, task)
    return JobAccepted(job_id=job.id)


@router.post("/trees/{name}/learned/build", status_code=202, response_model=JobAccepted,
             responses={**errors(401, 404, 409, 429, 503), **invalid("A name that is no folder name.")})
def build_learned_tree(name: str, body: LearnedBuildRequest, request: Request) -> JobAccepted:
    """Build the tree a learn job on ``name`` chose (its preset) over ``name``'s stored documents, each document whole
    (what the preset was tuned and scored on), as a new tree ``body.name``: the build job of ``POST /trees``. The
    learned model is copied beside the new tree (``.models-<new name>``), so a later learn job on ``name`` or its
    deletion never changes the new tree's model; it is deleted with the new tree."""
    from dashrag.finetuning.documents_job import DOCUMENTS_FILE, PRESET_FILE, stored_documents_file
    from dashrag.finetuning.negatives import WHOLE_DOCUMENTS  # the fine-tuning modules load in ~1 s: only here

    service = service_of(request)
    folder = saved_tree(service, name, "build")  # 404 unless the tree is served
    registry = service.registry
    learned = registry.learned_folder_of(name)
    if not (learned / PRESET_FILE).is_file():
        raise HTTPException(404, f"tree {name!r} has learned nothing yet: run a learn job on it first")
    if registry.get(body.name) is not None or registry.folder_of(body.name).exists():
        raise HTTPException(409, f"a tree named {body.name!r} exists: choose another name")
    models = registry.models_folder_of(body.name)
    config = _with_copied_models(json.loads((learned / PRESET_FILE).read_text(encoding="utf-8")), learned, models)
    try:
        root = build_as(config, Retriever, "retriever")  # the server's own preset: trusted
    except ConfigError as exc:
        shutil.rmtree(models, ignore_errors=True)
        raise HTTPException(409, f"the learned preset of {name!r} no longer builds: {exc}") from None
    job_id = service.jobs.new_job_id()
    upload = folder.parent / f".upload-{job_id}"  # in the trees folder, removed when the job ends, as an upload
    corpus = stored_documents_file(folder, registry.store_of(name), upload / DOCUMENTS_FILE)
    try:
        with refused_jobs([upload]):
            job = service.jobs.submit(job_id, body.name, root, corpus, WHOLE_DOCUMENTS, False, [upload])
    except HTTPException:
        shutil.rmtree(models, ignore_errors=True)
        raise
    return JobAccepted(job_id=job.id)


def _with_copied_models(config: dict[str, Any], learned: Path, models: Path) -> dict[str, Any]:
    """``config`` with every model path inside ``learned`` pointing at a copy under ``models`` (written whole or not
    at all); a preset that names no learned model (the base was chosen) copies nothing."""
    from dashrag.finetuning.documents_job import MODEL_FOLDER

    learned_model = (learned / MODEL_FOLDER).resolve()
    names_it = False

    def repoint(node: Any) -> Any:
        nonlocal names_it
        if isinstance(node, dict):
            if isinstance(node.get("model"), str) and Path(node["model"]).resolve() == learned_model:
                names_it = True
                return {**node, "model": str((models / MODEL_FOLDER).resolve())}
            return {key: repoint(value) for key, value in node.items()}
        if isinstance(node, list):
            return [repoint(value) for value in node]
        return node

    repointed = repoint(config)
    if names_it:
        with atomic_directory(models) as staging:
            shutil.copytree(learned_model, staging / MODEL_FOLDER)
    return repointed
