"""A small real SciFact corpus for the dense tests: the documents judged for a few test queries plus others.

Embedding the whole corpus takes minutes here; this subset (the judged documents
of ``N_QUERIES`` test queries and every ``OTHER_STRIDE``-th unjudged document,
about 200 documents) takes seconds with ``FAST_MINILM`` (MiniLM reading 128
tokens per chunk). Every test module that uses it builds on one shared working
folder per session, so the subset is embedded once per session and the other
builds hit the embedding cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from dashrag.documents.corpus import Corpus
from dashrag.evaluation.beir import load_split

SCIFACT = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"
N_QUERIES = 30
OTHER_STRIDE = 48  # 5183 documents → ~108 unjudged ones kept
FAST_MINILM = {"component": "MiniLMEmbedding", "params": {"max_seq_length": 128}}


@dataclass(frozen=True)
class Subset:
    corpus: Corpus
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


@lru_cache(maxsize=1)
def load_subset() -> Subset:
    if not (SCIFACT / "qrels" / "test.tsv").is_file():
        pytest.skip(f"SciFact not found at {SCIFACT}")
    split = load_split(SCIFACT, "test")
    query_ids = list(split.queries)[:N_QUERIES]
    qrels = {q: dict(split.qrels[q]) for q in query_ids}
    judged = {d for docs in qrels.values() for d in docs}
    full = Corpus.from_path(SCIFACT)
    kept = tuple(d for i, d in enumerate(full.documents) if d.id in judged or i % OTHER_STRIDE == 0)
    return Subset(Corpus(kept), {q: split.queries[q] for q in query_ids}, qrels)


def dense_config(metric: str = "cosine", top_k: int = 10, embedding: dict | None = None) -> dict:
    return {"component": "DenseEmbeddingRetriever",
            "params": {"similarity_metric": metric, "top_k": top_k, "embedding": embedding or FAST_MINILM}}


@pytest.fixture(scope="session")
def subset() -> Subset:
    return load_subset()


@pytest.fixture(scope="session")
def shared_workdir(tmp_path_factory) -> Path:
    """One working folder for the session: builds on the subset share its embedding cache."""
    return tmp_path_factory.getbasetemp() / "dense-shared-workdir"
