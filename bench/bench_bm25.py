"""BM25 speed, memory and quality: rank-bm25, bm25s and dashrag side by side.

One process, the same SciFact corpus (title + " " + text), the same tokens
(``bm25s.tokenize`` with English stop words and the PyStemmer English stemmer,
as token strings) and the same test queries (the ids of qrels/test.tsv), for all.

Measured, per library:
  build_s        seconds to index the token lists (best of --repeats)
  qps_single     queries/second answering one query at a time (tokens in, top-k ids out)
  qps_batch      queries/second answering all queries in one call
                 (rank-bm25 has no batch API: its get_scores loop serves both columns)
  build_peak     tracemalloc peak while building, MiB (Python objects + numpy buffers)
  index_size     tracemalloc memory still held by the built index, MiB
  batch_peak     tracemalloc peak of the batched query pass, MiB
  ndcg@10        on SciFact test with pytrec_eval, to show the rankings agree

Timings run without tracemalloc; memory is measured in a separate pass under it.
Clock: by default CPU seconds of this process (``time.process_time``), best of
--repeats. Every library runs single-threaded here (bm25s with its default
n_threads=0, rank-bm25 in pure Python, dashrag in numpy), so on an idle machine
CPU time equals wall time, and on a shared one it is not inflated by other
processes. ``--clock wall`` uses ``time.perf_counter`` instead.
Formulas: bm25s uses its default, Lucene's BM25; rank-bm25 has no Lucene variant
and uses BM25Okapi. dashrag runs both, and each dashrag row is compared with the
peer of the same formula (same scores, so the same ranking).

Run: .venv/bin/python bench/bench_bm25.py [--json OUT] [--k 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import bm25s
import numpy as np
import pytrec_eval
import rank_bm25
import scipy.sparse as sp
import Stemmer

from dashrag.core.infra import Infra
from dashrag.scoring.bm25 import BM25Parameters, bm25_weights, score_query, top_k, top_k_batch

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
MIB = 1024 * 1024


# ---------------------------------------------------------------- data


def load_scifact(root: Path):
    """(doc ids, doc texts, query ids, query texts, qrels) of the SciFact test split."""
    with gzip.open(root / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    queries = {}
    for line in (root / "queries.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, docid, score = line.split("\t")
        qrels.setdefault(qid, {})[docid] = int(score)
    query_ids = list(qrels)
    return ([d["_id"] for d in docs], [d["title"] + " " + d["text"] for d in docs],
            query_ids, [queries[q] for q in query_ids], qrels)


def shared_tokens(texts: list[str]) -> list[list[str]]:
    """The one tokenisation every library sees: bm25s's, with stop words and stemming."""
    stemmer = Stemmer.Stemmer("english")
    return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)


# ---------------------------------------------------------------- the three libraries
# Each library is three callables: build(corpus_tokens) -> index,
# one(index, query_tokens, k) -> doc indices, batch(index, list of query tokens, k) -> list of doc indices.


def bm25s_build(corpus_tokens: list[list[str]]):
    index = bm25s.BM25(method="lucene")
    index.index(corpus_tokens, show_progress=False)
    return index


def bm25s_one(index, tokens: list[str], k: int) -> np.ndarray:
    return index.retrieve([tokens], k=k, show_progress=False, return_as="documents")[0]


def bm25s_batch(index, queries: list[list[str]], k: int) -> list[np.ndarray]:
    return list(index.retrieve(queries, k=k, show_progress=False, return_as="documents"))


def rank_bm25_one(index, tokens: list[str], k: int) -> np.ndarray:
    return top_k(index.get_scores(tokens), k)[0]


def rank_bm25_batch(index, queries: list[list[str]], k: int) -> list[np.ndarray]:
    return [rank_bm25_one(index, q, k) for q in queries]


@dataclass
class Library:
    name: str
    formula: str
    build: Callable
    one: Callable
    batch: Callable
    has_batch: bool = True


def dashrag(variant: str) -> Library:
    """dashrag's BM25 as the bench drives it: the one place to change when the
    bench moves to the BM25Retriever component."""

    def build(corpus_tokens: list[list[str]]):
        """Token lists -> (vocabulary, BM25 weights): ids by one dict pass, counts by scipy."""
        vocab: dict[str, int] = {}
        lengths = np.fromiter(map(len, corpus_tokens), dtype=np.int64, count=len(corpus_tokens))
        ids = np.fromiter((vocab.setdefault(t, len(vocab)) for doc in corpus_tokens for t in doc),
                          dtype=np.int32, count=int(lengths.sum()))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        counts = sp.csr_matrix((np.ones(ids.size, dtype=np.float32), ids, indptr),
                               shape=(len(corpus_tokens), len(vocab)))
        counts.sum_duplicates()  # in place: a token repeated in a document becomes its count
        return vocab, bm25_weights(counts, BM25Parameters(variant=variant))

    def one(index, tokens: list[str], k: int) -> np.ndarray:
        vocab, weights = index
        return top_k(score_query([vocab[t] for t in tokens if t in vocab], weights), k)[0]

    def batch(index, queries: list[list[str]], k: int) -> list[np.ndarray]:
        vocab, weights = index
        lengths = np.fromiter((sum(t in vocab for t in q) for q in queries), dtype=np.int64, count=len(queries))
        known = (vocab[t] for q in queries for t in q if t in vocab)
        ids = np.fromiter(known, dtype=np.int32, count=int(lengths.sum()))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        query_counts = sp.csr_matrix(
            (np.ones(ids.size, dtype=np.float32), ids, indptr), shape=(len(queries), len(vocab))
        )
        return list(top_k_batch(query_counts, weights, k).ids)  # row views, as bm25s's list(documents)

    return Library("dashrag", variant, build, one, batch)


