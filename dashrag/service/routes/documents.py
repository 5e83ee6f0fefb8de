"""A saved tree's documents: add or replace them (a job, like a build), remove one (docs/updating.md).

``POST /trees/{name}/documents`` takes JSON documents or uploaded files (one corpus.jsonl, or
.txt/.md files) and answers 202 with a job; ``GET /jobs/{id}`` reports it, with the counts of
documents added, replaced, skipped and removed when done. ``DELETE /trees/{name}/documents/{id}``
removes one document at once (removing embeds nothing). Either way the folder changes atomically
and the registry swaps the new tree in: queries are answered by the old tree until then.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.datastructures import UploadFile

from dashrag.documents.model import SourceDocument, json_metadata
from dashrag.errors import ConfigError, DashragError
from dashrag.service.jobs import TooManyBuilds
from dashrag.service.json_body import StrictJSONRoute, strict_body
from dashrag.service.models import (
    AddDocumentsRequest,
    DocumentChanges,
    DocumentsPage,
    JobAccepted,
    SyncRequest,
    TreeFields,
)
from dashrag.service.pipeline import StepFailure
from dashrag.service.routes import errors, invalid
from dashrag.service.routes.served import corpus_under_root, saved_tree, served_tree
from dashrag.service.routes.trees import refused_jobs, room_for_job, too_many, write_uploads
from dashrag.service.source_folders import offered_source
from dashrag.service.state import service_of

router = APIRouter(route_class=StrictJSONRoute)


class DocumentIdConvertor(PathConvertor):
    """A document id in a URL: any text, line breaks included. The rule for ids is one on every face: any
    non-blank text a corpus can hold is accepted, shown escaped, and removable (docs/updating.md); Starlette's
    ``path`` stops at a newline, which made an id with one addable but not deletable."""

    regex = r"[\s\S]*"


register_url_convertor("document_id", DocumentIdConvertor())

MULTIPART_SCHEMA = {
    "type": "object", "required": ["corpus"],
    "properties": {"corpus": {"type": "array", "items": {"type": "string", "format": "binary"},
                              "description": "One corpus.jsonl (metadata per line), or several files "
                                             "(.txt/.md/.pdf/.docx/.html; ids: file names) with an optional "
                                             "metadata.jsonl sidecar: "
                                             '{"file": NAME, "metadata": {...}} per line.'}},
}


def _json_documents(raw: bytes) -> list[SourceDocument]:
    try:
        body = AddDocumentsRequest.model_validate(strict_body(raw))  # a key twice is refused, not last-key-wins
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ["body", *e["loc"]]} for e in exc.errors(include_url=False)]) \
            from None
    documents = []
    for i, d in enumerate(body.documents):
        try:
            metadata = json_metadata(d.metadata, "metadata")
        except ValueError as exc:
            raise RequestValidationError([{"loc": ["body", "documents", i, "metadata"], "type": "value_error",
                                           "msg": str(exc)}]) from None
        documents.append(SourceDocument(id=d.id, text=d.text, title=d.title, metadata=metadata,
                                        source=f"request document {i + 1}"))
    return documents


async def _uploaded_corpus(request: Request, folder: Path) -> Path:
    form = await request.form(max_files=10_000)
    files = [f for f in form.getlist("corpus") if isinstance(f, UploadFile)]
    if not files:
        raise RequestValidationError([{"loc": ["body", "corpus"], "type": "value_error",
                                       "msg": "no corpus files (send one corpus.jsonl or .txt/.md files in 'corpus')"}])
    return write_uploads(folder, files)


def _inlined(schema: Any, definitions: dict[str, Any] | None = None) -> Any:
    """A pydantic schema with its ``$defs`` written in place: an OpenAPI body cannot point into its own
    ``$defs`` (generators drop such an operation)."""
    if definitions is None and isinstance(schema, dict):
        definitions = schema.get("$defs", {})
        schema = {k: v for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, dict):
        ref = schema.get("$ref", "")
        if ref.startswith("#/$defs/"):
            return _inlined(definitions[ref.rpartition("/")[2]], definitions)  # type: ignore[index]
        return {k: _inlined(v, definitions) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_inlined(v, definitions) for v in schema]
    return schema


#: The largest page offset: SQLite's integers are 64-bit (an offset of 10**30 was a 500); no tree holds more.
MAX_OFFSET = 2**53
PURGE_DESCRIPTION = ("true: the removed document's text leaves the tree folder's files now (its store written whole, "
                     "~2 s a GB); by default it is hidden and leaves at the store's next compaction "
                     "(docs/updating.md, \"Removed text\").")

ADD_RESPONSES = {**errors(401, 404, 409, 413, 429, 503),
                 **invalid("A document without an id or text, or a malformed body or upload.")}


# One operation per body type, as for builds (routes/trees.py): generators cannot send one operation's two
# bodies. POST /trees/{name}/documents takes the multipart body of .../documents/upload too.
@router.post("/trees/{name}/documents/upload", status_code=202, response_model=JobAccepted, responses=ADD_RESPONSES,
             name="add_documents_from_upload", openapi_extra={"requestBody": {"required": True, "content": {
                 "multipart/form-data": {"schema": MULTIPART_SCHEMA}}}})
@router.post("/trees/{name}/documents", status_code=202, response_model=JobAccepted, responses=ADD_RESPONSES,
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/json": {"schema": _inlined(AddDocumentsRequest.model_json_schema())}}}})
async def add_documents(name: str, request: Request) -> JobAccepted:
    """Add documents to a saved tree as a job: new ids are added, changed ones replaced, identical ones skipped.
    ``POST /trees/{name}/documents`` takes the JSON body and also the multipart one of ``.../documents/upload``."""
    service = service_of(request)
    folder = saved_tree(service, name, "documents")
    room_for_job(service, request)
    job_id = service.jobs.new_job_id()
    cleanup: list[Path] = []
    add: Path | list[SourceDocument]
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        upload = folder.parent / f".upload-{job_id}"
        cleanup.append(upload)
        try:
            add = await _uploaded_corpus(request, upload)
        except BaseException:
            shutil.rmtree(upload, ignore_errors=True)
            raise
    else:
        add = await run_in_threadpool(_json_documents, await request.body())  # off the event loop (json_body.py)
    with refused_jobs(cleanup):
        job = service.jobs.submit_update(job_id, name, add, cleanup)
    return JobAccepted(job_id=job.id)


SYNC_RESPONSES = {**errors(401, 404, 409, 429, 503), **invalid(
    "A folder not under the data root, or none given for a tree that records none.")}


@router.post("/trees/{name}/sync", status_code=202, response_model=JobAccepted, responses=SYNC_RESPONSES)
def sync_tree(name: str, body: SyncRequest, request: Request) -> JobAccepted:
    """Bring a saved tree in line with a folder under the data root, as a job (what ``dashrag sync`` does):
    new files added, changed ones (by content hash) replaced, gone ones removed; ``GET /jobs/{id}`` gives the
    counts when done. Files that cannot be read are left out (the server's log names them)."""
    service = service_of(request)
    saved_tree(service, name, "documents")
    folder = body.corpus_path
    if folder is None:
        folder = offered_source(served_tree(service, name).manifest.get("source_folder"), service.settings.data_root)
        if folder is None:
            raise RequestValidationError([{"loc": ["body", "corpus_path"], "type": "missing",
                                           "msg": f"the tree {name!r} records no folder under the data root it was "
                                                  "built from: send corpus_path"}])
    source = corpus_under_root(service, folder)
    if not source.is_dir():
        raise RequestValidationError([{"loc": ["body", "corpus_path"], "type": "value_error",
                                       "msg": "a sync reads a folder of files, not one file"}])
    with refused_jobs([]):
        job = service.jobs.submit_sync(service.jobs.new_job_id(), name, source)
    return JobAccepted(job_id=job.id)


@router.get("/trees/{name}/documents", response_model=DocumentsPage,
            responses={**errors(401, 404, 503), **invalid("An offset or limit out of its range.")})
def list_documents(name: str, request: Request,
                   offset: int = Query(0, ge=0, le=MAX_OFFSET, description="Documents to skip."),
                   limit: int = Query(50, ge=1, le=500, description="Documents in the page.")) -> dict[str, Any]:
    """The documents a saved tree holds, in corpus order, a page at a time: id, title, metadata, chunk count."""
    service = service_of(request)
    tree = served_tree(service, name)
    try:
        return tree.documents(offset, limit)
    except DashragError as exc:
        raise StepFailure("load", f"tree {name!r}: {exc}") from None


@router.get("/trees/{name}/fields", response_model=TreeFields, responses=errors(401, 404))
def list_fields(name: str, request: Request) -> dict[str, Any]:
    """The metadata fields a filter can use on this tree: each with its types, how many documents have it and its
    most frequent values (what the page's filter box offers; ``dashrag fields`` on the CLI)."""
    return {"fields": served_tree(service_of(request), name).fields()}


@router.delete("/trees/{name}/documents/{document_id:document_id}", response_model=DocumentChanges,
               responses=errors(401, 404, 429, 503))
def remove_document(name: str, document_id: str, request: Request,
                    purge: bool = Query(False, description=PURGE_DESCRIPTION)) -> dict[str, int]:
    """Remove one document from a saved tree now; the counts of what changed (404: no such tree or document)."""
    service = service_of(request)
    saved_tree(service, name, "documents")
    try:
        return service.jobs.remove_documents(name, [document_id], purge)
    except TooManyBuilds as exc:
        raise too_many(exc) from None
    except ConfigError as exc:
        raise HTTPException(404, str(exc)) from None
    except DashragError as exc:
        raise StepFailure("update", str(exc)) from None
    except OSError as exc:  # an immutable, read-only or full folder: the service's state, nothing changed
        raise StepFailure("update", f"tree {name!r}: its folder cannot be written ({exc.strerror})") from None
