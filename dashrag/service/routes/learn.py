"""Learn from a saved tree's documents without judgements: ``POST /trees/{name}/learn`` (docs/finetuning.md).

The job runs ``dashrag finetune pipeline --corpus`` (pseudo-queries from the documents' own titles, headings and
sentences; the time budget; the keep-the-base rule) in a worker process like a build, on the tree's stored
documents or a folder under the data root; ``GET /jobs/{id}`` shows its progress and, when done, its report: which
tree it chose (the learned one only when it beat the base on held-out pseudo-queries) and why. The tree itself is
never changed; the model folder and the preset are kept beside the trees (``.learned-<name>``).
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.exceptions import RequestValidationError

from dashrag.service.json_body import StrictJSONRoute
from dashrag.service.models import JobAccepted, LearnRequest
from dashrag.service.routes import errors, invalid
from dashrag.service.routes.trees import _corpus_under_root, _tree, refused_jobs
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
    if service.settings.trees_dir is None:
        raise HTTPException(503, "learn: the service has no trees folder (--trees)")
    _tree(service, name)  # 404 unless the tree is served
    _budget_within_limit(service, body.time_budget_minutes)
    source = None if body.corpus_path is None else str(_corpus_under_root(service, body.corpus_path))
    task = {"source": source, "time_budget_s": body.time_budget_minutes * 60, "max_steps": body.max_steps,
            "max_seq_length": body.max_seq_length, "batch_size": body.batch_size}
    with refused_jobs([]):
        job = service.jobs.submit_learn(service.jobs.new_job_id(), name, task)
    return JobAccepted(job_id=job.id)
