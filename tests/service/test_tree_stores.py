"""A tree indexed with ``--store postgresql://...`` served and updated over HTTP (``tree_stores`` in the
settings; docs/updating.md, "On an external store"): queried on its database, documents posted as a job and
removed at once, each change committed to the database; a store URL holding a password is refused."""

from __future__ import annotations

import json
import uuid
from urllib.parse import quote

import pytest

import dashrag
from dashrag.documents.corpus import Corpus
from dashrag.errors import ConfigError
from dashrag.service.settings import load_settings
from tests.conftest import EXAMPLE_CORPUS
from tests.fixtures.postgres import run_sql
from tests.service.conftest import KEYWORD, make_client
from tests.service.test_trees_api import wait_for

NEW = {"id": "notes/sparse.txt", "text": "Sparse retrieval with inverted indexes and BM25 term weights."}
QUERY = {"query": "sparse inverted indexes", "top_k": 5}


@pytest.fixture
def pg_store(pg_url):
    name = f"served_{uuid.uuid4().hex[:12]}"
    run_sql(pg_url, f"CREATE DATABASE {name}")
    yield pg_url.rsplit("/", 1)[0] + f"/{name}"
    run_sql(pg_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_tree_on_postgresql_is_served_and_its_documents_change_over_http(tmp_path, pg_store):
    trees = tmp_path / "trees"
    dashrag.build_tree(KEYWORD, Corpus.from_folder(EXAMPLE_CORPUS), trees / "kw", store_url=pg_store)
    stored = {row[0] for row in run_sql(pg_store, "SELECT id FROM documents")}
    with make_client(trees_dir=trees, tree_stores={"kw": pg_store}) as client:
        assert client.post("/trees/kw/query", json=QUERY).status_code == 200
        accepted = client.post("/trees/kw/documents", json={"documents": [NEW]})
        assert accepted.status_code == 202, accepted.text
        status = wait_for(client, accepted.json()["job_id"])
        assert status["status"] == "done", status
        chunks = client.post("/trees/kw/query", json=QUERY).json()["chunks"]
        assert chunks[0]["document_id"] == NEW["id"]
        assert {row[0] for row in run_sql(pg_store, "SELECT id FROM documents")} == stored | {NEW["id"]}
        gone = sorted(stored)[0]
        removed = client.delete(f"/trees/kw/documents/{quote(gone, safe='')}")
        assert removed.status_code == 200 and removed.json()["removed"] == 1, removed.text
        listed = client.get("/trees/kw/documents", params={"limit": 500}).json()
        assert {d["id"] for d in listed["documents"]} == stored - {gone} | {NEW["id"]}
    assert {row[0] for row in run_sql(pg_store, "SELECT id FROM documents")} == stored - {gone} | {NEW["id"]}


def test_a_store_url_with_a_password_is_refused_naming_the_tree(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"tree_stores": {"kw": "postgresql+psycopg://user:hunter2@127.0.0.1/db"}}),
                        encoding="utf-8")
    with pytest.raises(ConfigError, match="the store URL of tree 'kw' holds a secret") as caught:
        load_settings(settings)
    assert "hunter2" not in str(caught.value)
