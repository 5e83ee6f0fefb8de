"""What a category filter costs a boolean query, on SciFact-sized data.

SciFact's 5,183 documents get a synthetic category ``YEAR_BUCKET`` with five values
(``b0`` .. ``b4``: the first 8 bytes of sha256(document id) modulo 5, so the
assignment is deterministic and about a fifth of the corpus falls in each bucket).
One ``BooleanQueryRetriever`` with a BM25 child (the keyword preset's BM25, so the
run takes seconds) answers each of the 300 test queries twice, side by side:

  unfiltered  ``"<query>"``
  filtered    ``"<query>" AND YEAR_BUCKET=<b>``   (b from sha256(query id) modulo 5)

timed with ``time.perf_counter`` around ``retrieve`` (parse, category index,
restriction, child search, fragment algebra, selection and trace all included),
alternating which of the two runs first, ``--repeats`` times; each query's time is
its best over the repeats, and the figures are means over the queries. Target:
the filtered query costs less than 10% more than the unfiltered one.

Also reported: the same comparison for the child alone (``child.retrieve(text,
top_k=100)`` with and without a ``Restriction`` to the bucket), which shows how much of
the difference is the child's restricted top-k rather than the boolean machinery; and,
to show the filter works as a filter, the share of filtered results inside the bucket
(must be 1.0) and the mean number of fragments per query filtered versus what filtering
the unfiltered results afterwards would leave.

Run: .venv/bin/python bench/bench_boolean_filter.py [--json OUT] [--repeats 7] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import tempfile
import time
from pathlib import Path

import dashrag
from dashrag.boolean.lexer import escape_literal
from dashrag.core.restriction import Restriction
from dashrag.documents.corpus import Corpus
from dashrag.documents.model import SourceDocument
from dashrag.retrievers.boolean_query import BooleanQueryRetriever

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
BUCKETS = 5
TARGET_OVERHEAD = 0.10
CHILD = {"component": "BM25Retriever", "params": {
    "variant": "lucene", "k1": 1.5, "b": 0.75,
    "vectorizer": {"component": "BagOfWordsConverter", "params": {"stop_words": "english", "stemmer": "english"}}}}


def bucket(key: str) -> str:
    return f"b{int.from_bytes(hashlib.sha256(key.encode('utf-8')).digest()[:8], 'big') % BUCKETS}"


def categorised_corpus(root: Path) -> Corpus:
    corpus = Corpus.from_path(root)
    return Corpus(tuple(SourceDocument(d.id, d.text, d.title, {"YEAR_BUCKET": (bucket(d.id),)}, d.source)
                        for d in corpus.documents))


def test_queries(root: Path) -> list[tuple[str, str]]:
    texts = {}
    for line in (root / "queries.jsonl").open(encoding="utf-8"):
        record = json.loads(line)
        texts[record["_id"]] = record["text"]
    ids = list(
        dict.fromkeys(line.split("\t")[0] for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:])
    )
    return [(qid, texts[qid]) for qid in ids]


def timed(retriever, expression: str, **kwargs) -> tuple[float, list]:
    start = time.perf_counter()
    chunks, _ = retriever.retrieve(expression, **kwargs)
    return time.perf_counter() - start, chunks


def side_by_side(runs: list[tuple], repeats: int) -> tuple[list[float], list[float]]:
    """Per pair ``(run_a, run_b)`` of callables, each one's best time over ``repeats``, alternating which goes first."""
    best_a, best_b = [float("inf")] * len(runs), [float("inf")] * len(runs)
    gc.disable()
    try:
        for repeat in range(repeats):
            for i, (run_a, run_b) in enumerate(runs):
                if (i + repeat) % 2 == 0:
                    t_a, t_b = run_a(), run_b()
                else:
                    t_b, t_a = run_b(), run_a()
                best_a[i], best_b[i] = min(best_a[i], t_a), min(best_b[i], t_b)
    finally:
        gc.enable()
    return best_a, best_b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="Write the figures to this file.")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()

    corpus = categorised_corpus(SCIFACT)
    queries = test_queries(SCIFACT)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="dashrag-bench-boolean-"))
    start = time.perf_counter()
    retriever = dashrag.build({"component": "BooleanQueryRetriever", "params": {"children": [CHILD]}}, corpus, workdir)
    assert isinstance(retriever, BooleanQueryRetriever)
    build_s = time.perf_counter() - start
    chunks = retriever.require_infra().chunks

    phrases = [(escape_literal(text, '"'), bucket(qid)) for qid, text in queries]
    pairs = [(phrase, f"{phrase} AND YEAR_BUCKET={value}", value) for phrase, value in phrases]
    for plain, filtered, _ in pairs[:20]:  # warm caches and code paths
        retriever.retrieve(plain), retriever.retrieve(filtered)
    best_plain, best_filtered = side_by_side(
        [
            (lambda p=plain: timed(retriever, p)[0], lambda f=filtered: timed(retriever, f)[0])
            for plain, filtered, _ in pairs
        ],
        args.repeats,
    )
    child, k = retriever.child, retriever.params.semantic_top_k
    restrictions = {f"b{i}": Restriction.where_categories(YEAR_BUCKET=f"b{i}") for i in range(BUCKETS)}
    child_plain, child_filtered = side_by_side(
        [
            (
                lambda t=text: timed(child, t, top_k=k)[0],
                lambda t=text, r=restrictions[bucket(qid)]: timed(child, t, top_k=k, restriction=r)[0],
            )
            for qid, text in queries
        ],
        args.repeats,
    )

    inside = total = 0
    filtered_counts, post_filter_counts = [], []
    for plain, filtered, value in pairs:
        unfiltered_hits, _ = retriever.retrieve(plain)
        filtered_hits, _ = retriever.retrieve(filtered)
        inside += sum(value in h.chunk.metadata.get("YEAR_BUCKET", ()) for h in filtered_hits)
        total += len(filtered_hits)
        filtered_counts.append(len(filtered_hits))
        post_filter_counts.append(sum(value in h.chunk.metadata.get("YEAR_BUCKET", ()) for h in unfiltered_hits))

    mean_plain = statistics.fmean(best_plain) * 1000
    mean_filtered = statistics.fmean(best_filtered) * 1000
    overhead = mean_filtered / mean_plain - 1
    figures = {
        "documents": len(corpus),
        "chunks": len(chunks),
        "queries": len(pairs),
        "repeats": args.repeats,
        "build_s": round(build_s, 2),
        "unfiltered_ms_mean": round(mean_plain, 4),
        "filtered_ms_mean": round(mean_filtered, 4),
        "unfiltered_ms_median": round(statistics.median(best_plain) * 1000, 4),
        "filtered_ms_median": round(statistics.median(best_filtered) * 1000, 4),
        "overhead": round(overhead, 4),
        "target_overhead": TARGET_OVERHEAD,
        "within_target": overhead < TARGET_OVERHEAD,
        "child_unrestricted_ms_mean": round(statistics.fmean(child_plain) * 1000, 4),
        "child_restricted_ms_mean": round(statistics.fmean(child_filtered) * 1000, 4),
        "filtered_results_inside_bucket": round(inside / total, 4) if total else None,
        "fragments_per_query_filtered": round(statistics.fmean(filtered_counts), 2),
        "fragments_per_query_filtering_afterwards": round(statistics.fmean(post_filter_counts), 2),
    }
    print(
        f"SciFact: {figures['documents']} documents, {figures['chunks']} chunks, {figures['queries']} test queries, "
        f"best of {args.repeats}; built in {figures['build_s']} s"
    )
    print(
        f'  unfiltered  "q"                       {mean_plain:8.3f} ms mean  '
        f'({figures["unfiltered_ms_median"]:.3f} median)'
    )
    print(
        f'  filtered    "q" AND YEAR_BUCKET=b     {mean_filtered:8.3f} ms mean  '
        f'({figures["filtered_ms_median"]:.3f} median)'
    )
    print(
        f"  overhead    {overhead * 100:+.2f}%   (target < {TARGET_OVERHEAD * 100:.0f}%: "
        f"{'met' if figures['within_target'] else 'NOT met'})"
    )
    print(
        f"  of which the child alone: {figures['child_unrestricted_ms_mean']:.3f} ms unrestricted, "
        f"{figures['child_restricted_ms_mean']:.3f} ms restricted to the bucket"
    )
    print(
        f"  filtered results inside their bucket: {figures['filtered_results_inside_bucket']}; fragments per query: "
        f"{figures['fragments_per_query_filtered']} filtered vs {figures['fragments_per_query_filtering_afterwards']} "
        "when the unfiltered results are filtered afterwards"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
