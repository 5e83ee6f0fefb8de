"""Contextual chunks, measured (issue 35): does beginning each chunk with ``Title › Section`` help retrieval?

SciFact abstracts rendered to files as in ``bench_documents_quality.py`` (title as heading, abstract as body),
read by ``Corpus.from_folder``, and the same documents from ``corpus.jsonl``; each corpus indexed by the same
preset with ``StructureChunker`` at each ``--chunk-size``, once plain and once ``contextual``, the test queries
run, the hits pooled per document (a document's best chunk) and nDCG@10 taken. At 2000 characters an abstract
is one chunk (the header adds the title once more); at a small size an abstract is several chunks and only the
first holds the title, unless the header puts it into every one.

    nice .venv/bin/python bench/bench_contextual_chunks.py \
        [--documents 5183] [--formats html pdf] [--chunk-size 2000 300] [--preset keyword] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench_documents_quality import RENDER, ndcg, scifact_subset

from dashrag.documents.corpus import Corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=5183)
    parser.add_argument("--formats", nargs="+", default=["html", "pdf"], choices=sorted(RENDER))
    parser.add_argument("--chunk-size", nargs="+", type=int, default=[2000, 300])
    parser.add_argument("--preset", default="keyword")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    documents, queries, qrels = scifact_subset(args.documents)
    figures: dict = {"documents": len(documents), "queries": len(queries), "preset": args.preset,
                     "load_average": os.getloadavg(), "ndcg@10": {}}
    with tempfile.TemporaryDirectory(prefix="bench-contextual-") as tmp:
        root = Path(tmp)
        corpora = {"jsonl": Corpus(tuple(documents))}
        for kind in args.formats:
            folder = root / kind
            folder.mkdir()
            for doc in documents:
                RENDER[kind](doc, folder / f"{doc.id}.{kind}")
            corpora[kind] = Corpus.from_folder(folder)
            print(kind, corpora[kind].summary(), flush=True)
        for size in args.chunk_size:
            for name, corpus in corpora.items():
                for contextual in (False, True):
                    chunker = {"component": "StructureChunker",
                               "params": {"chunk_size": size, "chunk_overlap": size // 10, "contextual": contextual}}
                    started = time.perf_counter()
                    score = ndcg(corpus, args.preset, chunker, queries, qrels, root / f"w-{size}-{name}-{contextual}")
                    key = f"{name} {size} {'contextual' if contextual else 'plain'}"
                    figures["ndcg@10"][key] = round(score, 4)
                    print(key, round(score, 4), f"{time.perf_counter() - started:.0f} s", flush=True)
    figures["load_average_after"] = os.getloadavg()
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
