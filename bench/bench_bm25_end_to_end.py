"""BM25 from text to top-10, as a user runs it: bm25s against dashrag's `keyword` preset.

bench_bm25.py compares the scoring engines on identical token ids. This script
compares whole pipelines on the same SciFact texts and test queries, in one
process: each library tokenizes (English stop words, Snowball English stemming)
with its own tokenizer, builds its index, and answers queries from raw text.

  bm25s    bm25s.tokenize(...) + bm25s.BM25(method="lucene").index / .retrieve
  dashrag  dashrag.build(keyword preset, WholeDocumentChunker) / .retrieve / .retrieve_batch

Timings are CPU seconds of this process (time.process_time), best of --repeats, the
repeats interleaved between the libraries;
peak memory is tracemalloc's, in a separate pass. Run:

    .venv/bin/python bench/bench_bm25_end_to_end.py [--json OUT] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import tempfile
import time
import tracemalloc
from pathlib import Path

import bm25s
import Stemmer

import dashrag
from dashrag.cli.config_files import resolve_config
from dashrag.evaluation import Evaluator, load_split

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
MIB = 1024 * 1024


def best(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        result = fn()
        times.append(time.process_time() - start)
    return min(times), result


def peak_mib(fn):
    gc.collect()
    tracemalloc.start()
    result = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / MIB, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    corpus = dashrag.Corpus.from_beir(args.data)
    texts = [f"{d.title}\n\n{d.text}" if d.title else d.text for d in corpus]
    doc_ids = [d.id for d in corpus]
    split = load_split(args.data, "test")
    qids, queries = list(split.queries), list(split.queries.values())
    evaluator = Evaluator(split.qrels, "ndcg@10")
    stemmer = Stemmer.Stemmer("english")

    def bm25s_build():
        index = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        index.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
        return index

    def bm25s_answers(index, batch):
        if batch:
            found, _ = index.retrieve(bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False,
                                                     return_ids=False), k=10, show_progress=False)
            return [list(row) for row in found]
        return [
            list(
                index.retrieve(
                    bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False),
                    k=10,
                    show_progress=False,
                )[0][0]
            )
            for q in queries
        ]

    work = Path(tempfile.mkdtemp())

    def dashrag_build():
        return dashrag.build(
            resolve_config("keyword"),
            corpus,
            work / f"w{time.time_ns()}",
            chunker={"component": "WholeDocumentChunker"},
        )

    def dashrag_answers(tree, batch):
        answers = tree.retrieve_batch(queries) if batch else [tree.retrieve(q) for q in queries]
        return [[c.document_id for c in chunks] for chunks, _ in answers]

    libraries = {
        "bm25s": (bm25s_build, bm25s_answers, lambda i: doc_ids[i]),
        "dashrag": (dashrag_build, dashrag_answers, lambda d: d),
    }
    # the repeats are interleaved (bm25s, dashrag, bm25s, ...) so a slow moment hits both alike
    seconds = {name: {"build": math.inf, "single": math.inf, "batch": math.inf} for name in libraries}
    indexes, found = {}, {}
    for _ in range(args.repeats):
        for name, (build, answers, _) in libraries.items():
            build_s, indexes[name] = best(build, 1)
            single_s, found[name] = best(lambda: answers(indexes[name], False), 1)
            batch_s, _ = best(lambda: answers(indexes[name], True), 1)
            for key, value in (("build", build_s), ("single", single_s), ("batch", batch_s)):
                seconds[name][key] = min(seconds[name][key], value)
    rows = {}
    for name, (build, answers, to_doc) in libraries.items():
        build_peak, _ = peak_mib(build)
        batch_peak, _ = peak_mib(lambda: answers(indexes[name], True))
        run = {qid: {to_doc(d): 10.0 - r for r, d in enumerate(docs)} for qid, docs in zip(qids, found[name])}
        rows[name] = {
            "build_s": round(seconds[name]["build"], 3),
            "qps_single": round(len(queries) / seconds[name]["single"], 1),
            "qps_batch": round(len(queries) / seconds[name]["batch"], 1),
            "build_peak_mib": round(build_peak, 1),
            "batch_peak_mib": round(batch_peak, 2),
            "ndcg@10": round(evaluator.evaluate(run).mean["ndcg@10"], 4),
        }
    ratio = {
        "build_speed": rows["bm25s"]["build_s"] / rows["dashrag"]["build_s"],
        "qps_single": rows["dashrag"]["qps_single"] / rows["bm25s"]["qps_single"],
        "qps_batch": rows["dashrag"]["qps_batch"] / rows["bm25s"]["qps_batch"],
        "build_peak": rows["dashrag"]["build_peak_mib"] / rows["bm25s"]["build_peak_mib"],
        "batch_peak": rows["dashrag"]["batch_peak_mib"] / max(rows["bm25s"]["batch_peak_mib"], 1e-9),
    }
    print(f"{'':10}{'build s':>9}{'q/s one':>10}{'q/s batch':>11}{'build MiB':>11}{'batch MiB':>11}{'nDCG@10':>9}")
    for name, r in rows.items():
        print(
            f"{name:10}{r['build_s']:>9.3f}{r['qps_single']:>10.0f}{r['qps_batch']:>11.0f}"
            f"{r['build_peak_mib']:>11.1f}{r['batch_peak_mib']:>11.2f}{r['ndcg@10']:>9.4f}"
        )
    print(
        "dashrag / bm25s: "
        + ", ".join(f"{k} {v:.2f}x" for k, v in ratio.items())
        + "  (speeds: >1 is faster; memory: <1 is less)"
    )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "ratios": ratio}, indent=2) + "\n")


if __name__ == "__main__":
    main()
