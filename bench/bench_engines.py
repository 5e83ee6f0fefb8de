"""One dense tree, six indexes: in-process; Qdrant Edge (embedded) exact, HNSW and HNSW over int8 vectors;
pgvector exact and HNSW; and one BM25 tree, three keyword indexes: in-process, Qdrant Edge sparse vectors,
PostgreSQL sparse table.

For each index the same DenseEmbeddingRetriever (MiniLM int8 ONNX, cosine) is built
and searched; only its nested ``index`` differs. Measured, side by side in one run:

* build: ``init_model`` with the chunk vectors already in the embedding cache, so it
  is the index's own work (copy into the engine, HNSW graph), not the model's;
* query latency, p50 and p99 over the queries one at a time (``retrieve_vectors`` of
  one precomputed query vector: the search, not the query embedding), the engines
  interleaved query by query so load from elsewhere hits all alike;
* batched: all queries in one ``retrieve_vectors`` call, per query;
* peak memory: how far the resident set of a Python process rises above its resting
  size (after imports and inputs; Linux ``clear_refs`` resets the peak) while it builds
  one index (into a fresh collection / table) and answers the queries batched: one child
  process per index, so each figure is that index's alone; the engines keep their
  vectors outside it (the in-process index memory-maps the cached vectors and reads them all);
* quality: nDCG@10 on SciFact test and recall@10 against exact in-process search.

BM25 (SciFact only: the synthetic corpus has no text): the same measures with text
queries (``retrieve_batch``: the query's analysis included, as a user meets it), the
default BM25Retriever with only its ``index`` changed.

Corpora: SciFact (5,183 abstracts, WholeDocumentChunker, 300 test queries; the first
run embeds it, ~5 minutes on 2 cores, cached in --cache-dir) and N synthetic clustered
unit 384-d vectors (1,000 random centres, each vector a noisy copy of one: not uniform
noise; default 200,000; ``--small``: 20,000 and fewer queries; queries drawn the same
way) written as an embedding-cache entry so the retriever's real fit path loads them.

The PostgreSQL server is a real local one (``dashrag pg start`` code), started in a
temporary folder and always stopped. Qdrant runs embedded on Qdrant Edge (its Rust engine
in this process, storage in the build's folder): ``edge-hnsw`` with the HNSW threshold
lowered to 1 KB, so the graph is built and searched at SciFact's size too (Qdrant's
default 10,000 KB would scan it exactly), search breadth Qdrant's default (ef_construct,
100); ``edge-hnsw-int8`` the same over int8-quantized vectors, rescored with the
originals. Edge's memory is the measuring process's own (it runs in process), while
PostgreSQL's is another process's and not counted.

``--skip NAME`` leaves an index out of the synthetic corpus.

Run: .venv/bin/python bench/bench_engines.py [--small] [--json OUT] [--cache-dir .dashrag-work/scifact]
     [--skip NAME] [--no-keyword]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import dashrag
from dashrag.core.infra import Infra
from dashrag.core.persistence import save_array
from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.model import Chunk
from dashrag.embeddings.cache import cache_path
from dashrag.engines import local_postgres
from dashrag.evaluation.beir import load_split
from dashrag.evaluation.metrics import evaluate
from dashrag.evaluation.runs import run_from_results
from dashrag.retrievers.dense import DenseEmbeddingRetriever

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
ONNX = {"component": "MiniLMOnnxEmbedding", "params": {}}
K = 10


EDGE_HNSW = {"exact": False, "hnsw_threshold_kb": 1}  # graph built and used at any size (SciFact is under the default)


def indexes(pg_url: str) -> dict[str, dict | None]:
    return {"in-process": None,
            "edge-exact": {"component": "QdrantVectorIndex", "params": {"exact": True}},
            "edge-hnsw": {"component": "QdrantVectorIndex", "params": EDGE_HNSW},
            "edge-hnsw-int8": {"component": "QdrantVectorIndex", "params": {**EDGE_HNSW, "quantization": "int8"}},
            "pgvector-exact": {"component": "PgVectorIndex", "params": {"url": pg_url, "exact": True}},
            "pgvector-hnsw": {"component": "PgVectorIndex", "params": {"url": pg_url}}}


def keyword_indexes(pg_url: str) -> dict[str, dict | None]:
    return {"in-process": None, "edge": {"component": "QdrantKeywordIndex", "params": {}},
            "postgresql": {"component": "PgKeywordIndex", "params": {"url": pg_url}}}


def bm25(index: dict | None, top_k: int = K) -> dict:
    params: dict[str, Any] = {"top_k": top_k}
    if index is not None:
        params["index"] = index
    return {"component": "BM25Retriever", "params": params}


def dense(index: dict | None, top_k: int = K) -> dict:
    params: dict[str, Any] = {"top_k": top_k, "similarity_metric": "cosine", "embedding": ONNX}
    if index is not None:
        params["index"] = index
    return {"component": "DenseEmbeddingRetriever", "params": params}


def unit_random(rng: np.random.Generator, rows: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((rows, dim), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


CLUSTERS = 1_000
SPREAD = 0.06  # per-dimension noise around a centre: a member's cosine to its centre is about 0.65


def clustered(rng: np.random.Generator, centres: np.ndarray, rows: int) -> np.ndarray:
    """Unit vectors around random centres (topics), not uniform noise: neighbours share a centre, as embeddings
    of texts on one subject do, which is the structure an HNSW graph is built for."""
    members = centres[rng.integers(0, len(centres), rows)]
    vectors = members + SPREAD * rng.standard_normal(members.shape, dtype=np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


# -- building --------------------------------------------------------------------
def build_scifact(index: dict | None, folder: Path, cache: Path, corpus: Any, tree: Any = None) -> Any:
    return dashrag.build((tree or dense)(index), corpus, folder, cache_dir=cache,
                         chunker={"component": "WholeDocumentChunker", "params": {}}, overwrite=True)


def search_vectors(tree: Any, queries: Any) -> list:
    return tree.retrieve_vectors(queries)


def search_texts(tree: Any, queries: Any) -> list:
    return tree.retrieve_batch(list(queries)).results()


def build_synthetic(index: dict | None, folder: Path, chunks: ChunkSet, vectors: np.ndarray) -> DenseEmbeddingRetriever:
    retriever = DenseEmbeddingRetriever(dense(index)["params"])
    retriever.inject_infra(Infra(env_path=folder, chunks=chunks, workdir=folder, overwrite=True))
    path = cache_path(folder, chunks.fingerprint, retriever.embedding)
    if not path.is_file():
        save_array(path, vectors)
    retriever.init_model()
    assert retriever.embedding.documents_embedded == 0, "the cache entry was not used"
    return retriever


# -- measuring ---------------------------------------------------------------------
def latencies(trees: dict[str, Any], queries: Any, search: Any) -> dict[str, list[float]]:
    """Seconds per query, one at a time, the trees interleaved query by query."""
    times: dict[str, list[float]] = {name: [] for name in trees}
    for i in range(len(queries)):
        for name, tree in trees.items():
            start = time.perf_counter()
            search(tree, queries[i:i + 1])
            times[name].append(time.perf_counter() - start)
    return times


def batched(trees: dict[str, Any], queries: Any, repeats: int, search: Any) -> dict[str, float]:
    """Seconds per query when all queries go in one call (best of ``repeats``, interleaved)."""
    best = {name: float("inf") for name in trees}
    for _ in range(repeats):
        for name, tree in trees.items():
            start = time.perf_counter()
            search(tree, queries)
            best[name] = min(best[name], (time.perf_counter() - start) / len(queries))
    return best


def synthetic_set(n: int) -> ChunkSet:
    return ChunkSet(Chunk(id=i, document_id=f"d{i}", position=0, text=f"chunk {i}") for i in range(n))


def probe_spec(spec: dict | None, name: str) -> dict | None:
    """The index spec for a memory probe: its own collection / table, so it really builds."""
    if spec is None:
        return None
    key = "collection" if spec["component"].startswith("Qdrant") else "table"
    return {"component": spec["component"], "params": {**spec["params"], key: f"probe_{name.replace('-', '_')}"}}


def peak_memory(kind: str, name: str, spec: dict | None, root: Path, args: argparse.Namespace) -> float:
    """Peak resident MiB of a child process that builds this index and answers the queries."""
    command = [sys.executable, __file__, "--probe", kind, "--probe-name", name, "--probe-spec", json.dumps(spec),
               "--probe-root", str(root), "--cache-dir", str(args.cache_dir), "--synthetic", str(args.n),
               "--queries", str(args.n_queries)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def reset_resident_peak() -> float:
    """Reset this process's peak resident size to its current one (Linux ``clear_refs`` 5); return it in MiB,
    so the peak measured next is the index's work, not the imports and inputs before it."""
    Path("/proc/self/clear_refs").write_text("5")
    return proc_status_mib("VmRSS")


