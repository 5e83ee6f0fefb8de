"""What a metadata filter costs a query at selectivity 50%, 5% and 0.5%, as a ratio to the unfiltered query.

SciFact's documents get synthetic metadata: ``bucket``, an integer 0..999 from the first 8 bytes of
sha256(document id) (so ``{"bucket": {"$lt": 500}}`` keeps about 50%, ``$lt 50`` 5%, ``$lt 5`` 0.5%), and
``lang``, a string of the bucket's parity (a second field the filter does not use, so the payloads are not
trivially small). Two trees, top 10: **keyword** (BM25) and **dense** (the packaged MiniLM on onnxruntime; the
corpus is embedded once into ``--cache``, so later runs only load its vectors), each in process, on Qdrant
Edge (embedded, HNSW) and on PostgreSQL (the BM25 table, pgvector HNSW; a local server is started and stopped
here, as the tests do, unless ``--pg-url`` names one or ``--no-pg``).

Every test query runs unfiltered and under each filter one after the other, the order rotating from query to
query and from repeat to repeat (interleaved, so a change of load hits every variant alike); a query's time is
its best over ``--repeats``, a row's figure the mean over queries, reported as a ratio to the unfiltered query.
Each variant is asked once before the timing: the first use of a filter builds the metadata columns and its mask
(kept for later queries: filters/masks.py), a cost paid once per filter, not per query.
Also checked on the first 20 queries: every filtered hit matches its filter, and a filtered answer holds
min(10, matching hits) chunks (no shortfall). The load average is printed beside the table.

Full run (the figures of docs/filters.md and README): ``.venv/bin/python bench/bench_filters.py``
A quick check: ``.venv/bin/python bench/bench_filters.py --documents 500 --queries 30 --repeats 1``
"""

from __future__ import annotations

import argparse
import contextlib
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
from dashrag.engines.local_postgres import temporary_server

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
FILTERS = {"50%": {"bucket": {"$lt": 500}}, "5%": {"bucket": {"$lt": 50}}, "0.5%": {"bucket": {"$lt": 5}}}
VARIANTS = {"unfiltered": None, **FILTERS}
MINILM = {"component": "MiniLMOnnxEmbedding", "params": {}}
TOP_K = 10


