"""What a keyword tree costs as the corpus grows: dashrag's `keyword` preset against bm25s, 10k to 1M documents.

The corpus is synthetic but keeps a real corpus's term statistics: each document is 4-9 sentences drawn
(seeded, with replacement) from SciFact's abstracts, so the vocabulary, the sentence lengths and the
term frequencies are SciFact's while the corpus grows to any size (``make_corpus``). The queries are
SciFact's claims.

Every measure runs in a fresh child process (this script with ``--phase``), which reports its own wall
seconds and its peak RSS (``ru_maxrss``), so one library's memory never counts against the other:

  build    dashrag: ``dashrag.api.build_tree("keyword", corpus.jsonl, folder, WholeDocumentChunker)``
           (reads, chunks, writes the SQLite store, fits, saves); bm25s: read the same JSONL, tokenize
           (English stop words, Snowball English stemmer: the preset's), index, save with its corpus
  load     ``dashrag.load(folder)`` / ``bm25s.BM25.load(folder, load_corpus=True)``
  query    after a load: p50 and p99 of one query at a time (``--queries`` claims), and the seconds per
           query of one batch of them (``retrieve_batch`` / one ``retrieve`` call)
  add 10   dashrag only (bm25s has no update): ``dashrag.api.update_tree(copy, add=10 new documents)`` on a
           copy of the saved folder, as ``dashrag add`` runs it (load, change, save)
  remove 10  the same with ``remove=`` 10 ids spread over the corpus
  workers  ``--workers`` processes load the saved tree and answer the queries at once, as a service's worker
           processes: each one's RSS, PSS (shared pages divided among the processes: the memory-mapped
           postings count once in all) and private memory, from /proc/self/smaps_rollup

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/bench_scale.py --sizes 10000 100000 [--json OUT]
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/bench_scale.py --profile add 100000   # where add 10 goes
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/bench_scale.py --profile add 100000 --stores  # on PostgreSQL
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/bench_scale.py --sizes 100000 --compare-with /tmp/before
                                                  # add/remove 10: another checkout's dashrag against this one
    PYTHONPATH=. nice -n 10 .venv/bin/python bench/bench_scale.py --stores --sizes 10000 100000
                                                  # the store in SQLite against PostgreSQL (--store)

Figures are wall seconds of one run each on a shared machine: the load average is written beside each.
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import json
import os
import pstats
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
CHUNKER = {"component": "WholeDocumentChunker", "params": {}}
SEED = 36
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
CHANGED = 10


def scifact_sentences() -> list[str]:
    sentences: list[str] = []
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            sentences.extend(s for s in SENTENCE_END.split(json.loads(line)["text"]) if s.strip())
    return sentences


def make_corpus(path: Path, documents: int, seed: int = SEED) -> None:
    """``documents`` documents of 4-9 SciFact sentences each (seeded), one JSON line each, ids ``d0``, ``d1``..."""
    sentences = scifact_sentences()
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, 10, size=documents)
    picks = rng.integers(0, len(sentences), size=int(lengths.sum()))
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        start = 0
        for number, length in enumerate(lengths):
            text = " ".join(sentences[i] for i in picks[start:start + length])
            start += length
            out.write(json.dumps({"_id": f"d{number}", "text": text}) + "\n")
    os.replace(tmp, path)


def queries(count: int) -> list[str]:
    with (SCIFACT / "queries.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines][:count]


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.asarray(seconds) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 3), "p99_ms": round(float(np.percentile(ms, 99)), 3)}


# ---------------------------------------------------------------- phases (each in its own child process)

def dashrag_build(corpus: Path, folder: Path, store: str | None = None) -> dict[str, Any]:
    from dashrag.api import build_tree

    start = time.perf_counter()
    build_tree("keyword", corpus, folder, chunker=CHUNKER, store_url=store)
    return {"seconds": time.perf_counter() - start, "saved_mib": round(folder_mib(folder), 1)}


def bm25s_tokens(texts: list[str]):
    import bm25s
    import Stemmer

    return bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False)


def bm25s_build(corpus: Path, folder: Path) -> dict[str, Any]:
    import bm25s

    start = time.perf_counter()
    with corpus.open(encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    index = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    index.index(bm25s_tokens([r["text"] for r in records]), show_progress=False)
    index.save(folder, corpus=[{"id": r["_id"], "text": r["text"]} for r in records], show_progress=False)
    return {"seconds": time.perf_counter() - start, "saved_mib": round(folder_mib(folder), 1)}


def dashrag_load(folder: Path, store: str | None = None):
    import dashrag

    return dashrag.load(folder, store_url=store)


def bm25s_load(folder: Path):
    import bm25s

    return bm25s.BM25.load(folder, load_corpus=True, show_progress=False)


def timed_load(load, folder: Path) -> tuple[Any, float]:
    start = time.perf_counter()
    loaded = load(folder)
    return loaded, time.perf_counter() - start


def query_figures(one, batch, texts: list[str]) -> dict[str, Any]:
    one(texts[0])  # the first query pays for lazy imports; it is not a figure
    seconds = []
    for text in texts:
        start = time.perf_counter()
        one(text)
        seconds.append(time.perf_counter() - start)
    start = time.perf_counter()
    batch(texts)
    return {**percentiles(seconds), "batch_ms_per_query": round((time.perf_counter() - start) * 1000 / len(texts), 3)}


def dashrag_query(folder: Path, texts: list[str], store: str | None = None) -> dict[str, Any]:
    tree, load_s = timed_load(lambda f: dashrag_load(f, store), folder)
    loaded = {f"{name}_after_load": value for name, value in memory_now().items()}  # before any query
    figures = query_figures(lambda q: tree.retrieve(q), lambda qs: tree.retrieve_batch(qs), texts)
    return {"load_s": load_s, **loaded, **figures}


def bm25s_query(folder: Path, texts: list[str]) -> dict[str, Any]:
    index, load_s = timed_load(bm25s_load, folder)
    figures = query_figures(lambda q: index.retrieve(bm25s_tokens([q]), k=10, show_progress=False),
                            lambda qs: index.retrieve(bm25s_tokens(qs), k=10, show_progress=False), texts)
    return {"load_s": load_s, **figures}


def added_documents(size: int):
    """Ten documents that are not in the corpus: made by the same generator with another seed."""
    from dashrag.documents.model import SourceDocument

    sentences = scifact_sentences()
    rng = np.random.default_rng(SEED + 1)
    return [SourceDocument(id=f"new{i}", text=" ".join(sentences[j] for j in rng.integers(0, len(sentences), 6)))
            for i in range(CHANGED)]


def removed_ids(size: int) -> list[str]:
    return [f"d{i}" for i in range(0, size, max(1, size // CHANGED))][:CHANGED]


def dashrag_update(folder: Path, size: int, kind: str, store: str | None = None) -> dict[str, Any]:
    from dashrag.api import update_tree

    change: dict[str, Any] = {"add": added_documents(size)} if kind == "add" else {"remove": removed_ids(size)}
    if store is not None:  # a baseline checkout may predate the argument
        change["store_url"] = store
    start = time.perf_counter()
    update_tree(folder, **change)
    return {"seconds": time.perf_counter() - start, "saved_mib": round(folder_mib(folder), 1)}


def dashrag_resave(folder: Path, store: str | None = None) -> dict[str, Any]:
    """Load and save a copied tree unchanged (not timed): the copy's manifest then records its own store file's
    size, times and inode (and its state files'), as the user's folder does, so the timed update trusts the
    fingerprint as a ``dashrag add`` in place does instead of re-hashing the corpus because the file was copied.
    ``store``: a PostgreSQL-stored tree's database (its copy: ``CREATE DATABASE ... TEMPLATE``)."""
    import dashrag

    tree = dashrag.load(folder, store_url=store)
    tree.save(folder)
    tree.close()
    return {}


def memory_now() -> dict[str, float]:
    """This process's resident memory (MiB): all of it, its proportional share (pages shared with other
    processes, such as a memory-mapped index, divided among them) and what is private to it."""
    fields = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0]) / 1024
    private = fields["Private_Clean"] + fields["Private_Dirty"]
    return {"rss_mib": round(fields["Rss"], 1), "pss_mib": round(fields["Pss"], 1), "private_mib": round(private, 1)}


