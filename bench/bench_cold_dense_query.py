"""One cold `dashrag query` on a saved `hybrid` tree of SciFact, against a cold sentence-transformers script.

Each run is a whole new process, as a user meets it: interpreter start, imports, loading,
embedding the query, top-10, printing JSON.

  dashrag  ``dashrag query DIR "text" --json`` on the `hybrid` preset (BM25 + MiniLM, round-robin)
           built with WholeDocumentChunker: the query is embedded by the float32 ONNX export saved in
           the tree (docs/dense.md, "Queries without torch"); torch is not imported
  peer     bench/peer_sentence_transformers_query.py: import torch and sentence-transformers, load the
           same packaged MiniLM, encode the query, top 10 of the tree's own saved document vectors

The dashrag process does more than the peer (it also loads and runs BM25 and fuses); the peer is
what the cold query cost before the export (1.0x, issue 29). The runs alternate so a busy moment
on the shared machine hits both alike; reported: median wall seconds and median peak RSS (the
child's own ``ru_maxrss``), their ratios, and whether the dense child's top 10 equals the peer's.
The tree is built once into --workdir (embedding SciFact with torch: minutes). Run under ``nice``:

    .venv/bin/python bench/bench_cold_dense_query.py [--runs 9] [--documents N] [--json OUT]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench_cold_query import QUERY, REPO, SCIFACT, run_once


def corpus_file(data: Path, work: Path, documents: int | None) -> Path:
    """SciFact's corpus, or its first ``documents`` documents as a corpus.jsonl (embedding all 5,183 with
    torch takes 4.5 minutes on an idle machine, over an hour on a loaded one)."""
    if documents is None:
        return data
    target = work / f"scifact_first_{documents}" / "corpus.jsonl"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(data / "corpus.jsonl.gz", "rt", encoding="utf-8") as src:
            target.write_text("".join(line for _, line in zip(range(documents), src)), encoding="utf-8")
    return target


def build_tree(corpus: Path, work: Path, documents: int | None) -> Path:
    """The saved hybrid tree (in a child process: a child's peak RSS counts pages shared with this one)."""
    tree = work / ("dashrag_hybrid" if documents is None else f"dashrag_hybrid_{documents}")
    if not (tree / "dashrag.json").is_file():
        subprocess.run([sys.executable, "-m", "dashrag.cli.main", "index", "hybrid", "--corpus", str(corpus),
                        "--chunker", "WholeDocumentChunker", "--out", str(tree)], check=True, cwd=REPO,
                       stdout=subprocess.DEVNULL)
    return tree


def peer_inputs(tree: Path) -> tuple[Path, Path]:
    """The tree's saved document vectors and their document ids, where the peer script reads them."""
    vectors, ids = tree.with_name(tree.name + "_peer_vectors.npy"), tree.with_name(tree.name + "_peer_ids.json")
    if not ids.is_file():
        subprocess.run([sys.executable, "-c", EXPORT_PEER_INPUTS, str(tree), str(vectors), str(ids)], check=True,
                       cwd=REPO)
    return vectors, ids


EXPORT_PEER_INPUTS = """
import json, sys
import numpy as np
import dashrag
tree = dashrag.load(sys.argv[1])
dense = tree.get_children()[1]
np.save(sys.argv[2], np.asarray(dense.vectors))
json.dump([c.document_id for c in dense.require_infra().chunks.chunks], open(sys.argv[3], "w"))
"""


def ids_of(path: Path) -> list[str]:
    return json.loads(path.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--workdir", type=Path, default=REPO / ".dashrag-work" / "bench_cold_dense_query")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--documents", type=int, help="only the first N SciFact documents (default: all)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tree = build_tree(corpus_file(args.data, args.workdir, args.documents), args.workdir, args.documents)
    vectors, ids = peer_inputs(tree)
    commands = {
        "dashrag": [str(Path(sys.executable).with_name("dashrag")), "query", str(tree), QUERY, "--json", "--trace"],
        "sentence-transformers": [sys.executable, str(REPO / "bench" / "peer_sentence_transformers_query.py"),
                                  str(vectors), str(ids), QUERY],
    }
    samples: dict[str, dict[str, list[float]]] = {name: {"wall_s": [], "rss_mib": []} for name in commands}
    answers = {}
    for _ in range(2):  # warm the page cache for both, unmeasured
        for name, command in commands.items():
            answers[name] = json.loads(run_once(command)[2])
    for i in range(args.runs):
        for name in (list(commands) if i % 2 == 0 else list(reversed(commands))):
            wall, rss, _ = run_once(commands[name])
            samples[name]["wall_s"].append(wall)
            samples[name]["rss_mib"].append(rss)
    rows = {name: {key: round(statistics.median(values), 3) for key, values in series.items()}
            for name, series in samples.items()}
    peer = rows["sentence-transformers"]
    ratios = {"wall": rows["dashrag"]["wall_s"] / peer["wall_s"], "rss": rows["dashrag"]["rss_mib"] / peer["rss_mib"]}
    dense_node = answers["dashrag"]["trace"]["children"][1]
    dense_top = [hit["document_id"] for hit in dense_node["output"]]
    peer_top = [hit["document_id"] for hit in answers["sentence-transformers"]["results"]][:len(dense_top)]
    load = os.getloadavg()
    print(f"{len(ids_of(ids))} documents; {args.runs} runs each, interleaved; median wall seconds and peak RSS; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    for name, row in rows.items():
        print(f"{name:22} {row['wall_s']:7.3f} s {row['rss_mib']:7.1f} MiB")
    print(f"dashrag / sentence-transformers: wall {ratios['wall']:.2f}x, peak RSS {ratios['rss']:.2f}x (<1 is better); "
          f"dense top-{len(dense_top)} equals the peer's: {dense_top == peer_top}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "ratios": ratios, "samples": samples, "load_average": load,
                                         "dense_top_equal": dense_top == peer_top}, indent=2) + "\n")


if __name__ == "__main__":
    main()