def dashrag_component(variant: str) -> Library:
    """The BM25Retriever component itself: its vectorizer re-reads the shared tokens from
    space-joined text (so its time includes tokenizing and vocabulary lookup, which the
    other rows skip), and answers through retrieve / retrieve_batch (traces included).
    The corpus is chunked and stored before the clock starts; build = inject + fit."""
    import tempfile

    import dashrag
    from dashrag.api import prepare_corpus
    from dashrag.documents.model import SourceDocument

    config = {
        "component": "BM25Retriever",
        "params": {
            "variant": variant,
            "top_k": 10,
            "vectorizer": {"component": "BagOfWordsConverter", "params": {"lowercase": False}},
        },
    }
    prepared: dict[int, Infra] = {}

    def build(corpus_tokens: list[list[str]]):
        key = id(corpus_tokens)
        if key not in prepared:
            docs = [SourceDocument(id=str(i), text=" ".join(t) or "_") for i, t in enumerate(corpus_tokens)]
            prepared[key] = prepare_corpus(
                dashrag.Corpus(tuple(docs)), tempfile.mkdtemp(), chunker={"component": "WholeDocumentChunker"}
            )
        tree = dashrag.build_component(config)
        tree.inject_infra(prepared[key])
        tree.init_model()
        return tree

    def one(tree, tokens: list[str], k: int) -> np.ndarray:
        return np.asarray([int(c.document_id) for c in tree.retrieve(" ".join(tokens) or "_", top_k=k)[0]])

    def batch(tree, queries: list[list[str]], k: int) -> list[np.ndarray]:
        answers = tree.retrieve_batch([" ".join(q) or "_" for q in queries], top_k=k)
        return [np.asarray([int(c.document_id) for c in chunks]) for chunks, _ in answers]

    return Library("dashrag component", variant, build, one, batch)


LIBRARIES = [
    Library("rank-bm25", "okapi", rank_bm25.BM25Okapi, rank_bm25_one, rank_bm25_batch, has_batch=False),
    Library("bm25s", "lucene", bm25s_build, bm25s_one, bm25s_batch),
    dashrag("okapi"),
    dashrag("lucene"),
    dashrag_component("lucene"),
]


# ---------------------------------------------------------------- measuring


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
clock = CLOCKS["cpu"]