def resident_peak_mib() -> float:
    return proc_status_mib("VmHWM")


def proc_status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def run_probe(args: argparse.Namespace) -> None:
    """Child side of ``peak_memory``: build, query, print the peak RSS in MiB."""
    spec = probe_spec(json.loads(args.probe_spec), args.probe_name)
    root = Path(args.probe_root)
    folder = root / f"probe-{args.probe}-{args.probe_name}"
    search = search_vectors
    if args.probe == "scifact":
        corpus = dashrag.Corpus.from_path(SCIFACT)
        queries = np.load(root / "scifact-queries.npy")
        resting = reset_resident_peak()
        tree = build_scifact(spec, folder, args.cache_dir, corpus)
    elif args.probe == "keyword":
        corpus = dashrag.Corpus.from_path(SCIFACT)
        queries = json.loads((root / "scifact-queries.json").read_text())
        search = search_texts
        resting = reset_resident_peak()
        tree = build_scifact(spec, folder, args.cache_dir, corpus, tree=bm25)
    else:
        chunks = synthetic_set(args.synthetic)
        vectors = np.load(root / "synthetic-vectors.npy", mmap_mode="r")
        queries = np.load(root / "synthetic-queries.npy")
        resting = reset_resident_peak()
        tree = build_synthetic(spec, folder, chunks, vectors)
    search(tree, queries)
    tree.close()
    print(resident_peak_mib() - resting)


