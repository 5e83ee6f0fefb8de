"""Trees: list, validate, build (a job), query, reload, delete; and the build jobs' status."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Body, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from dashrag.core.component import construct
from dashrag.core.config_json import strict_loads
from dashrag.core.restriction import Restriction
from dashrag.core.retriever import Retriever
from dashrag.documents.converters import BY_SUFFIX
from dashrag.documents.corpus import SIDECAR_NAME
from dashrag.errors import ConfigError, DashragError, FilterError, PersistenceError
from dashrag.service.collections import NAME_PATTERN, TreeCollection
from dashrag.service.jobs import NameTaken, TooManyBuilds
from dashrag.service.json_body import StrictJSONRoute, strict_body
from dashrag.service.models import (
    BuildRequest,
    ConfigProblem,
    JobAccepted,
    JobStatus,
    QueryChunk,
    TraceNode,
    TreeConfig,
    TreeInfo,
    TreeQuery,
    TreeQueryResponse,
    Validation,
)
from dashrag.service.pipeline import StepFailure, safe_message
from dashrag.service.routes import errors, invalid
from dashrag.service.routes.served import corpus_under_root, served_tree
from dashrag.service.source_folders import offered_source, recorded_source
from dashrag.service.state import Service, service_of
from dashrag.service.trust import validate_client_config

router = APIRouter(route_class=StrictJSONRoute)

UPLOAD_SUFFIXES = (".jsonl", ".jsonl.gz", *BY_SUFFIX)  # a corpus.jsonl, or the files a folder corpus reads
MAX_UPLOAD_NAME = 200  # characters; a file system takes 255 bytes, and a name of 300 was a 500
MULTIPART_SCHEMA = {
    "type": "object", "required": ["name", "config", "corpus"],
    "properties": {
        "name": {"type": "string", "pattern": NAME_PATTERN},
        "config": {"type": "string", "description": "The tree config as JSON text."},
        "chunker": {"type": "string", "description": "A chunker config as JSON text."},
        "overwrite": {"type": "boolean"},
        "corpus": {"type": "array", "items": {"type": "string", "format": "binary"},
                   "description": "One corpus.jsonl, or several .txt/.md/.pdf/.docx/.html files (and an optional "
                                  "metadata.jsonl sidecar)."},
    },
}


def _config_errors(exc: ConfigError, where: tuple[str, ...]) -> RequestValidationError:
    return RequestValidationError([{"loc": list(where), "msg": str(i), "type": "config_error", "path": i.path,
                                    "message": i.message} for i in exc.issues])


@router.get("/trees", response_model=list[TreeInfo], responses=errors(401, 503))
def list_trees(request: Request) -> list[dict[str, Any]]:
    """The saved trees served as collections."""
    service = service_of(request)
    return [tree_info(service, tree) for tree in service.registry.trees()]


def tree_info(service: Service, tree: TreeCollection) -> dict[str, Any]:
    """A served tree's :class:`TreeInfo`: its collection's own, and the folder of files it was built from as a
    client names it (relative to the data root; service/source_folders.py)."""
    return {**tree.info(),
            "source_folder": offered_source(tree.manifest.get("source_folder"), service.settings.data_root)}


@router.post("/trees/validate", response_model=Validation, responses={**errors(401, 413, 503),
             **invalid("The body is not a JSON object {component: string, params: object}.")})
def validate_tree(request: Request,
                  config: TreeConfig = Body(..., description="A tree config {component, params}.")) -> Validation:
    """Every problem of a tree config with its JSON path, as the CLI reports them, and what the service
    does not allow a client's config to reach (credentials, endpoints, paths: docs/security.md); 200 either
    way, once the body has the shape of a config."""
    try:
        validate_client_config(config.model_dump(exclude_unset=True), "retriever", service_of(request).settings)
    except ConfigError as exc:
        return Validation(valid=False, errors=[ConfigProblem(path=i.path, message=i.message) for i in exc.issues])
    return Validation(valid=True, errors=[])


# One operation per body type: a generator (openapi-python-client) given one operation with both a JSON
# and a multipart body sends the multipart one with a fixed boundary the server cannot parse. POST /trees
# still accepts the multipart body too (the web page posts its uploads there).
BUILD_RESPONSES = {**errors(401, 403, 409, 413, 429, 503), **invalid("An invalid name, config, chunker or corpus.")}


@router.post("/trees/upload", status_code=202, response_model=JobAccepted, responses=BUILD_RESPONSES,
             name="build_tree_from_upload", openapi_extra={"requestBody": {"required": True, "content": {
                 "multipart/form-data": {"schema": MULTIPART_SCHEMA}}}})
@router.post("/trees", status_code=202, response_model=JobAccepted, responses=BUILD_RESPONSES,
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/json": {"schema": BuildRequest.model_json_schema()}}}})
async def build_tree(request: Request) -> JobAccepted:
    """Build a tree from a config over a corpus (a path under the data root, or uploaded files) as a job;
    the finished tree is saved under the trees folder atomically and served at once. ``POST /trees`` takes
    the JSON body (a corpus under the data root) and also the multipart one of ``POST /trees/upload``."""
    service = service_of(request)
    if service.settings.trees_dir is None:
        raise HTTPException(503, "build: the service has no trees folder (--trees)")
    job_id = service.jobs.new_job_id()
    content_type = request.headers.get("content-type", "")
    cleanup: list[Path] = []
    source: str | None = None  # uploads leave no folder to sync with
    room_for_job(service, request)
    if content_type.startswith("multipart/form-data"):
        body, corpus = await _multipart(request, service, job_id)
        cleanup.append(corpus if corpus.is_dir() else corpus.parent)
    else:
        body = await run_in_threadpool(_json_body, await request.body())  # off the event loop (json_body.py)
        corpus = corpus_under_root(service, body.corpus_path)
        data_root = service.settings.data_root  # set: corpus_under_root refuses a path without one
        source = recorded_source(corpus, data_root) if data_root is not None else None
    try:
        # the one validation of this build, with what it reaches (docs/security.md): a model folder outside the
        # data root is refused before it is looked at
        root = construct(validate_client_config(body.config, "retriever", service.settings), body.config)
        if not isinstance(root, Retriever):
            raise ConfigError(f"{root.component_name} is not a Retriever")
        chunker = validate_client_config(body.chunker, "chunker", service.settings) if body.chunker is not None \
            else None
    except ConfigError as exc:
        _remove(cleanup)
        raise _config_errors(exc, ("body", "config")) from None
    with refused_jobs(cleanup):
        job = service.jobs.submit(job_id, body.name, root, corpus, chunker, body.overwrite, cleanup, source)
    return JobAccepted(job_id=job.id)


@contextmanager
def refused_jobs(cleanup: list[Path]) -> Iterator[None]:
    """A job the service does not take (every kind: builds, document updates, syncs): what was uploaded for it
    is removed, and the answer is a 409 for a tree being built or a 429 over the job limits."""
    try:
        yield
    except NameTaken as exc:
        _remove(cleanup)
        raise HTTPException(409, str(exc)) from None
    except TooManyBuilds as exc:
        _remove(cleanup)
        raise too_many(exc) from None


def too_many(exc: TooManyBuilds) -> HTTPException:
    return HTTPException(429, str(exc), headers={"Retry-After": "10"})


def room_for_job(service: Service, request: Request) -> None:
    """A 429 before the body is read when the service takes no more jobs, or no more upload bytes (counted by the
    body's ``Content-Length``): a refused upload is never written to disk."""
    multipart = request.headers.get("content-type", "").startswith("multipart/form-data")
    length = request.headers.get("content-length", "")
    try:
        service.jobs.check_room(int(length) if multipart and length.isdigit() else 0)
    except TooManyBuilds as exc:
        raise too_many(exc) from None


def _remove(paths: list[Path]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def _located(exc: ValidationError) -> RequestValidationError:
    # a body that is not JSON comes back as its raw bytes, which the 422's JSON cannot hold: named, not echoed
    return RequestValidationError([{**{k: v for k, v in e.items() if not isinstance(v, bytes)},
                                    "loc": ["body", *e["loc"]]} for e in exc.errors(include_url=False)])


def _json_body(raw: bytes) -> BuildRequest:
    try:
        return BuildRequest.model_validate(strict_body(raw), strict=True)
    except ValidationError as exc:
        raise _located(exc) from None


async def _multipart(request: Request, service: Service, job_id: str) -> tuple[BuildRequest, Path]:
    form = await request.form(max_files=10_000)
    try:
        fields = {key: form.get(key) for key in ("name", "config", "chunker", "overwrite") if form.get(key) is not None}
        if any(isinstance(v, UploadFile) for v in fields.values()):
            raise ValueError("name, config, chunker and overwrite are text fields, not files")
        parsed: dict[str, Any] = {k: v for k, v in fields.items() if k in ("name", "overwrite")}
        for key in ("config", "chunker"):
            if key in fields:
                parsed[key] = strict_loads(str(fields[key]), finite=True)
        files = [f for f in form.getlist("corpus") if isinstance(f, UploadFile)]
        if not files:
            raise ValueError("no corpus files (send one corpus.jsonl or .txt/.md files in the field 'corpus')")
        body = BuildRequest.model_validate({**parsed, "corpus_path": "upload"})
    except json.JSONDecodeError as exc:
        raise RequestValidationError([{"loc": ["body"], "type": "json_invalid", "msg": f"not JSON: {exc}"}]) from None
    except ValidationError as exc:
        raise _located(exc) from None
    except ValueError as exc:
        raise RequestValidationError([{"loc": ["body", "corpus"], "type": "value_error", "msg": str(exc)}]) from None
    folder = Path(service.settings.trees_dir) / f".upload-{job_id}"  # type: ignore[arg-type]
    return body, write_uploads(folder, files)


def write_uploads(folder: Path, files: list[UploadFile]) -> Path:
    """The uploaded corpus files saved into ``folder`` (a new one); the path the corpus is read from. Refused
    names are a 422 before the folder exists; a folder that cannot be written (read-only, full) a 503 naming
    the upload step, and nothing is left."""
    names = [_upload_name(f.filename) for f in files]
    corpus = uploaded_corpus_path(folder, names)
    try:
        folder.mkdir(parents=True)
        for upload, name in zip(files, names):
            with open(folder / name, "wb") as out:
                shutil.copyfileobj(upload.file, out)
    except OSError as exc:  # a read-only or full trees folder: the service's state, not the client's fault
        shutil.rmtree(folder, ignore_errors=True)
        raise StepFailure("upload", f"the upload cannot be written in the trees folder ({exc.strerror})") from None
    return corpus


def uploaded_corpus_path(folder: Path, names: list[str]) -> Path:
    """Where the corpus of uploaded files ``names`` (saved into ``folder``) is read from: the one JSONL file,
    or the folder of .txt/.md files, whose ``metadata.jsonl`` is its sidecar (as for a folder corpus on disk)."""
    jsonl = [n for n in names if n.endswith((".jsonl", ".jsonl.gz")) and n != SIDECAR_NAME]
    if (jsonl and len(names) > 1) or names == [SIDECAR_NAME]:
        raise RequestValidationError([{"loc": ["body", "corpus"], "type": "value_error",
                                       "msg": "send either one corpus.jsonl or several .txt/.md files "
                                              f"(with an optional {SIDECAR_NAME} sidecar)"}])
    return folder / jsonl[0] if jsonl else folder


def _upload_name(filename: str | None) -> str:
    name = Path(filename or "").name
    if len(name) > MAX_UPLOAD_NAME:
        raise RequestValidationError([{"loc": ["body", "corpus"], "type": "value_error",
                                       "msg": f"a corpus file name is at most {MAX_UPLOAD_NAME} characters, not "
                                              f"{len(name)}"}])
    if not name or name.startswith(".") or not name.endswith(UPLOAD_SUFFIXES) or not re.match(r"^[\w.\- ]+$", name):
        raise RequestValidationError([{"loc": ["body", "corpus"], "type": "value_error",
                                       "msg": f"{filename!r}: corpus files are .jsonl, .jsonl.gz or "
                                              f"{', '.join(BY_SUFFIX)}"}])
    return name


@router.get("/jobs/{job_id}", response_model=JobStatus, responses=errors(401, 404, 503))
def job_status(job_id: str, request: Request) -> dict[str, Any]:
    service = service_of(request)
    job = service.jobs.get(job_id)
    if job is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return _shown(service, job.to_json())


@router.post("/jobs/{job_id}/cancel", response_model=JobStatus, responses=errors(401, 404, 503))
def cancel_job(job_id: str, request: Request) -> dict[str, Any]:
    """Stop a queued or running build at its next progress report; it leaves nothing behind (an ended job
    is answered as it is)."""
    service = service_of(request)
    job = service.jobs.cancel(job_id)
    if job is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return _shown(service, job.to_json())


def _shown(service: Service, job: dict[str, Any]) -> dict[str, Any]:
    """A job as a client sees it: its error and message without the server's folders and endpoints."""
    return {**job, **{k: service.locations.hide(job[k]) for k in ("error", "message") if job[k]}}


@router.post("/trees/{name}/query", response_model=TreeQueryResponse,
             responses={**errors(401, 404, 413, 503), **invalid("An empty query or a malformed body.")})
def query_tree(name: str, body: TreeQuery, request: Request) -> Response:
    """The tree's own answer: chunks with native scores, and its trace. Serialised here, in the route's worker
    thread, as ``POST /retrieve``'s answer is (routes/retrieve.py): returned as a model it would be encoded on
    the event loop, which a thousand chunks with their texts and trace hold for tens of ms."""
    tree = served_tree(service_of(request), name)
    started = time.perf_counter()
    try:
        chunks, trace = tree.query(body.query, body.top_k, body.filters)
    except FilterError:
        raise
    except Exception as exc:
        raise StepFailure("query", f"tree {name!r}: {safe_message(exc)}") from exc
    answer = TreeQueryResponse(chunks=[QueryChunk.model_validate(c.to_json(include_metadata=True)) for c in chunks],
                               trace=TraceNode.model_validate(trace) if body.trace else None,
                               elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
                               warnings=tree.filter_warnings(None if body.filters is None else
                                                             Restriction.where(body.filters)))
    return Response(answer.model_dump_json(), media_type="application/json")


@router.post("/trees/{name}/reload", response_model=TreeInfo, responses=errors(401, 403, 404, 503))
def reload_tree(name: str, request: Request) -> dict[str, Any]:
    """Load the tree's folder again (after it was replaced on disk)."""
    service = service_of(request)
    if service.settings.trees_dir is None or not re.match(NAME_PATTERN, name) \
            or not (service.registry.folder_of(name) / "dashrag.json").is_file():
        raise HTTPException(404, f"no saved tree named {name!r}")
    try:
        return tree_info(service, service.registry.load_tree(name))
    except DashragError as exc:
        raise StepFailure("load", str(exc)) from None


@router.delete("/trees/{name}", status_code=204, response_class=Response, responses=errors(401, 403, 404, 503))
def delete_tree(name: str, request: Request) -> Response:
    service = service_of(request)
    try:
        deleted = service.settings.trees_dir is not None and re.match(NAME_PATTERN, name) is not None \
            and service.registry.delete_tree(name)
    except PersistenceError as exc:  # the folder stays, and so does the tree
        raise StepFailure("delete", str(exc)) from None
    if not deleted:
        raise HTTPException(404, f"no tree named {name!r}")
    return Response(status_code=204)
