"""What writing an update's store costs, alone: the old store file copied and changed, against a delta over it.

An update of a saved tree writes its new corpus to a new store file beside the old one (the old one's readers keep
reading it). Before store deltas that was a byte copy of the old file changed in one transaction, linear in the
store's bytes; an update that only adds documents now writes a delta (``store/segments.py``): the added rows, the
old file as its base. Both run here on one store file of the synthetic corpus of ``bench_scale.py`` (SciFact's
sentences recombined, seeded), adding the same 10 documents, interleaved, ``--repeats`` times each:

  whole   ``write_changed_store_file`` into another folder: a delta must lie beside its base, so this takes the
          whole-file path, which is what every update took before (copy the bytes, change the copy, commit)
  delta   ``write_changed_store_file`` beside the old file: the delta path

and then the seconds of reading the chunk set back from each (what the next load reads).

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/bench_store_change.py --sizes 100000 1000000 --work DIR

Figures are wall seconds on a shared machine: the load average is written beside each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import added_documents, make_corpus  # noqa: E402


def store_of(corpus: Path, folder: Path) -> tuple[Path, int]:
    """The store file of the corpus, whole documents as chunks (the keyword preset's), as a build writes it; and
    its largest chunk id."""
    from dashrag.api import prepare_corpus
    from dashrag.store.sqlite_reader import sqlite_path

    infra = prepare_corpus(corpus, folder, {"component": "WholeDocumentChunker", "params": {}})
    path = sqlite_path(infra.store_url or "")
    assert path is not None
    return path, int(infra.chunks.ids.max())


def one_change(source: Path, target: Path, first_id: int) -> float:
    from dataclasses import replace

    from dashrag.chunkers.whole_document import WholeDocumentChunker
    from dashrag.store.store import write_changed_store_file

    documents = added_documents(0)
    chunks = [replace(c, id=first_id + i) for i, c in enumerate(WholeDocumentChunker({}).chunk(documents))]
    start = time.perf_counter()
    write_changed_store_file(source, target, [], documents, chunks, "f" * 64)
    return time.perf_counter() - start


def read_back(path: Path) -> float:
    from dashrag.documents.chunk_set import StoredChunks
    from dashrag.store.sqlite_reader import read_sqlite_chunk_set

    start = time.perf_counter()
    chunks = read_sqlite_chunk_set(path, "f" * 64).chunks
    seconds = time.perf_counter() - start
    assert isinstance(chunks, StoredChunks)
    chunks.texts.close()  # type: ignore[attr-defined]  # an SQLite store's: SqliteChunkTexts
    return seconds


def measure(size: int, work: Path, repeats: int) -> dict:
    corpus = work / f"corpus-{size}.jsonl"
    make_corpus(corpus, size)
    here, elsewhere = work / "tree", work / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    source, top = store_of(corpus, here)
    corpus.unlink()
    seconds: dict[str, list[float]] = {"whole": [], "delta": []}
    reads: dict[str, list[float]] = {"whole": [], "delta": []}
    for _ in range(repeats):
        for kind, folder in (("whole", elsewhere), ("delta", here)):
            target = folder / "store-ffffffffffffffff.sqlite"
            seconds[kind].append(round(one_change(source, target, top + 1), 3))
            reads[kind].append(round(read_back(target), 3))
            target.unlink()
    row = {"documents": size, "store_mib": round(source.stat().st_size / 2**20, 1), "write_s": seconds,
           "read_back_s": reads, "ratio_of_best": round(min(seconds["delta"]) / min(seconds["whole"]), 4),
           "load_average": round(os.getloadavg()[0], 2)}
    shutil.rmtree(here)
    shutil.rmtree(elsewhere)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    args = parser.parse_args()
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench-store-change-", dir=args.work) as tmp:
            print(json.dumps(measure(size, Path(tmp), args.repeats)), flush=True)


if __name__ == "__main__":
    main()