def recall(found: list[list[int]], exact: list[list[int]]) -> float:
    return float(np.mean([len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(found, exact)]))


def ids_of(results: list) -> list[list[int]]:
    return [[c.id for c in hits] for hits in results]


def bench_corpus(label: str, builders: dict[str, Any], queries: Any, repeats: int,
                 query_ids: list[str] | None = None, qrels: dict | None = None,
                 memory: Any = None, search: Any = search_vectors) -> dict[str, Any]:
    """Build every index (timed), then measure; returns one row per index."""
    trees: dict[str, Any] = {}
    rows: dict[str, dict[str, Any]] = {}
    for name, build in builders.items():
        start = time.perf_counter()
        trees[name] = build()
        rows[name] = {"build_s": time.perf_counter() - start}
        print(f"  {label}: built {name} in {rows[name]['build_s']:.1f}s", flush=True)
    for tree in trees.values():  # warm-up: connections, first-query costs
        search(tree, queries[:2])
    one = latencies(trees, queries, search)
    per_query = batched(trees, queries, repeats, search)
    exact_ids = ids_of(search(trees["in-process"], queries))
    for name, tree in trees.items():
        results = search(tree, queries)
        row = rows[name]
        row["p50_ms"] = 1000 * float(np.percentile(one[name], 50))
        row["p99_ms"] = 1000 * float(np.percentile(one[name], 99))
        row["batched_ms_per_query"] = 1000 * per_query[name]
        row["recall@10"] = recall(ids_of(results), exact_ids)
        if qrels is not None and query_ids is not None:
            chunks = {q: hits for q, hits in zip(query_ids, results)}
            row["ndcg@10"] = evaluate(qrels, run_from_results(chunks), "ndcg@10").mean["ndcg@10"]
    load = os.getloadavg()
    print(f"  {label}: load average after the timings: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    for row in rows.values():
        row["load_average"] = list(load)
        row["peak_mib"] = float("nan")
    print_table(f"{label}, timings (peak memory follows)", rows)  # kept even if the memory probes are cut short
    for tree in trees.values():
        tree.close()
    for name in builders:  # memory: one child process per index
        rows[name]["peak_mib"] = memory(name) if memory is not None else float("nan")
        print(f"  {label}: {name} peaks at {rows[name]['peak_mib']:.0f} MiB", flush=True)
    return rows


def print_table(label: str, rows: dict[str, dict[str, Any]]) -> None:
    base = rows["in-process"]
    print(f"\n{label}")
    print(f"{'index':<16} {'build s':>8} {'x':>6} {'p50 ms':>8} {'x':>6} {'p99 ms':>8} {'x':>6} "
          f"{'batch ms/q':>10} {'x':>6} {'peak+ MiB':>9} {'x':>6} {'recall@10':>9} {'nDCG@10':>8}")
    for name, r in rows.items():
        ndcg = f"{r['ndcg@10']:.4f}" if "ndcg@10" in r else "-"
        print(f"{name:<16} {r['build_s']:>8.2f} {r['build_s'] / base['build_s']:>6.1f} {r['p50_ms']:>8.2f} "
              f"{r['p50_ms'] / base['p50_ms']:>6.1f} {r['p99_ms']:>8.2f} {r['p99_ms'] / base['p99_ms']:>6.1f} "
              f"{r['batched_ms_per_query']:>10.3f} {r['batched_ms_per_query'] / base['batched_ms_per_query']:>6.1f} "
              f"{r['peak_mib']:>9.1f} {r['peak_mib'] / base['peak_mib']:>6.2f} {r['recall@10']:>9.4f} {ndcg:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="20,000 synthetic vectors, 100 queries: a quick run.")
    parser.add_argument("--synthetic", type=int, default=None, help="Synthetic corpus size (default 200,000).")
    parser.add_argument("--queries", type=int, default=None, help="Synthetic queries (default 200; --small 100).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache-dir", type=Path, default=Path(".dashrag-work/scifact"))
    parser.add_argument("--no-scifact", action="store_true")
    parser.add_argument("--no-memory", action="store_true", help="Skip the peak-memory child processes.")
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--no-keyword", action="store_true", help="Skip the BM25 keyword indexes.")
    parser.add_argument("--skip", action="append", default=[], help="Leave this index out of the synthetic corpus.")
    parser.add_argument("--json", type=Path, default=None)
    for hidden in ("--probe", "--probe-name", "--probe-spec", "--probe-root"):
        parser.add_argument(hidden, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still stops its PostgreSQL (finally)
    if args.probe:
        return run_probe(args)
    n = args.n = args.synthetic or (20_000 if args.small else 200_000)
    n_queries = args.n_queries = args.queries or (100 if args.small else 200)
    report: dict[str, Any] = {}
    root = Path(tempfile.mkdtemp(prefix="dashrag-bench-engines-"))
    root.chmod(0o755)  # the PostgreSQL server's user must enter it
    server = local_postgres.start(root / "pg")
    try:
        specs = indexes(server.url)
        if not args.no_scifact:
            split = load_split(SCIFACT, "test")
            corpus = dashrag.Corpus.from_path(SCIFACT)
            query_ids = list(split.queries)
            probe = build_scifact(None, root / "probe", args.cache_dir, corpus)
            queries = probe.embed_queries([split.queries[q] for q in query_ids])
            np.save(root / "scifact-queries.npy", queries)
            probe.close()
            builders = {name: (lambda spec=spec, name=name: build_scifact(spec, root / f"scifact-{name}",
                                                                          args.cache_dir, corpus))
                        for name, spec in specs.items()}
            report["scifact"] = bench_corpus("SciFact", builders, queries, args.repeats, query_ids,
                                             {q: dict(split.qrels[q]) for q in query_ids},
                                             None if args.no_memory else
                                             lambda name: peak_memory("scifact", name, specs[name], root, args))
            print_table(f"SciFact: 5,183 x 384, {len(query_ids)} queries, top {K}", report["scifact"])
            save_report(args, report)
        if not args.no_keyword:
            split = load_split(SCIFACT, "test")
            corpus = dashrag.Corpus.from_path(SCIFACT)
            query_ids = list(split.queries)
            texts = [split.queries[q] for q in query_ids]
            (root / "scifact-queries.json").write_text(json.dumps(texts))
            words = keyword_indexes(server.url)
            builders = {name: (lambda spec=spec, name=name: build_scifact(spec, root / f"keyword-{name}",
                                                                          args.cache_dir, corpus, tree=bm25))
                        for name, spec in words.items()}
            report["scifact_bm25"] = bench_corpus("SciFact BM25", builders, texts, args.repeats, query_ids,
                                                  {q: dict(split.qrels[q]) for q in query_ids},
                                                  None if args.no_memory else
                                                  lambda name: peak_memory("keyword", name, words[name], root, args),
                                                  search=search_texts)
            print_table(f"SciFact BM25: 5,183 documents, {len(query_ids)} text queries, top {K}",
                        report["scifact_bm25"])
            save_report(args, report)
        if not args.no_synthetic:
            rng = np.random.default_rng(7)
            centres = unit_random(rng, CLUSTERS, 384)
            vectors = clustered(rng, centres, n)
            queries = clustered(rng, centres, n_queries)
            np.save(root / "synthetic-vectors.npy", vectors)
            np.save(root / "synthetic-queries.npy", queries)
            chunks = synthetic_set(n)
            specs = {name: spec for name, spec in indexes(server.url).items() if name not in args.skip}
            builders = {name: (lambda spec=spec, name=name: build_synthetic(
                spec, root / f"synthetic-{name}", chunks, vectors)) for name, spec in specs.items()}
            memory = None if args.no_memory else (
                lambda name: peak_memory("synthetic", name, specs[name], root, args))
            report["synthetic"] = bench_corpus("synthetic", builders, queries, args.repeats, memory=memory)
            print_table(f"synthetic: {n:,} x 384 clustered unit vectors ({CLUSTERS:,} centres), {n_queries} queries, "
                        f"top {K}",
                        report["synthetic"])
    finally:
        local_postgres.stop(root / "pg")
        shutil.rmtree(root, ignore_errors=True)
    save_report(args, report)


def save_report(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Written after every corpus, so a long run that stops keeps what it measured."""
    if args.json:
        args.json.write_text(json.dumps({**report, "load_average_now": list(os.getloadavg())}, indent=2))


if __name__ == "__main__":
    main()