def bucket(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % 1000


def corpus_with_metadata(documents: int | None) -> Corpus:
    corpus = Corpus.from_path(SCIFACT)
    kept = corpus.documents if documents is None else corpus.documents[:documents]
    return Corpus(tuple(replace(d, metadata={"bucket": bucket(d.id), "lang": "en" if bucket(d.id) % 2 else "es"})
                        for d in kept))


def scifact_test_queries(limit: int | None) -> list[str]:
    qrels = {line.split("\t")[0] for line in (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    found = [json.loads(line) for line in (SCIFACT / "queries.jsonl").open(encoding="utf-8")]
    texts = [q["text"] for q in found if str(q["_id"]) in qrels]
    return texts if limit is None else texts[:limit]


def tree_config(kind: str, index: dict | None) -> dict:
    params: dict = {"top_k": TOP_K, **({} if index is None else {"index": index})}
    if kind == "dense":
        return {"component": "DenseEmbeddingRetriever", "params": {**params, "embedding": MINILM}}
    return {"component": "BM25Retriever", "params": params}


def engine_indexes(pg_url: str | None) -> dict[str, dict[str, dict | None]]:
    """Per place: the keyword and the dense tree's index (None: in process)."""
    places: dict[str, dict[str, dict | None]] = {
        "in process": {"keyword": None, "dense": None},
        "Qdrant Edge": {"keyword": {"component": "QdrantKeywordIndex", "params": {}},
                        "dense": {"component": "QdrantVectorIndex", "params": {}}}}
    if pg_url:
        places["PostgreSQL"] = {
            "keyword": {"component": "PgKeywordIndex", "params": {"url": pg_url, "table": "bench_filters_bm25"}},
            "dense": {"component": "PgVectorIndex", "params": {"url": pg_url, "table": "bench_filters_dense"}}}
    return places


def interleaved_best_times(tree, queries: list[str], repeats: int) -> dict[str, list[float]]:
    """Each variant's best time per query; the variants of one query run back to back, in rotating order."""
    names = list(VARIANTS)
    best = {name: [float("inf")] * len(queries) for name in names}
    for repeat in range(repeats):
        for i, query in enumerate(queries):
            shift = (i + repeat) % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                tree.retrieve(query, filters=VARIANTS[name])
                best[name][i] = min(best[name][i], time.perf_counter() - started)
    return best


def check_filtering(tree, queries: list[str]) -> None:
    """Every filtered hit matches; a filtered answer has min(10, matching hits) chunks: of the matching chunks
    for a dense tree (every chunk scores; an unfiltered HNSW search for them all would stop at its ef), of the
    matching chunks in the whole unfiltered ranking for BM25 (only chunks sharing a term score)."""
    chunks = tree.require_infra().chunks
    for query in queries[:20]:
        scoring = chunks.chunks if tree.component_name == "DenseEmbeddingRetriever" else \
            tree.retrieve(query, top_k=len(chunks))[0]
        for filters in FILTERS.values():
            limit = filters["bucket"]["$lt"]
            found, _ = tree.retrieve(query, filters=filters)
            assert all(bucket(c.document_id) < limit for c in found), (query, filters)
            wanted = min(TOP_K, sum(bucket(c.document_id) < limit for c in scoring))
            assert len(found) == wanted, (query, filters, len(found), wanted)


def measure(tree, queries: list[str], repeats: int) -> dict:
    for filters in VARIANTS.values():  # first-use costs out of the figures: model session, metadata columns, masks
        tree.retrieve(queries[0], filters=filters)
    best = interleaved_best_times(tree, queries, repeats)
    unfiltered = statistics.mean(best["unfiltered"])
    row: dict = {"unfiltered_ms": round(unfiltered * 1000, 3)}
    for name in FILTERS:
        filtered = statistics.mean(best[name])
        row[f"{name}_ms"] = round(filtered * 1000, 3)
        row[f"{name}_ratio"] = round(filtered / unfiltered, 3)
    check_filtering(tree, queries)
    return row


def table(results: dict) -> str:
    lines = ["| tree | where | unfiltered | 50% | 5% | 0.5% |", "|---|---|---|---|---|---|"]
    for kind in ("keyword", "dense"):
        for place, row in results["rows"].get(kind, {}).items():
            ratios = " | ".join(f"{row[f'{name}_ratio']:.2f}×" for name in FILTERS)
            lines.append(f"| {kind} | {place} | {row['unfiltered_ms']:.3f} ms | {ratios} |")
    before, after = (", ".join(f"{x:.2f}" for x in results[k]) for k in ("load_before", "load_after"))
    lines.append("")
    lines.append(f"{results['documents']} documents, {results['queries']} queries, best of {results['repeats']}; "
                 f"load average before {before}, after {after} ({os.cpu_count()} cores).")
    return "\n".join(lines)


def run(args: argparse.Namespace, pg_url: str | None) -> dict:
    corpus, queries = corpus_with_metadata(args.documents), scifact_test_queries(args.queries)
    results: dict = {"load_before": list(os.getloadavg()), "documents": len(corpus.documents),
                     "queries": len(queries), "repeats": args.repeats, "rows": {}}
    args.cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for place, indexes in engine_indexes(pg_url).items():
            for kind in args.trees:
                tree = dashrag.build(tree_config(kind, indexes[kind]), corpus, Path(work) / f"{place}-{kind}",
                                     cache_dir=args.cache)
                try:
                    results["rows"].setdefault(kind, {})[place] = row = measure(tree, queries, args.repeats)
                finally:
                    tree.close()
                print(kind, place, row, flush=True)
    results["load_after"] = list(os.getloadavg())
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--documents", type=int, default=None, help="the first N SciFact documents (default: all)")
    parser.add_argument("--queries", type=int, default=None, help="the first N test queries (default: all 300)")
    parser.add_argument("--trees", nargs="+", choices=["keyword", "dense"], default=["keyword", "dense"])
    parser.add_argument("--cache", type=Path, default=REPO / ".dashrag-work" / "cache",
                        help="embedding cache: the corpus is embedded once")
    parser.add_argument("--pg-url", default=None, help="a PostgreSQL with pgvector to use instead of a local one")
    parser.add_argument("--no-pg", action="store_true", help="no PostgreSQL rows")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        pg_url = None if args.no_pg else args.pg_url or stack.enter_context(temporary_server("dashrag-bench-pg-"))
        results = run(args, pg_url)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
