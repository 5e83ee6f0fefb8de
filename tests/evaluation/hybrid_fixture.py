"""A real two-child hybrid over a SciFact subset, built without dashrag's own retrievers.

The per-node tests need traces produced by *real* scoring, independent of the
code under test: BM25 (rank_bm25's Okapi), TF-IDF cosine (scikit-learn), and
reciprocal-rank fusion of the two computed here. Documents are cut into
three-sentence chunks so that max-pooling chunks to documents is exercised.
The traces are built with dashrag's own ``trace_node`` so they have exactly the
shape a composite retriever emits.
"""

from __future__ import annotations

import gzip
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from rank_bm25 import BM25Okapi
from sklearn.feature_extraction.text import TfidfVectorizer

from dashrag.core.trace import TraceSettings, trace_node
from dashrag.documents.model import Chunk, ScoredChunk
from dashrag.evaluation.beir import load_split

N_QUERIES = 80
DISTRACTOR_STRIDE = 10  # keep every 10th unjudged document as a distractor
TOP_K = 30
RRF_K = 60
SENTENCES_PER_CHUNK = 3

Search = Callable[[str], list[ScoredChunk]]


@dataclass
class HybridRun:
    qrels: dict[str, dict[str, int]]
    queries: dict[str, str]
    traces: list[tuple[str, dict]]
    searches: dict[str, Search]  # "bm25", "tfidf", "rrf": each usable alone
    n_chunks: int
    n_documents: int


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _chunks(documents: list[dict]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for document in documents:
        sentences = re.split(r"(?<=[.!?])\s+", document["text"].strip()) or [""]
        for position, start in enumerate(range(0, len(sentences), SENTENCES_PER_CHUNK)):
            text = " ".join(sentences[start : start + SENTENCES_PER_CHUNK])
            if position == 0:
                text = f"{document['title']} {text}"
            chunks.append(Chunk(id=len(chunks), document_id=document["_id"], position=position, text=text))
    return chunks


def _top(chunks: list[Chunk], scores: np.ndarray, source: str) -> list[ScoredChunk]:
    order = np.lexsort((np.arange(len(scores)), -scores))[:TOP_K]
    return [ScoredChunk(chunk=chunks[i], score=float(scores[i]), source=source) for i in order]


def rrf(lists: list[list[ScoredChunk]], k: int = RRF_K) -> list[ScoredChunk]:
    """Reciprocal-rank fusion: score(c) = sum over lists of 1 / (k + rank of c), rank 1-based."""
    fused: dict[int, float] = {}
    first_seen: dict[int, ScoredChunk] = {}
    for ranking in lists:
        for rank, item in enumerate(ranking, start=1):
            fused[item.id] = fused.get(item.id, 0.0) + 1.0 / (k + rank)
            first_seen.setdefault(item.id, item)
    order = sorted(fused, key=lambda cid: (-fused[cid], cid))[:TOP_K]
    return [first_seen[cid].rescored(fused[cid], "RRF") for cid in order]


def build_hybrid_run(scifact_dir: Path) -> HybridRun:
    split = load_split(scifact_dir, "test")
    query_ids = list(split.queries)[:N_QUERIES]
    qrels = {q: dict(split.qrels[q]) for q in query_ids}
    judged = {d for docs in qrels.values() for d in docs}
    documents = []
    with gzip.open(scifact_dir / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            record = json.loads(line)
            if record["_id"] in judged or index % DISTRACTOR_STRIDE == 0:
                documents.append(record)
    chunks = _chunks(documents)

    bm25 = BM25Okapi([_tokens(c.text) for c in chunks])
    vectorizer = TfidfVectorizer(sublinear_tf=True)
    matrix = vectorizer.fit_transform([c.text for c in chunks])  # rows L2-normalised

    def bm25_search(query: str) -> list[ScoredChunk]:
        return _top(chunks, np.asarray(bm25.get_scores(_tokens(query))), "BM25")

    def tfidf_search(query: str) -> list[ScoredChunk]:
        cosine = (matrix @ vectorizer.transform([query]).T).toarray().ravel()
        return _top(chunks, cosine, "TFIDF")

    def rrf_search(query: str) -> list[ScoredChunk]:
        return rrf([bm25_search(query), tfidf_search(query)])

    settings = TraceSettings()
    traces = []
    for query_id in query_ids:
        query = split.queries[query_id]
        children = []
        results = []
        for name, search in (("BM25", bm25_search), ("TFIDF", tfidf_search)):
            started = time.perf_counter()
            found = search(query)
            elapsed = (time.perf_counter() - started) * 1000
            results.append(found)
            children.append(
                trace_node(component=name, params={}, query=query, elapsed_ms=elapsed, output=found, settings=settings)
            )
        started = time.perf_counter()
        fused = rrf(results)
        elapsed = (time.perf_counter() - started) * 1000 + sum(c["elapsed_ms"] for c in children)
        traces.append(
            (
                query_id,
                trace_node(
                    component="RRF",
                    params={"k": RRF_K},
                    query=query,
                    elapsed_ms=elapsed,
                    output=fused,
                    settings=settings,
                    children=children,
                ),
            )
        )
    return HybridRun(
        qrels=qrels,
        queries={q: split.queries[q] for q in query_ids},
        traces=traces,
        searches={"bm25": bm25_search, "tfidf": tfidf_search, "rrf": rrf_search},
        n_chunks=len(chunks),
        n_documents=len(documents),
    )
