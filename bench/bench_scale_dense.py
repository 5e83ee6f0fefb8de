"""A dense tree on Qdrant Edge HNSW as the corpus grows to a million vectors, beside Qdrant Edge used directly.

Issue 36's dense goal: adding 10 documents to a tree whose dense index holds a million vectors on Qdrant Edge
(HNSW, the engine and defaults the project uses for dense search on Edge) in ≤ 2 s. Embedding a million chunks on
two CPU cores is not the point, so the corpus's vectors are synthetic (seeded, 384-d unit vectors around 1,000
random centres, bench_engines.py's ``clustered``), written as the embedding cache entry of a corpus of documents
``d0``, ``d1``, ... (text ``chunk N``), so dashrag's own build path takes them; the 10 added documents are embedded
by the tree's model (MiniLM int8 ONNX), as ``dashrag add`` does.

Each measure runs in a fresh child process (``--phase``) that reports its wall seconds and peak RSS:

  build    ``dashrag.api.build_tree`` (DenseEmbeddingRetriever, cosine, ``QdrantVectorIndex`` at its defaults:
           Edge, HNSW m 16, ef_construct 100) from the corpus file, the vectors read from the cache entry
           (store, upload, HNSW graph, save); not a goal, reported
  query    ``dashrag.load`` (timed), then p50/p99 of ``retrieve_vectors`` one query vector at a time (the search,
           not the query's embedding: Edge used directly gets the same vectors), a batch's ms per query, and the
           p50 of a second pass of single queries (the process's steady state)
  add 10   ``dashrag.api.update_tree(folder, add=10 documents)``: the one update path every face calls (its wall
           seconds and its CPU seconds, user + sys of every thread)
  remove 10  the same with ``remove=`` 10 ids spread over the corpus
  edge     Qdrant Edge used directly on a copy of the tree's own Edge shard (copied after the build, untimed):
           ``EdgeShard.load``, the same queries (one at a time, then one batch), then upsert 10 points and
           flush, delete 10 points and flush, ``optimize`` after each (what dashrag's build and update call)

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/bench_scale_dense.py --sizes 100000 --work /work/scalework
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/bench_scale_dense.py --profile add 100000 --work DIR

Updates on a base built once (a 1M build takes 10-35 minutes): build it with ``--phase``s (below), then time add 10 /
remove 10 on a fresh copy of it for each code, with the dashrag that ``PYTHONPATH`` names (``--label`` names the
copy and the row), as often and interleaved as wanted:

    W=/tmp/dense; PYTHONPATH=. .venv/bin/python bench/bench_scale_dense.py --phase inputs --work $W/dense-1000000 \
        --size 1000000 --queries 200
    PYTHONPATH=. .venv/bin/python bench/bench_scale_dense.py --phase build --work $W/dense-1000000 \
        --folder $W/dense-1000000/tree --size 1000000 --queries 200
    PYTHONPATH=BEFORE .venv/bin/python bench/bench_scale_dense.py --updates 1000000 --work $W --label before
    PYTHONPATH=. .venv/bin/python bench/bench_scale_dense.py --updates 1000000 --work $W --label after

Run it under the team's lock (``flock /tmp/team/bench.lock``); the load average is written beside each phase.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engines import CLUSTERS, clustered, unit_random  # noqa: E402
from bench_scale import CHANGED, dashrag_resave, folder_mib, query_figures, removed_ids  # noqa: E402

SEED = 36
DIMENSION = 384
K = 10
CHUNKER = {"component": "WholeDocumentChunker", "params": {}}
TREE = {"component": "DenseEmbeddingRetriever",
        "params": {"top_k": K, "similarity_metric": "cosine",
                   "embedding": {"component": "MiniLMOnnxEmbedding", "params": {}},
                   "index": {"component": "QdrantVectorIndex", "params": {}}}}
BLOCK = 100_000  # vectors generated at a time


# ---------------------------------------------------------------- inputs

def write_inputs(size: int, work: Path, query_count: int) -> dict[str, Any]:
    """The corpus file, its vectors (as dashrag's embedding cache entry of that corpus) and the query vectors."""
    from dashrag.api import chunk_corpus, construct_tree
    from dashrag.core.persistence import save_array
    from dashrag.documents.corpus import Corpus
    from dashrag.embeddings.cache import cache_path

    work.mkdir(parents=True, exist_ok=True)
    corpus_file = work / "corpus.jsonl"
    with corpus_file.open("w", encoding="utf-8") as out:
        for i in range(size):
            out.write(json.dumps({"_id": f"d{i}", "text": f"chunk {i}"}) + "\n")
    rng = np.random.default_rng(SEED)
    centres = unit_random(rng, CLUSTERS, DIMENSION)
    vectors = np.lib.format.open_memmap(work / "vectors.npy", mode="w+", dtype=np.float32, shape=(size, DIMENSION))
    for start in range(0, size, BLOCK):
        vectors[start:start + BLOCK] = clustered(rng, centres, min(BLOCK, size - start))
    vectors.flush()
    np.save(work / "queries.npy", clustered(rng, centres, query_count))
    np.save(work / "added.npy", clustered(rng, centres, CHANGED))  # Edge direct's 10 new points
    chunks = chunk_corpus(Corpus.from_path(corpus_file), CHUNKER)
    embedding = construct_tree(TREE).nested["embedding"]
    save_array(cache_path(work / "cache", chunks.fingerprint, embedding), np.load(work / "vectors.npy", mmap_mode="r"))
    return {"documents": size}


def added_documents() -> list:
    from dashrag.documents.model import SourceDocument

    return [SourceDocument(id=f"new{i}", text=f"an added document about topic {i}, chunk new {i}")
            for i in range(CHANGED)]


def edge_shard_of(folder: Path) -> Path:
    """The Edge shard folder of a saved dense tree (``qdrant/edge/<collection>/shard``)."""
    shards = [p.parent for p in folder.glob("**/edge/*/shard/edge_config.json")]
    if len(shards) != 1:
        raise SystemExit(f"{folder}: expected one Edge shard, found {shards}")
    return shards[0]


# ---------------------------------------------------------------- phases (each in its own child process)

def dashrag_build(work: Path, folder: Path) -> dict[str, Any]:
    from dashrag.api import build_tree

    start = time.perf_counter()
    build_tree(TREE, work / "corpus.jsonl", folder, chunker=CHUNKER, cache_dir=work / "cache")
    seconds = time.perf_counter() - start
    from qdrant_edge import EdgeShard

    shard = EdgeShard.load(str(edge_shard_of(folder)))
    indexed = int(shard.info().indexed_vectors_count)
    shard.close()
    return {"seconds": seconds, "saved_mib": round(folder_mib(folder), 1), "hnsw_indexed_vectors": indexed}


def vector_query_figures(search, queries: np.ndarray) -> dict[str, Any]:
    """bench_scale's query figures for a search of query vectors: each vector alone (one row), then all at once."""
    return query_figures(search, lambda _rows: search(queries), [queries[i:i + 1] for i in range(len(queries))])


def dashrag_query(work: Path, folder: Path) -> dict[str, Any]:
    import dashrag
    from dashrag.retrievers.dense import DenseEmbeddingRetriever

    queries = np.load(work / "queries.npy")
    start = time.perf_counter()
    tree = dashrag.load(folder)
    load_s = time.perf_counter() - start
    assert isinstance(tree, DenseEmbeddingRetriever)
    figures = vector_query_figures(tree.retrieve_vectors, queries)
    again = vector_query_figures(tree.retrieve_vectors, queries)  # the process's steady state, not its first pass's
    tree.close()
    return {"load_s": load_s, **figures, "second_pass_p50_ms": again["p50_ms"]}


def dashrag_update(folder: Path, size: int, kind: str) -> dict[str, Any]:
    from dashrag.api import update_tree

    change: dict[str, Any] = {"add": added_documents()} if kind == "add" else {"remove": removed_ids(size)}
    start, cpu = time.perf_counter(), time.process_time()
    update_tree(folder, **change)
    return {"seconds": time.perf_counter() - start, "cpu_s": round(time.process_time() - cpu, 3),
            "saved_mib": round(folder_mib(folder), 1)}


def edge_direct(work: Path, size: int) -> dict[str, Any]:
    """Qdrant Edge without dashrag, on a copy of the tree's shard: load, query, upsert 10, delete 10."""
    from qdrant_edge import (
        CountRequest,
        EdgeShard,
        Point,
        QuantizationSearchParams,
        Query,
        QueryBatchRequest,
        QueryRequest,
        SearchParams,
        UpdateOperation,
    )

    queries = np.load(work / "queries.npy")
    start = time.perf_counter()
    shard = EdgeShard.load(str(work / "edge-direct" / "shard"))
    load_s = time.perf_counter() - start
    params = SearchParams(hnsw_ef=None, quantization=QuantizationSearchParams(rescore=True, oversampling=None))

    def search(vectors: np.ndarray) -> list:
        return shard.query_batch(QueryBatchRequest([QueryRequest(limit=K, query=Query.Nearest(q), params=params,
                                                                 with_payload=False, with_vector=False)
                                                    for q in vectors.tolist()]))

    figures = vector_query_figures(search, queries)
    added = np.load(work / "added.npy")
    points = [Point(size + i, v, {"chunk_id": size + i, "source_id": f"new{i}", "text": f"chunk new {i}",
                                  "categories": {}, "metadata": {}, "filterable": {}})
              for i, v in enumerate(added.tolist())]
    timings: dict[str, float] = {}
    for name, operation in (("upsert_10", UpdateOperation.upsert_points(points)),
                            ("delete_10", UpdateOperation.delete_points([int(i[1:]) for i in removed_ids(size)]))):
        start = time.perf_counter()
        shard.update(operation)
        shard.flush()
        timings[f"{name}_s"] = time.perf_counter() - start
        start = time.perf_counter()
        shard.optimize()
        shard.flush()
        timings[f"{name}_optimize_s"] = time.perf_counter() - start
    count = int(shard.count(CountRequest(exact=True)))
    shard.close()
    return {"load_s": load_s, **figures, **timings, "count_after": count}


def run_phase(args: argparse.Namespace) -> None:
    phases = {
        "inputs": lambda: write_inputs(args.size, args.work, args.queries),
        "build": lambda: dashrag_build(args.work, args.folder),
        "query": lambda: dashrag_query(args.work, args.folder),
        "resave": lambda: dashrag_resave(args.folder),
        "add": lambda: dashrag_update(args.folder, args.size, "add"),
        "remove": lambda: dashrag_update(args.folder, args.size, "remove"),
        "edge": lambda: edge_direct(args.work, args.size),
    }
    figures = phases[args.phase]()
    figures["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(figures), flush=True)


# ---------------------------------------------------------------- the parent

def child(phase: str, **options: Any) -> dict[str, Any]:
    command = [sys.executable, __file__, "--phase", phase]
    for key, value in options.items():
        command += [f"--{key}", str(value)]
    before = round(os.getloadavg()[0], 2)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"phase {phase} ended with {done.returncode}:\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["load_average"] = [before, round(os.getloadavg()[0], 2)]
    print(json.dumps({"phase": phase, **figures}), flush=True)
    return figures


def measure(size: int, work: Path, query_count: int) -> dict[str, Any]:
    """One row: inputs, build, query (twice), Edge direct on a copy of the built shard, then add 10, query,
    remove 10, query on the tree in place (after the add the tree searches its base and a delta, after the remove
    the base with 10 tombstones hidden too: docs/scale.md "Dense updates on Qdrant Edge")."""
    work.mkdir(parents=True, exist_ok=True)
    folder = work / "tree"
    row: dict[str, Any] = {"documents": size, "started": time.strftime("%H:%M:%S", time.gmtime())}
    common = {"work": work, "size": size, "queries": query_count}
    if not (work / "added.npy").exists():
        child("inputs", **common)
    row["build"] = child("build", folder=folder, **common)
    shutil.copytree(edge_shard_of(folder), work / "edge-direct" / "shard")
    row["query"] = [child("query", folder=folder, **common) for _ in range(2)]
    row["edge"] = child("edge", **common)
    row["add"] = child("add", folder=folder, **common)
    row["query_after_add"] = child("query", folder=folder, **common)
    row["remove"] = child("remove", folder=folder, **common)
    row["query_after_remove"] = child("query", folder=folder, **common)
    row["ended"] = time.strftime("%H:%M:%S", time.gmtime())
    return row


def time_updates(size: int, work: Path, query_count: int, label: str) -> dict[str, Any]:
    """On a copy of the base ``work/tree`` (made untimed, removed after): query twice, add 10, query, remove 10,
    query, each in a fresh process of the dashrag ``PYTHONPATH`` names, so two codes are timed on the same base.
    The second query before the add starts as the queries after it do: after another process closed the shard
    (Edge then drops its vectors from the page cache, docs/scale.md "Dense on Edge at 1M (eleventh round)")."""
    copy = work / f"tree-{label}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(work / "tree", copy, symlinks=True)
    common = {"work": work, "size": size, "queries": query_count}
    row: dict[str, Any] = {"documents": size, "code": label, "started": time.strftime("%H:%M:%S", time.gmtime())}
    try:
        # a copied store file is re-hashed by a load (its inode and times are not the saved ones: a 1M add took
        # 13-24 s of it); loaded and saved unchanged first, as the user's own folder is (bench_scale.dashrag_resave)
        row["resave"] = child("resave", folder=copy, **common)
        row["query"] = child("query", folder=copy, **common)
        # again, before any update: Qdrant Edge evicts a shard's vectors from the page cache when the shard is
        # closed, so every query process after the first loads them from disk, as the queries after the add do
        row["query_again"] = child("query", folder=copy, **common)
        row["add"] = child("add", folder=copy, **common)
        row["query_after_add"] = child("query", folder=copy, **common)
        row["remove"] = child("remove", folder=copy, **common)
        row["query_after_remove"] = child("query", folder=copy, **common)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    row["ended"] = time.strftime("%H:%M:%S", time.gmtime())
    return row


def profile_change(kind: str, size: int, work: Path, query_count: int) -> None:
    work.mkdir(parents=True, exist_ok=True)
    folder = work / "tree"
    common = {"work": work, "size": size, "queries": query_count}
    if not (work / "added.npy").exists():
        child("inputs", **common)
    if not folder.exists():
        child("build", folder=folder, **common)
    import dashrag.api  # imports are not the update's

    dashrag.load(folder).close()
    profiler = cProfile.Profile()
    profiler.runcall(dashrag_update, folder, size, kind)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200, help="synthetic query vectors")
    parser.add_argument("--work", type=Path, required=True, help="scratch folder (~5 GB at 1M)")
    parser.add_argument("--json", type=Path, help="append each row here (JSON lines)")
    parser.add_argument("--profile", nargs=2, metavar=("KIND", "SIZE"),
                        help="profile one change (add or remove of 10) at SIZE vectors, e.g. --profile add 100000")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folders")
    parser.add_argument("--updates", type=int, metavar="SIZE",
                        help="time add 10 / remove 10 (and the queries around them) on a copy of the tree built "
                             "before in WORK/dense-SIZE/tree, with the dashrag PYTHONPATH names")
    parser.add_argument("--label", default="after", help="--updates: the name of the copy and of the row")
    # a child's arguments
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        run_phase(args)
        return
    if args.updates:
        row = time_updates(args.updates, args.work / f"dense-{args.updates}", args.queries, args.label)
        print(json.dumps(row), flush=True)
        if args.json:
            with args.json.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")
        return
    if args.profile:
        size = int(args.profile[1])
        profile_change(args.profile[0], size, args.work / f"dense-{size}", args.queries)
        return
    for size in args.sizes:
        work = args.work / f"dense-{size}"
        shutil.rmtree(work / "tree", ignore_errors=True)
        shutil.rmtree(work / "edge-direct", ignore_errors=True)
        row = measure(size, work, args.queries)
        print(json.dumps(row), flush=True)
        if args.json:
            with args.json.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