def best_seconds(fn: Callable, repeats: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        gc.collect()
        start = clock()
        result = fn()
        best = min(best, clock() - start)
    return best, result


def traced_mib(fn: Callable) -> tuple[float, float, object]:
    """(peak MiB, MiB still held after the call, result) of ``fn`` under tracemalloc."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (peak - base) / MIB, (current - base) / MIB, result


def ndcg_at_10(doc_ids: list[str], query_ids: list[str], found: list[np.ndarray], qrels) -> float:
    run = {
        qid: {doc_ids[int(d)]: float(len(hits) - rank) for rank, d in enumerate(hits)}
        for qid, hits in zip(query_ids, found)
    }
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return float(np.mean([m["ndcg_cut_10"] for m in per_query.values()]))


def measure_all(libs: list[Library], corpus_tokens, query_tokens, k: int, repeats: int) -> list[dict]:
    """Time every library with the repeats interleaved (so a busy moment hurts all alike),
    then measure memory in separate passes under tracemalloc."""
    n = len(query_tokens)
    rows: list[dict[str, Any]] = [{"library": lib.name, "formula": lib.formula} for lib in libs]
    indexes: list[object] = [None] * len(libs)
    best = [{"build": float("inf"), "single": float("inf"), "batch": float("inf")} for _ in libs]
    for repeat in range(repeats):
        for i, lib in enumerate(libs):
            seconds, indexes[i] = best_seconds(lambda: lib.build(corpus_tokens), 1)
            best[i]["build"] = min(best[i]["build"], seconds)
            if repeat == 0 or lib.has_batch:  # rank-bm25 takes seconds per pass: one pass
                seconds, found = best_seconds(lambda: [lib.one(indexes[i], q, k) for q in query_tokens], 1)
                best[i]["single"] = min(best[i]["single"], seconds)
                rows[i]["found"] = found
            if lib.has_batch:
                seconds, rows[i]["found"] = best_seconds(lambda: lib.batch(indexes[i], query_tokens, k), 1)
                best[i]["batch"] = min(best[i]["batch"], seconds)
    for i, lib in enumerate(libs):
        indexes[i] = None
        build_peak, index_size, built = traced_mib(lambda: lib.build(corpus_tokens))
        batch_peak = traced_mib(lambda: lib.batch(built, query_tokens, k))[0] if lib.has_batch else None
        built = None  # free the index before the next library is measured
        batch_s = best[i]["batch"] if lib.has_batch else best[i]["single"]
        rows[i].update(
            build_s=best[i]["build"],
            qps_single=n / best[i]["single"],
            qps_batch=n / batch_s,
            build_peak_mib=build_peak,
            index_mib=index_size,
            batch_peak_mib=batch_peak,
        )
    return rows


def ratios(rows: list[dict]) -> list[dict]:
    """dashrag / peer for the same formula; > 1 means dashrag is faster (qps, 1/seconds) or smaller (1/MiB)."""
    out = []
    ours_rows = [r for r in rows if r["library"].startswith("dashrag")]
    pairs = [
        (peer, ours)
        for peer in rows
        if not peer["library"].startswith("dashrag")
        for ours in ours_rows
        if ours["formula"] == peer["formula"]
    ]
    for peer, ours in pairs:
        entry = {
            "ours": ours["library"],
            "peer": peer["library"],
            "formula": peer["formula"],
            "build_speedup": peer["build_s"] / ours["build_s"],
            "single_speedup": ours["qps_single"] / peer["qps_single"],
            "batch_speedup": ours["qps_batch"] / peer["qps_batch"],
            "build_peak_ratio": ours["build_peak_mib"] / peer["build_peak_mib"],
            "index_size_ratio": ours["index_mib"] / peer["index_mib"],
        }
        if peer["batch_peak_mib"] is not None:
            entry["batch_peak_ratio"] = ours["batch_peak_mib"] / peer["batch_peak_mib"]
        out.append(entry)
    return out


def print_tables(rows: list[dict], ratio_rows: list[dict], header: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=132)  # wide enough for every column, also when piped
    table = Table(title=header)
    for col in (
        "library",
        "formula",
        "build s",
        "q/s single",
        "q/s batch",
        "build peak MiB",
        "index MiB",
        "batch peak MiB",
        "nDCG@10",
    ):
        table.add_column(col, justify="left" if col in ("library", "formula") else "right")
    for r in rows:
        batch_peak = "n/a" if r["batch_peak_mib"] is None else f"{r['batch_peak_mib']:.2f}"
        table.add_row(
            r["library"],
            r["formula"],
            f"{r['build_s']:.3f}",
            f"{r['qps_single']:,.0f}",
            f"{r['qps_batch']:,.0f}",
            f"{r['build_peak_mib']:.1f}",
            f"{r['index_mib']:.1f}",
            batch_peak,
            f"{r['ndcg@10']:.4f}",
        )
    console.print(table)
    ratio_table = Table(title="dashrag vs peer, same formula (speed: x faster; memory: dashrag / peer)")
    for col in ("dashrag", "peer", "formula", "build", "q/s single", "q/s batch", "build peak", "index", "batch peak"):
        ratio_table.add_column(col, justify="left" if col in ("dashrag", "peer", "formula") else "right")
    for r in ratio_rows:
        batch_peak = f"{r['batch_peak_ratio']:.2f}" if "batch_peak_ratio" in r else "n/a"
        ratio_table.add_row(
            r["ours"],
            r["peer"],
            r["formula"],
            f"{r['build_speedup']:.2f}x",
            f"{r['single_speedup']:.2f}x",
            f"{r['batch_speedup']:.2f}x",
            f"{r['build_peak_ratio']:.2f}",
            f"{r['index_size_ratio']:.2f}",
            batch_peak,
        )
    console.print(ratio_table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SCIFACT, help="BEIR SciFact folder")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--k", type=int, default=10, help="results per query")
    parser.add_argument("--repeats", type=int, default=5, help="timing repeats (best is kept)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="process CPU time or wall time")
    args = parser.parse_args()
    global clock
    clock = CLOCKS[args.clock]

    doc_ids, doc_texts, query_ids, query_texts, qrels = load_scifact(args.data)
    corpus_tokens, query_tokens = shared_tokens(doc_texts), shared_tokens(query_texts)
    rows = measure_all(LIBRARIES, corpus_tokens, query_tokens, args.k, args.repeats)
    for row in rows:
        row["ndcg@10"] = ndcg_at_10(doc_ids, query_ids, row.pop("found"), qrels)
    ratio_rows = ratios(rows)
    header = (
        f"BM25 on SciFact: {len(doc_ids):,} documents, {len(query_ids)} test queries, "
        f"top-{args.k}; {args.clock} time, best of {args.repeats}; memory by tracemalloc"
    )
    print_tables(rows, ratio_rows, header)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "corpus": "scifact",
                    "n_docs": len(doc_ids),
                    "n_queries": len(query_ids),
                    "k": args.k,
                    "clock": args.clock,
                    "repeats": args.repeats,
                    "tokens": "bm25s.tokenize(stopwords='en', stemmer=PyStemmer english)",
                    "memory": "tracemalloc (Python objects + numpy buffers), MiB",
                    "results": rows,
                    "ratios": ratio_rows,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
