"""A BEIR folder of the shape a user's own judgements often have: many queries, ~110,000 graded judgements.

Built from SciFact (../shared/data/scifact, the only judged set here) to show the fine-tuning time
budget and its choice of pairs on that shape (issue 29: 2,590 training queries, ~110,000 judged
pairs), not quality: most of its judgements are made up, as below.

* train queries (2,590 by default): SciFact's 809 train queries, their judged documents graded 2,
  and document titles as queries (each title's own abstract graded 2), taken from documents no
  test query is judged against (so training never sees the test answers);
* every train query's top ``--depth`` BM25 documents (the ``keyword`` preset, documents whole) not
  graded 2 are judged too: the first two graded 1, the rest 0, about 42 judgements per query;
* test: SciFact's own test queries and judgements, unchanged; the corpus is SciFact's (linked).

    PYTHONPATH=. .venv/bin/python bench/make_graded_dataset.py --out /tmp/scifact-graded
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import dashrag  # noqa: E402
from dashrag.evaluation.beir import load_split  # noqa: E402
from dashrag.finetuning.negatives import WHOLE_DOCUMENTS  # noqa: E402
from dashrag.presets import load_preset  # noqa: E402

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
GRADE_ONE = 2  # the first non-positive BM25 documents of a query graded 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=2590, help="training queries in all")
    parser.add_argument("--depth", type=int, default=41, help="BM25 documents judged per query")
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args()

    train, test = load_split(args.scifact, "train"), load_split(args.scifact, "test")
    corpus = dashrag.Corpus.from_beir(args.scifact)
    titled = [d for d in corpus if d.title and len(d.title.split()) >= 4]
    test_judged = {doc for judged in test.qrels.values() for doc in judged}
    candidates = [d for d in titled if d.id not in test_judged]
    random.Random(args.seed).shuffle(candidates)
    queries = dict(train.queries)
    positives = {q: dict.fromkeys(judged, 2) for q, judged in train.qrels.items()}
    for document in candidates[:max(0, args.queries - len(queries))]:
        queries[f"title-{document.id}"] = document.title
        positives[f"title-{document.id}"] = {document.id: 2}

    with tempfile.TemporaryDirectory(prefix="graded-") as work:
        tree = dashrag.build(load_preset("keyword"), corpus, Path(work), chunker=WHOLE_DOCUMENTS)
        ids = list(queries)
        qrels: dict[str, dict[str, int]] = {}
        for start in range(0, len(ids), 256):
            batch = ids[start:start + 256]
            for query_id, (chunks, _) in zip(batch, tree.retrieve_batch([queries[q] for q in batch],
                                                                        top_k=args.depth + 5)):
                judged = dict(positives[query_id])
                ranked = [d for d in dict.fromkeys(c.document_id for c in chunks) if d not in judged][:args.depth]
                judged.update({d: 1 if i < GRADE_ONE else 0 for i, d in enumerate(ranked)})
                qrels[query_id] = judged
        tree.close()

    out = args.out
    if out.exists():
        shutil.rmtree(out)
    (out / "qrels").mkdir(parents=True)
    (out / "corpus.jsonl.gz").symlink_to((args.scifact / "corpus.jsonl.gz").resolve())
    with (out / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for query_id, text in {**queries, **test.queries}.items():
            handle.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    with (out / "qrels" / "train.tsv").open("w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        for query_id, judged in qrels.items():
            handle.writelines(f"{query_id}\t{doc}\t{grade}\n" for doc, grade in judged.items())
    shutil.copyfile(args.scifact / "qrels" / "test.tsv", out / "qrels" / "test.tsv")
    grades = [g for judged in qrels.values() for g in judged.values()]
    print(json.dumps({"out": str(out), "train_queries": len(qrels), "judgements": len(grades),
                      "grade_2": grades.count(2), "grade_1": grades.count(1), "grade_0": grades.count(0),
                      "test_queries": len(test.queries)}))


if __name__ == "__main__":
    main()
