"""The request and response bodies of the HTTP API: one pydantic model each, so the OpenAPI is exact."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel

from dashrag.service.collections import NAME_PATTERN

MAX_LIMIT = 50
NOT_BLANK = r"\S"  # in the schema: a query holds at least one non-space character (checked by not_blank)


def not_blank(query: str) -> str:
    if not query.strip():
        raise ValueError("the query is empty or only whitespace")
    return query


Query = Annotated[str, AfterValidator(not_blank)]


#: Parsed where the query runs (the route's worker thread: the FilterError handler makes a bad one a 422 naming
#: the path in the filter), not here: body validation runs on the event loop, which /health shares (issue 38).
Filters = Annotated[dict[str, Any] | None, Field(
    None, description="A metadata filter (GET /schemas/filter, docs/filters.md); a bad one is a 422.")]


class ErrorBody(BaseModel):
    detail: str = Field(description="What went wrong and where (a 503 starts with the failing step).")


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt or foreign key ("top_k") is a 422 naming it
    query: Query = Field(description="The user's question; empty or whitespace-only is a 422.",
                       json_schema_extra={"pattern": NOT_BLANK})
    collection_name: str = Field(min_length=1)
    user_collection_name: str | None = None
    limit: int = Field(15, ge=1, le=MAX_LIMIT, description="Top-k asked of every collection.")
    trace: bool = Field(False, description="Add the whole trace tree to the answer.")
    filters: Filters = None


class ContextChunk(BaseModel):
    chunk_id: str
    text: str
    source_id: str | None
    collection_name: str
    retrieval_score: float | None = Field(description="Calibrated to [0, 1] per collection; null: not scored.")
    rerank_score: float | None
    metadata: dict[str, Any] = Field(default_factory=dict, description=(
        "The document's metadata and the chunk's own fields (page, section)."))


class TraceNode(BaseModel):
    """What one component did for one query; a composite's node holds its children's (docs/design.md).
    Nodes may carry more: ``selection`` (what a reranker or filter chose and why), timings."""

    model_config = ConfigDict(extra="allow")
    component: str
    params: dict[str, Any]
    query: str
    elapsed_ms: float
    output: list[dict[str, Any]] = Field(description="The chunks it returned: chunk_id, document_id, score, ...")
    children: list[TraceNode]


class TreeConfig(BaseModel):
    """A tree (or component) config: ``{component, params}``, params nested as the component's schema says."""

    model_config = ConfigDict(extra="allow")
    component: str = Field(description="A registered component's name (GET /components).")
    params: dict[str, Any] = Field(default_factory=dict)


class DisplayText(BaseModel):
    name: str
    description: str


class ComponentMeta(BaseModel):
    """One registered component as the web page's forms read it (frontend_meta/<Name>.json)."""

    model_config = ConfigDict(extra="allow")
    name: str
    component: str
    kind: str = Field(description="retriever, chunker, embedding, llm, credential, ...")
    display: dict[str, DisplayText] = Field(description="Name and description by language (en, es).")
    icon: str | None = None
    category: str | None = None
    representation: dict[str, str] | None = None
    nested_fields: dict[str, Any] = Field(default_factory=dict)
    params: dict[str, Any] = Field(description="Each parameter's UI metadata, by name.")


class Preset(BaseModel):
    name: str
    config: TreeConfig


