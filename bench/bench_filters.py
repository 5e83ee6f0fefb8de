"""What a metadata filter costs a query at selectivity 50%, 5% and 0.5%, as a ratio to the unfiltered query.

SciFact's 5,183 documents get synthetic metadata: ``bucket``, an integer 0..999 from the first 8 bytes of
sha256(document id) (so ``{"bucket": {"$lt": 500}}`` keeps about 50%, ``$lt 50`` 5%, ``$lt 5`` 0.5%), and
``lang``, a string of the bucket's parity (a second field the filter does not use, so the payloads are not
trivially small). A BM25 tree (top 10) answers the 300 test queries one at a time, unfiltered and under each
filter, alternating which runs first, ``--repeats`` times; each query's time is its best, the figure the
mean over queries. Trees: in process, on Qdrant (embedded: Qdrant Edge) and, with ``--pg-url``, on
PostgreSQL (its BM25 table). Also checked: every filtered hit matches its filter, and a filtered answer
holds min(10, matching hits) chunks (no shortfall).

Run: .venv/bin/python bench/bench_filters.py [--repeats 3] [--pg-url postgresql+psycopg://...] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import dashrag
from dashrag.documents.corpus import Corpus

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
FILTERS = {"50%": {"bucket": {"$lt": 500}}, "5%": {"bucket": {"$lt": 50}}, "0.5%": {"bucket": {"$lt": 5}}}


def bucket(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % 1000


def corpus_with_metadata() -> Corpus:
    corpus = Corpus.from_path(SCIFACT)
    return Corpus(tuple(replace(d, metadata={"bucket": bucket(d.id), "lang": "en" if bucket(d.id) % 2 else "es"})
                        for d in corpus.documents))


def test_queries() -> list[str]:
    qrels = {line.split("\t")[0] for line in (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    found = [json.loads(line) for line in (SCIFACT / "queries.jsonl").open(encoding="utf-8")]
    return [q["text"] for q in found if str(q["_id"]) in qrels]


def best_times(tree, queries: list[str], filters, repeats: int) -> list[float]:
    best = [float("inf")] * len(queries)
    for _ in range(repeats):
        for i, query in enumerate(queries):
            started = time.perf_counter()
            tree.retrieve(query, filters=filters)
            best[i] = min(best[i], time.perf_counter() - started)
    return best


def measure(tree, queries: list[str], repeats: int) -> dict:
    row = {}
    unfiltered = statistics.mean(best_times(tree, queries, None, repeats))
    row["unfiltered_ms"] = round(unfiltered * 1000, 3)
    chunks = tree.require_infra().chunks
    for name, filters in FILTERS.items():
        filtered = statistics.mean(best_times(tree, queries, filters, repeats))
        row[f"{name}_ms"] = round(filtered * 1000, 3)
        row[f"{name}_ratio"] = round(filtered / unfiltered, 3)
        limit = FILTERS[name]["bucket"]["$lt"]
        for query in queries[:20]:  # the filter filters, and leaves no shortfall
            found, _ = tree.retrieve(query, filters=filters)
            assert all(bucket(c.document_id) < limit for c in found)
            everything, _ = tree.retrieve(query, top_k=len(chunks))
            assert len(found) == min(10, sum(bucket(c.document_id) < limit for c in everything))
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pg-url", default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    corpus, queries = corpus_with_metadata(), test_queries()
    indexes = {"in-process": None, "qdrant-edge": {"component": "QdrantKeywordIndex", "params": {}}}
    if args.pg_url:
        indexes["postgresql"] = {"component": "PgKeywordIndex",
                                 "params": {"url": args.pg_url, "table": "bench_filters"}}
    results = {"load_average_before": os.getloadavg(), "queries": len(queries), "repeats": args.repeats}
    with tempfile.TemporaryDirectory() as work:
        for name, index in indexes.items():
            params = {"top_k": 10, **({} if index is None else {"index": index})}
            tree = dashrag.build({"component": "BM25Retriever", "params": params}, corpus, Path(work) / name)
            try:
                results[name] = measure(tree, queries, args.repeats)
            finally:
                tree.close()
            print(name, results[name], flush=True)
    results["load_average_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
