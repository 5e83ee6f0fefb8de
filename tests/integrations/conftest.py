"""What the framework retrievers' tests share: a tree saved from a folder of notes with a ``metadata.jsonl``
(the example corpus, each note given a ``kind``), and that tree served by a real ``dashrag serve`` app on
loopback behind a bearer token."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import dashrag
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS
from tests.service.conftest import LoopbackServer

KIND = {"bm25.md": "lexical", "tokenization.md": "lexical", "dense_retrieval.md": "semantic",
        "vector_databases.txt": "semantic", "hybrid_search.md": "fusion", "reranking.md": "fusion",
        "chunking.txt": "preparation", "evaluation.txt": "evaluation"}
QUERY = "how does BM25 saturate term frequency"
BROAD = "search over documents for a query"  # words of every note: each kind has hits
TOKEN_VAR = "DASHRAG_INTEGRATIONS_TEST_TOKEN"


@pytest.fixture(scope="session")
def notes_trees(tmp_path_factory) -> Path:
    """A folder of saved trees holding ``notes``: BM25 over the example notes, each with its ``kind``."""
    corpus = shutil.copytree(EXAMPLE_CORPUS, tmp_path_factory.mktemp("notes") / "notes")
    (corpus / "metadata.jsonl").write_text("".join(json.dumps({"file": name, "metadata": {"kind": kind}}) + "\n"
                                                   for name, kind in KIND.items()))
    trees = tmp_path_factory.mktemp("integration-trees")
    config = {"component": "BM25Retriever", "params": {"top_k": 5}}
    dashrag.build(config, corpus, tmp_path_factory.mktemp("integration-work")).save(trees / "notes")
    return trees


@pytest.fixture(scope="session")
def service_url(notes_trees) -> Iterator[str]:
    os.environ[TOKEN_VAR] = "s3cret-integrations"
    try:
        with LoopbackServer(create_app(ServiceSettings(trees_dir=notes_trees, auth_token_var=TOKEN_VAR))) as server:
            yield server.url
    finally:
        os.environ.pop(TOKEN_VAR, None)