class ComponentSchema(BaseModel):
    """A component's JSON Schema (Draft 2020-12) document, as ``dashrag schema NAME`` prints it."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    schema_: str | None = Field(None, alias="$schema")
    id_: str | None = Field(None, alias="$id")
    title: str | None = None
    type: str | None = None


class CitedPlace(BaseModel):
    """Where a kept chunk's text is in the user's files (docs/documents.md)."""

    source_id: str
    path: str | None = Field(None, description="The file, relative to the folder the tree was read from.")
    page: int | None = Field(None, description="The PDF page (1-based) the chunk's text starts on.")
    section: str | None = Field(None, description="The heading path of the chunk's section (Methods › Sampling).")


class RetrieveResponse(BaseModel):
    context_chunks: list[ContextChunk]
    citations: list[str]
    cited_places: list[CitedPlace] = Field(default_factory=list, description=(
        "Each kept chunk's file, page and section (null where it has none), each place once, in context order."))
    low_confidence: bool
    reranker: str = Field(description="The reranker used, or 'none' (then rerank_score = retrieval_score).")
    empty_reason: str | None = Field(None, description=(
        "Why context_chunks is empty (no chunk found, or which gate dropped them all, with the best score); "
        "null when a chunk is kept."))
    warnings: list[str] = Field(default_factory=list, description=(
        "What the caller should know although the request is valid: each filter field that no document has "
        "(it matches nothing), with the fields there are."))
    trace: TraceNode | None = None


class Health(BaseModel):
    service: Literal["rag_service"] = "rag_service"  # the reference's name: its deployments' probes expect it
    status: Literal["ok"] = "ok"


class TreeNode(BaseModel):
    """A component config ``{component, params}`` (validated as a whole by the registry, not here)."""

    model_config = ConfigDict(extra="allow")
    component: Any = None
    params: Any = None


class ConfigProblem(BaseModel):
    path: str
    message: str


class Validation(BaseModel):
    valid: bool
    errors: list[ConfigProblem]


class TreeInfo(BaseModel):
    name: str
    config: dict[str, Any]
    corpus_fingerprint: str
    chunks: int
    documents: int
    saved_at: str | None
    calibration: dict[str, Any]
    source_folder: str | None = Field(None, description=(
        "The folder of files under the data root the tree was built from (relative to it): what a sync without "
        "a corpus_path reads; null when none is recorded or it lies outside the data root (docs/documents.md)."))


class BuildRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=NAME_PATTERN, description="The new tree's (collection's) name: a folder name.")
    config: dict[str, Any] = Field(description="The tree's config {component, params}.")
    corpus_path: str = Field(min_length=1, description="A corpus folder or corpus.jsonl under the data root.")
    chunker: dict[str, Any] | None = Field(None, description="A chunker config (default: structure-aware 2000/200).")
    overwrite: bool = False


class SyncRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    corpus_path: str | None = Field(None, min_length=1, description=(
        "The folder of files under the data root to bring the tree in line with (docs/documents.md); omitted: "
        "the folder the tree was built from (its source_folder)."))


class LearnRequest(BaseModel):
    """Learn from a saved tree's documents without judgements (``finetune pipeline --corpus``, docs/finetuning.md)."""

    model_config = ConfigDict(extra="forbid")
    corpus_path: str | None = Field(None, min_length=1, description=(
        "A folder or corpus.jsonl under the data root to learn from; null: the tree's own stored documents."))
    time_budget_minutes: float = Field(30.0, gt=0, le=24 * 60, description=(
        "Wall time of the whole run; training gets what the measured costs of the other steps leave. At most four "
        "fifths of the service's job time limit (build_timeout_sec)."))
    max_steps: int | None = Field(None, ge=1, description="At most this many training steps.")
    max_seq_length: int = Field(256, ge=8, le=512, description="Tokens read per text while training.")
    batch_size: int = Field(32, ge=2, le=256, description="Pairs per training batch (the in-batch negatives).")