def dashrag_worker(folder: Path, texts: list[str]) -> dict[str, Any]:
    """One of several service-like workers: load the tree, answer the queries, report its memory while the
    others are alive (the parent holds them all until every one has reported)."""
    tree = dashrag_load(folder)
    tree.retrieve_batch(texts)
    for text in texts:
        tree.retrieve(text)
    return memory_now()


def run_phase(args: argparse.Namespace) -> None:
    phases = {
        ("dashrag", "build"): lambda: dashrag_build(args.corpus, args.folder, args.store),
        ("bm25s", "build"): lambda: bm25s_build(args.corpus, args.folder),
        ("dashrag", "query"): lambda: dashrag_query(args.folder, queries(args.queries), args.store),
        ("bm25s", "query"): lambda: bm25s_query(args.folder, queries(args.queries)),
        ("dashrag", "add"): lambda: dashrag_update(args.folder, args.size, "add", args.store),
        ("dashrag", "remove"): lambda: dashrag_update(args.folder, args.size, "remove", args.store),
        ("dashrag", "worker"): lambda: dashrag_worker(args.folder, queries(args.queries)),
        ("dashrag", "resave"): lambda: dashrag_resave(args.folder, args.store),
    }
    figures = phases[(args.library, args.phase)]()
    figures["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(figures), flush=True)
    if args.phase == "worker":
        sys.stdin.read()  # held until every worker has reported


# ---------------------------------------------------------------- the parent

def child(library: str, phase: str, code: Path | None = None, **options: Any) -> dict[str, Any]:
    """One phase in a fresh process; ``code``: the dashrag checkout it imports (default: this one's)."""
    command = [sys.executable, __file__, "--library", library, "--phase", phase]
    for key, value in options.items():
        command += [f"--{key}", str(value)]
    env = None if code is None else {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["load_average"] = round(os.getloadavg()[0], 2)
    return figures


def workers(count: int, folder: Path, query_count: int) -> list[dict[str, Any]]:
    """``count`` processes serving one saved tree at once, as a service's workers: each one's memory."""
    command = [sys.executable, __file__, "--library", "dashrag", "--phase", "worker", "--folder", str(folder),
               "--queries", str(query_count)]
    running = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for _ in range(count)]
    try:
        reports = [json.loads(p.stdout.readline()) for p in running]  # type: ignore[union-attr]
    finally:
        for process in running:
            process.communicate("")
    return reports


def measure(size: int, work: Path, query_count: int, worker_count: int,
            record: Callable[[dict[str, Any]], None] = lambda row: None) -> dict[str, Any]:
    """One row: both libraries' build and query, dashrag's workers, add 10 and remove 10. ``record`` gets the row
    after each phase, so a phase that fails (a build killed for memory at 1M) leaves the figures measured before
    it, and its own failure, in the row (``failed``: the phase and how its process ended)."""
    corpus = work / f"corpus-{size}.jsonl"
    make_corpus(corpus, size)
    row: dict[str, Any] = {"documents": size}
    try:
        for library in ("bm25s", "dashrag"):
            folder = work / f"{library}-{size}"
            row[library] = {}
            for phase, options in (("build", {"corpus": corpus}), ("query", {"queries": query_count})):
                row[library][phase] = _recorded(row, f"{library} {phase}", record,
                                                lambda: child(library, phase, folder=folder, **options))
        row["dashrag"]["workers"] = workers(worker_count, work / f"dashrag-{size}", query_count)
        record(row)
        for kind in ("add", "remove"):
            copy = work / f"dashrag-{size}-{kind}"
            shutil.copytree(work / f"dashrag-{size}", copy)
            child("dashrag", "resave", folder=copy)  # as compare_updates: a copied store would be re-hashed
            row["dashrag"][kind] = _recorded(row, f"dashrag {kind}", record,
                                             lambda: child("dashrag", kind, folder=copy, size=size))
            shutil.rmtree(copy)
    finally:
        for library in ("bm25s", "dashrag"):
            shutil.rmtree(work / f"{library}-{size}", ignore_errors=True)
        corpus.unlink()
    return row


def _recorded(row: dict[str, Any], phase: str, record: Callable[[dict[str, Any]], None],
              run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run``'s figures; a phase whose process fails is written into the row (``failed``) before the error goes on."""
    try:
        figures = run()
    except subprocess.CalledProcessError as exc:
        ended = f"killed by signal {-exc.returncode}" if exc.returncode < 0 else f"exit status {exc.returncode}"
        row["failed"] = {"phase": phase, "ended": ended, "load_average": round(os.getloadavg()[0], 2),
                         "stderr_tail": (exc.stderr or "")[-2000:]}
        record(row)
        raise
    return figures


def _sql(url: str, statement: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


def compare_stores(size: int, work: Path, query_count: int) -> dict[str, Any]:
    """The keyword tree at ``size`` documents with its store in an SQLite file (the default) and in a
    PostgreSQL database (``--store``: a local server, ``dashrag pg``'s code, on loopback), side by side:
    build, load and query, add 10 and remove 10 (each on its own copy of the folder, and for PostgreSQL of
    the database: ``CREATE DATABASE ... TEMPLATE``)."""
    from dashrag.engines.local_postgres import temporary_server

    corpus = work / f"corpus-{size}.jsonl"
    make_corpus(corpus, size)
    row: dict[str, Any] = {"documents": size}
    with temporary_server("dashrag-bench-pg-") as server:
        base = server.rsplit("/", 1)[0]
        _sql(server, "CREATE DATABASE bench_store")
        stores = {"sqlite": None, "postgresql": f"{base}/bench_store"}
        for name, store in stores.items():
            folder = work / f"{name}-{size}"
            options: dict[str, Any] = {} if store is None else {"store": store}
            figures = {"build": child("dashrag", "build", corpus=corpus, folder=folder, **options),
                       "query": child("dashrag", "query", folder=folder, queries=query_count, **options)}
            for kind in ("add", "remove"):
                copy = work / f"{name}-{size}-{kind}"
                shutil.copytree(folder, copy)
                if store is not None:
                    _sql(server, f"CREATE DATABASE bench_{kind} TEMPLATE bench_store")
                    options = {"store": f"{base}/bench_{kind}"}
                figures[kind] = child("dashrag", kind, folder=copy, size=size, **options)
                shutil.rmtree(copy)
                if store is not None:
                    _sql(server, f"DROP DATABASE bench_{kind}")
            row[name] = figures
            shutil.rmtree(folder)
    corpus.unlink()
    return row


def profile_change(kind: str, size: int, work: Path, postgresql: bool = False) -> None:
    """Profile one change of the keyword tree at ``size`` documents (built in a child process first), its store
    in the folder's SQLite file or, with ``postgresql``, in a database of a local server on loopback."""
    corpus = work / f"corpus-{size}.jsonl"
    make_corpus(corpus, size)
    folder = work / "dashrag"
    if not postgresql:
        child("dashrag", "build", corpus=corpus, folder=folder)
        _profiled(dashrag_update, folder, size, kind)
        return
    from dashrag.engines.local_postgres import temporary_server

    with temporary_server("dashrag-bench-pg-") as server:
        store = f"{server.rsplit('/', 1)[0]}/bench_store"
        _sql(server, "CREATE DATABASE bench_store")
        child("dashrag", "build", corpus=corpus, folder=folder, store=store)
        _profiled(dashrag_update, folder, size, kind, store)


def _profiled(function: Callable[..., Any], *args: Any) -> None:
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(function, *args)
    print(f"profiled: {time.perf_counter() - start:.2f} s, load average {os.getloadavg()[0]:.2f}", flush=True)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def compare_updates(size: int, baseline: Path, work: Path, repeats: int = 3) -> None:
    """load, add 10 and remove 10 at ``size`` documents with another checkout's dashrag (``baseline``, e.g. the
    commit before a change: ``git archive REV dashrag | tar -x -C DIR``) and with this one, interleaved. Each
    side builds its own tree from the same corpus (what its store file holds is its own), and each change runs
    on its own copy of that side's tree, loaded and saved unchanged first (:func:`dashrag_resave`: a copied store
    file is re-hashed by a load; the user's own folder is not). ``load``: the seconds of ``dashrag.load`` in a
    fresh process (the query phase's ``load_s``, imports included)."""
    corpus = work / f"corpus-{size}.jsonl"
    make_corpus(corpus, size)
    sides = {"baseline": baseline, "this": REPO}
    for name, code in sides.items():
        child("dashrag", "build", code, corpus=corpus, folder=work / f"tree-{name}")
    for kind in ("load", "add", "remove"):
        seconds: dict[str, list[float]] = {name: [] for name in sides}
        memory: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
        for _ in range(repeats):
            for name, code in sides.items():
                if kind == "load":
                    figures = child("dashrag", "query", code, folder=work / f"tree-{name}", queries=3)
                    seconds[name].append(round(figures["load_s"], 3))
                    memory[name].append({k: v for k, v in figures.items() if k.endswith("_after_load")})
                    continue
                copy = work / f"{name}-{kind}"
                shutil.copytree(work / f"tree-{name}", copy)
                child("dashrag", "resave", code, folder=copy)
                seconds[name].append(round(child("dashrag", kind, code, folder=copy, size=size)["seconds"], 2))
                shutil.rmtree(copy)
        print(json.dumps({"documents": size, "change": kind, "seconds": seconds,
                          "ratio_of_best": round(min(seconds["this"]) / min(seconds["baseline"]), 3),
                          **({"memory_after_load_mib": memory} if kind == "load" else {}),
                          "load_average": round(os.getloadavg()[0], 2)}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 300_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=300, help="SciFact claims asked (single and one batch)")
    parser.add_argument("--workers", type=int, default=4, help="processes serving one tree at once (memory)")
    parser.add_argument("--json", type=Path, help="write the rows here (rows of earlier sizes are kept)")
    parser.add_argument("--profile", nargs=2, metavar=("KIND", "SIZE"),
                        help="profile one change (add or remove of 10) at SIZE documents, e.g. --profile add 100000")
    parser.add_argument("--compare-with", type=Path, metavar="CHECKOUT",
                        help="time load, add/remove 10 at the first --sizes: that checkout's dashrag and this one's")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    parser.add_argument("--stores", action="store_true",
                        help="at each --sizes: the store in an SQLite file against a PostgreSQL database (--store)")
    # a child's arguments
    parser.add_argument("--library", help=argparse.SUPPRESS)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        run_phase(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=args.work) as tmp:
        if args.compare_with:
            compare_updates(args.sizes[0], args.compare_with.resolve(), Path(tmp))
            return
        if args.profile:
            profile_change(args.profile[0], int(args.profile[1]), Path(tmp), postgresql=args.stores)
            return
        if args.stores:
            for size in args.sizes:
                print(json.dumps(compare_stores(size, Path(tmp), args.queries)), flush=True)
            return
        rows = json.loads(args.json.read_text())["rows"] if args.json and args.json.exists() else []
        for size in args.sizes:
            def record(row: dict[str, Any]) -> None:
                if args.json:
                    kept = [r for r in rows if r["documents"] != row["documents"]] + [row]
                    args.json.write_text(json.dumps({"rows": sorted(kept, key=lambda r: r["documents"])}, indent=2)
                                         + "\n")

            row = measure(size, Path(tmp), args.queries, args.workers, record)
            rows = [r for r in rows if r["documents"] != size] + [row]
            print(json.dumps(row), flush=True)
            record(row)


if __name__ == "__main__":
    main()
