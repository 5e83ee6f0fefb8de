"""The OpenAPI document as generators meet it: it validates (openapi-spec-validator), and a client generated
from it by openapi-python-client, unpatched, inside the test run, calls every operation of a real service on
loopback (with a bearer token, so the declared security is exercised)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from io import BytesIO
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from openapi_spec_validator import validate

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import REPO
from tests.service.conftest import KEYWORD, LoopbackServer

TOKEN_VAR = "DASHRAG_OPENAPI_TEST_TOKEN"
TOKEN = "generated-client-token"


def spec(**settings: Any) -> dict[str, Any]:
    return create_app(ServiceSettings(**settings)).openapi()


def test_the_document_validates_with_and_without_a_token():
    validate(spec())
    validate(spec(auth_token_var=TOKEN_VAR))


def test_every_operation_has_a_chosen_id_a_tag_and_typed_bodies():
    document = spec(auth_token_var=TOKEN_VAR)
    operations = [(path, method, op) for path, ops in document["paths"].items() for method, op in ops.items()]
    ids = [op["operationId"] for _, _, op in operations]
    assert len(set(ids)) == len(ids) and not any(i.endswith(("_get", "_post", "_delete")) for i in ids)
    assert all(op.get("tags") for _, _, op in operations)
    for path, method, op in operations:
        ok = op["responses"].get("200") or op["responses"].get("202")
        if ok is not None and "application/json" in ok.get("content", {}):
            schema = ok["content"]["application/json"]["schema"]
            assert schema != {"type": "object", "additionalProperties": True}, (method, path)
            assert schema.get("items", {}) != {"type": "object", "additionalProperties": True}, (method, path)
        assert len(op.get("requestBody", {}).get("content", {})) <= 1, (method, path)  # one body type each
        assert op.get("security") == ([{"HTTPBearer": []}] if path != "/health" else []), (method, path)
    assert document["info"]["license"]["identifier"] == "Apache-2.0" and document["servers"]


@pytest.fixture(scope="module")
def client_package(tmp_path_factory) -> ModuleType:
    folder = tmp_path_factory.mktemp("generated")
    (folder / "openapi.json").write_text(json.dumps(spec(auth_token_var=TOKEN_VAR)))
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "openapi-python-client"), "generate", "--path", str(folder / "openapi.json"),
                    "--meta", "none", "--output-path", str(folder / "dashrag_api")], check=True, capture_output=True,
                   env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}, timeout=300)
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("dashrag_api")
    finally:
        sys.path.remove(str(folder))


@pytest.fixture
def server(trees_copy, monkeypatch):
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    app = create_app(ServiceSettings(trees_dir=trees_copy, data_root=REPO / "examples", auth_token_var=TOKEN_VAR))
    with LoopbackServer(app) as running:
        yield running


CALLED: set[str] = set()


def call(package: ModuleType, operation: str, *args: Any, **kwargs: Any) -> Any:
    """``operation`` (module path under api/) through the generated client; the parsed body of a 2xx."""
    module = importlib.import_module(f"{package.__name__}.api.{operation}")
    response = module.sync_detailed(*args, **kwargs)
    assert 200 <= response.status_code < 300, (operation, response.status_code, response.content)
    CALLED.add(operation.rpartition(".")[2])
    return response.parsed


def wait_for_job(package: ModuleType, client: Any, job_id: str) -> Any:
    deadline = time.monotonic() + 120
    while True:
        status = call(package, "trees.job_status", job_id, client=client)
        if status.status.value in ("done", "failed") or time.monotonic() > deadline:
            return status
        time.sleep(0.1)


@pytest.mark.slow
def test_a_generated_client_calls_every_operation(client_package, server):
    api = client_package
    models = importlib.import_module(f"{api.__name__}.models")
    types = importlib.import_module(f"{api.__name__}.types")
    client = api.AuthenticatedClient(base_url=server.url, token=TOKEN)
    refused = importlib.import_module(f"{api.__name__}.api.meta.components").sync_detailed(
        client=api.AuthenticatedClient(base_url=server.url, token="wrong"))
    assert refused.status_code == 401

    assert call(api, "meta.health", client=client).service == "rag_service"
    components = call(api, "meta.components", client=client)
    assert "BM25Retriever" in {c.name for c in components}
    assert call(api, "meta.schema", "BM25Retriever", client=client).title
    assert call(api, "meta.schemas", client=client)["BM25Retriever"].title
    assert {p.name for p in call(api, "web.presets", client=client)} >= {"keyword", "hybrid"}

    answer = call(api, "retrieval.retrieve", client=client, body=models.RetrieveRequest(
        query="how does BM25 saturate term frequency", collection_name="kw", trace=True))
    assert answer.context_chunks[0].source_id == "bm25.md"
    assert answer.trace.component == "retrieve" and answer.trace.children

    assert {t.name for t in call(api, "trees.list_trees", client=client)} == {"kw", "scifact"}
    bad = models.TreeConfig.from_dict({"component": "BM25Retriever", "params": {"top_k": 0}})
    assert call(api, "trees.validate_tree", client=client, body=bad).valid is False

    built = call(api, "trees.build_tree", client=client, body=models.BuildRequest.from_dict(
        {"name": "from_json", "config": KEYWORD, "corpus_path": "corpus"}))
    assert wait_for_job(api, client, built.job_id).status.value == "done"
    synced = call(api, "documents.sync_tree", "from_json", client=client,
                  body=models.SyncRequest(corpus_path="corpus"))  # the folder it was built from: nothing to do
    synced = wait_for_job(api, client, synced.job_id).to_dict()
    assert synced["status"] == "done" and synced["counts"]["unchanged"] == 8, synced
    upload = models.BuildTreeFromUploadBody(name="from_upload", config=json.dumps(KEYWORD), corpus=[
        types.File(payload=BytesIO(path.read_bytes()), file_name=path.name, mime_type="text/plain")
        for path in sorted((REPO / "examples" / "corpus").iterdir())])
    uploaded = call(api, "trees.build_tree_from_upload", client=client, body=upload)
    assert wait_for_job(api, client, uploaded.job_id).status.value == "done"

    hits = call(api, "trees.query_tree", "from_upload", client=client,
                body=models.TreeQuery(query="how does BM25 saturate term frequency", top_k=2))
    assert hits.chunks[0].document_id == "bm25.md" and hits.trace.component == "BM25Retriever"
    new_documents = models.AddDocumentsRequest.from_dict(
        {"documents": [{"id": "new.md", "text": "Stemming maps inflected words to one stem."}]})
    added = call(api, "documents.add_documents", "from_upload", client=client, body=new_documents)
    assert wait_for_job(api, client, added.job_id).status.value == "done"
    more = models.AddDocumentsFromUploadBody(corpus=[types.File(
        payload=BytesIO(b"Sparse vectors hold one weight per vocabulary term."), file_name="sparse.txt",
        mime_type="text/plain")])
    assert wait_for_job(api, client, call(api, "documents.add_documents_from_upload", "from_upload", client=client,
                                          body=more).job_id).status.value == "done"
    listed = call(api, "documents.list_documents", "from_upload", client=client, limit=2)
    assert listed.total == 10 and len(listed.documents) == 2
    call(api, "documents.remove_document", "from_upload", "new.md", client=client)
    learning = call(api, "learning.learn_from_documents", "from_upload", client=client, body=models.LearnRequest(
        time_budget_minutes=5, max_steps=1, max_seq_length=64, batch_size=8))  # accepted, then cancelled: no training
    assert call(api, "trees.cancel_job", learning.job_id, client=client).status.value in ("queued", "running",
                                                                                          "cancelled")
    unlearned = importlib.import_module(f"{api.__name__}.api.learning.build_learned_tree").sync_detailed(
        "from_upload", client=client, body=models.LearnedBuildRequest(name="from_learned"))  # its learn was cancelled
    assert unlearned.status_code == 404 and b"has learned nothing yet" in unlearned.content  # the documented refusal
    CALLED.add("build_learned_tree")  # a learned tree built and queried: tests/web/test_learn_form.py
    assert call(api, "meta.filter_schema_route", client=client).to_dict()["$defs"]
    fields = {f.name for f in call(api, "documents.list_fields", "from_upload", client=client).fields}
    assert {"path", "file_type"} <= fields  # no metadata given: the uploaded files' own fields
    checked = call(api, "meta.check_filter", client=client, body=[{"year": 2024}])
    assert checked.errors[0].path == "$" and checked.errors[0].message == "a filter is a JSON object, not a list"
    assert call(api, "trees.reload_tree", "from_json", client=client).name == "from_json"
    ended = call(api, "trees.cancel_job", built.job_id, client=client)  # an ended job is answered as it is
    assert ended.status.value == "done"
    call(api, "trees.delete_tree", "from_json", client=client)
    assert {t.name for t in call(api, "trees.list_trees", client=client)} == {"kw", "scifact", "from_upload"}
    document = spec(auth_token_var=TOKEN_VAR)
    assert CALLED == {op["operationId"] for ops in document["paths"].values() for op in ops.values()}


def test_generated_models_are_named_after_their_schemas(client_package):
    """Not after operation + title (``BuildTreeBuildRequest``, ``FilterSchemaRouteResponseFilterSchemaRoute``)."""
    models = importlib.import_module(f"{client_package.__name__}.models")
    names = set(models.__all__)
    assert {"RetrieveRequest", "BuildRequest", "AddDocumentsRequest", "FilterSchema", "DocumentChanges"} <= names
    assert not {"BuildTreeBuildRequest", "AddDocumentsAddDocumentsRequest",
                "FilterSchemaRouteResponseFilterSchemaRoute", "RemoveDocumentResponseRemoveDocument"} & names