class LearnedBuildRequest(BaseModel):
    """Build a new tree from what a learn job on a tree chose (its ``.learned-<name>`` preset, docs/finetuning.md)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=NAME_PATTERN, description="The new tree's name: a folder name, not a served tree's.")


class JobAccepted(BaseModel):
    job_id: str


class FileLeftOut(BaseModel):
    file: str = Field(description="The file, relative to the corpus folder.")
    why: str = Field(description="Why it was left out (docs/documents.md, 'Bad files never stop a folder').")


class FileOutcomes(BaseModel):
    """What a build made of each file of its folder corpus (uploaded files, a folder under the data root)."""

    read: list[str] = Field(description="The ids (paths) of the documents read.")
    skipped: list[FileLeftOut] = Field(description="Files left out on purpose: an unknown type, an empty file.")
    failed: list[FileLeftOut] = Field(description="Files of a known type that could not be read.")


class JobStatus(BaseModel):
    id: str
    status: Literal["queued", "running", "done", "failed", "cancelled"]
    progress: float = Field(ge=0, le=1)
    message: str
    tree: str | None
    error: str | None
    stage: str | None = Field(description="The build's stage now (reading the corpus, chunking, storing, fitting, "
                                          "loading the embedding model, embedding chunks, saving, exporting the "
                                          "query encoder, publishing); null while queued.")
    stages: list[str] = Field(default_factory=list, description=(
        "Every stage the job has entered, in order: a client that polls less often than a stage lasts still "
        "sees that it ran."))
    done: int = Field(description="What is finished of the stage (documents chunked, chunks embedded).")
    total: int | None = Field(description="How much the stage has; null when it is not counted.")
    elapsed_s: float = Field(description="Seconds since the job was accepted (until it ended).")
    stage_eta_s: float | None = Field(description="The stage's remaining seconds at its pace so far; null until "
                                                  "its counter moved, or when it is not counted.")
    counts: dict[str, int] | None = Field(None, description=(
        "A finished document update: how many documents were added, replaced, skipped and removed; a finished "
        "sync: added, replaced, removed, unchanged and failed."))
    files: FileOutcomes | None = Field(None, description=(
        "A finished build of a folder corpus: each file read, skipped or failed, with why; null otherwise."))
    warnings: list[str] = Field(default_factory=list, description=(
        "A done job's warnings: the change is published, but something was left behind (an old store that "
        "could not be removed; the next save removes it)."))
    report: dict[str, Any] | None = Field(None, description=(
        "A done learn job (POST /trees/{name}/learn): the tree it chose (shipped: base or learned) and why, the "
        "held-out pseudo-query figures, the training plan, the tuning and the time (docs/finetuning.md)."))


class DocumentIn(BaseModel):
    """A document to add to a saved tree; an id already in the tree replaces it (or is skipped if identical)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=512, pattern=NOT_BLANK, description="The document's id.")
    text: str = Field(description="The document's text.")
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict, description=(
        "Any JSON fields the filter language reads (docs/filters.md): strings, numbers, booleans, lists, "
        "ISO dates as strings."))


class AddDocumentsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    documents: list[DocumentIn] = Field(min_length=1, description="The documents to add or replace.")


class DocumentEntry(BaseModel):
    id: str
    title: str
    metadata: dict[str, Any] = Field(description="The document's metadata, as stored.")
    chunks: int = Field(description="How many chunks the tree holds of it.")


class FilterProblem(BaseModel):
    path: str = Field(description="Where in the filter ($.year.$gte).")
    message: str


class FilterCheck(BaseModel):
    """A filter checked by the code every face uses (``parse_filter``): no problems, or the first one."""

    errors: list[FilterProblem]


class FieldSummary(BaseModel):
    """One metadata field of a tree's documents, as a filter can use it."""

    name: str
    types: list[Literal["number", "date", "string", "bool", "list"]] = Field(
        description="The kinds of value it holds (docs/filters.md); 'list' when some document holds a list.")
    documents: int = Field(description="How many documents have it (null and [] aside).")
    values: list[Any] = Field(description="Its most frequent values, at most five.")


class TreeFields(BaseModel):
    """The metadata fields of a saved tree's documents, by name."""

    fields: list[FieldSummary]


class DocumentsPage(BaseModel):
    """One page of a saved tree's documents, in corpus order."""

    total: int = Field(description="How many documents the tree holds.")
    offset: int
    limit: int
    documents: list[DocumentEntry]


class TreeQuery(BaseModel):
    query: Query = Field(description="The query; empty or whitespace-only is a 422.",
                       json_schema_extra={"pattern": NOT_BLANK})
    top_k: int | None = Field(None, ge=1, le=1000)
    trace: bool = True
    filters: Filters = None


class QueryChunk(BaseModel):
    chunk_id: int
    document_id: str
    position: int
    text: str
    score: float
    source: str
    metadata: dict[str, Any] = Field(default_factory=dict, description=(
        "The document's metadata and the chunk's own fields (page, section)."))


class TreeQueryResponse(BaseModel):
    chunks: list[QueryChunk]
    trace: TraceNode | None
    elapsed_ms: float
    warnings: list[str] = Field(default_factory=list, description=(
        "What the caller should know although the request is valid: each filter field that no document has "
        "(it matches nothing), with the fields there are."))


class ValidationIssue(BaseModel):
    """One problem, as FastAPI reports request validation errors (config problems add ``path``, ``message``)."""

    model_config = ConfigDict(extra="allow")
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorBody(BaseModel):
    detail: list[ValidationIssue]


class FilterSchema(RootModel[dict[str, Any]]):
    """The metadata filter language's JSON Schema (a named component, so a generated client's type is
    ``FilterSchema``; service/openapi_document.py)."""


class DocumentChanges(RootModel[dict[str, int]]):
    """What an update did, counted by kind (``removed``, ...)."""
