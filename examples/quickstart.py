"""The first thing to run: build a retriever tree from a preset, query it, save it, load it.

    bash scripts/example.sh            # the `keyword` preset (BM25) on examples/corpus
    bash scripts/example.sh hybrid_rrf # any preset in components/, or a JSON file
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from rich.console import Console

import dashrag
from dashrag.cli.config_files import resolve_config
from dashrag.cli.output import print_table
from dashrag.core.trace import format_trace

HERE = Path(__file__).resolve().parent
QUERIES = [
    "how does BM25 saturate term frequency?",
    "combine keyword and embedding rankings",
    "why filter before choosing the top results",
]


def main(preset: str = "keyword") -> None:
    console = Console()
    config = resolve_config(preset)
    corpus = dashrag.Corpus.from_folder(HERE / "corpus")
    with tempfile.TemporaryDirectory() as work:
        retriever = dashrag.build(config, corpus, Path(work) / "build")
        console.print(f"[bold]{preset}[/bold]: {retriever.render_representation()}  "
                      f"({len(corpus)} documents, {len(retriever.require_infra().chunks)} chunks)")
        for query in QUERIES:
            chunks, trace = retriever.retrieve(query)
            print_table(console, query, chunks)
            console.print(format_trace(trace), highlight=False)
        saved = retriever.save(Path(work) / "saved")
        reloaded = dashrag.load(saved)
        same = all(reloaded.retrieve(q)[0] == retriever.retrieve(q)[0] for q in QUERIES)
        console.print(f"saved to a folder and loaded back without refitting: identical answers = {same}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
