"""One cold `dashrag query` on a saved keyword tree of SciFact, against a cold bm25s script.

Each run is a whole new process, as a user meets it: interpreter start, imports,
loading the saved index from disk, analysing the query, top-10, printing JSON.

  dashrag  ``dashrag query DIR "text" --json`` on the `keyword` preset (BM25 Lucene, English
           stop words, Snowball stemming) built with WholeDocumentChunker
  bm25s    bench/peer_bm25s_query.py: ``bm25s.BM25.load(DIR, load_corpus=True)``, the same
           tokenization, retrieve k=10, print JSON

The runs alternate (dashrag, bm25s, bm25s, dashrag, ...) so a busy moment on the shared
machine hits both alike; both run from compiled bytecode, as pip installs them; reported: median
wall seconds and median peak RSS (the child's own ``ru_maxrss`` from ``os.wait4``), and their ratios.
The indexes are built once into --workdir. Run under ``nice``:

    .venv/bin/python bench/bench_cold_query.py [--runs 9] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
QUERY = "Vitamin D deficiency increases the risk of cancer"


def build_indexes(data: Path, work: Path) -> tuple[Path, Path]:
    """The saved dashrag tree and the saved bm25s index (with its corpus), built once, each in a child process.

    Not in this process: a child's ``ru_maxrss`` counts the pages it shares with this process
    until it execs, so a bench process grown by building an index (114 MiB) floored both
    peaks at its own size (both read 114.0 MiB)."""
    dashrag_dir, bm25s_dir = work / "dashrag_keyword", work / "bm25s_index"
    if not (dashrag_dir / "dashrag.json").is_file():
        subprocess.run([sys.executable, "-m", "dashrag.cli.main", "index", "keyword", "--corpus", str(data),
                        "--chunker", "WholeDocumentChunker", "--out", str(dashrag_dir)], check=True, cwd=REPO,
                       stdout=subprocess.DEVNULL)
    if not (bm25s_dir / "params.index.json").is_file():
        subprocess.run([sys.executable, __file__, "--build-bm25s", str(bm25s_dir), "--data", str(data)], check=True)
    return dashrag_dir, bm25s_dir


def build_bm25s(data: Path, bm25s_dir: Path) -> None:
    if not (bm25s_dir / "params.index.json").is_file():
        import bm25s
        import Stemmer

        import dashrag

        corpus = dashrag.Corpus.from_beir(data)
        texts = [f"{d.title}\n\n{d.text}" if d.title else d.text for d in corpus]
        index = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        index.index(bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False),
                    show_progress=False)
        index.save(str(bm25s_dir), corpus=[{"id": d.id, "text": t} for d, t in zip(corpus, texts)])


def run_once(command: list[str], env: dict[str, str] | None = None, cwd: Path = REPO) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of one whole process, started in ``cwd``."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, cwd=cwd, env=env)
        assert process.stdout is not None
        out = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak RSS (communicate() would reap it)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{command[:3]} failed: {err.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out.decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--workdir", type=Path, default=REPO / ".dashrag-work" / "bench_cold_query")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--baseline", type=Path, help="also run the query with the dashrag package in this folder "
                        "first on PYTHONPATH (another checkout's sources: before / after, interleaved)")
    parser.add_argument("--build-bm25s", type=Path, help=argparse.SUPPRESS)  # the child that builds the peer index
    args = parser.parse_args()
    if args.build_bm25s:
        build_bm25s(args.data, args.build_bm25s)
        return
    dashrag_dir, bm25s_dir = build_indexes(args.data, args.workdir)
    # pip compiles an installed package's bytecode (bm25s's is in site-packages); an editable checkout
    # under PYTHONDONTWRITEBYTECODE (this machine) would compile dashrag's sources on every run instead
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "dashrag")], check=True,
                   stdout=subprocess.DEVNULL)
    commands = {
        "dashrag": [str(Path(sys.executable).with_name("dashrag")), "query", str(dashrag_dir), QUERY, "--json"],
        "bm25s": [sys.executable, str(REPO / "bench" / "peer_bm25s_query.py"), str(bm25s_dir), QUERY],
    }
    envs: dict[str, dict[str, str] | None] = {name: None for name in commands}
    cwds = {name: REPO for name in commands}
    if args.baseline:
        commands["baseline"] = [sys.executable, "-m", "dashrag.cli.main", "query", str(dashrag_dir), QUERY, "--json"]
        envs["baseline"] = {**os.environ, "PYTHONPATH": str(args.baseline.resolve())}
        # started there: `python -m` puts its folder first on sys.path, and the checkout's would win
        cwds["baseline"] = args.baseline.resolve()
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.baseline / "dashrag")], check=True,
                       stdout=subprocess.DEVNULL)
    samples: dict[str, dict[str, list[float]]] = {name: {"wall_s": [], "rss_mib": []} for name in commands}
    answers = {}
    for _ in range(2):  # warm the page cache for both, unmeasured
        for name, command in commands.items():
            answers[name] = json.loads(run_once(command, envs[name], cwds[name])[2])
    for i in range(args.runs):
        order = list(commands) if i % 2 == 0 else list(reversed(commands))
        for name in order:
            wall, rss, _ = run_once(commands[name], envs[name], cwds[name])
            samples[name]["wall_s"].append(wall)
            samples[name]["rss_mib"].append(rss)
    rows = {name: {key: round(statistics.median(values), 3) for key, values in series.items()}
            for name, series in samples.items()}
    ratios = {f"{name}_{key}": rows[name][f"{key}_s" if key == "wall" else "rss_mib"]
              / rows["bm25s"][f"{key}_s" if key == "wall" else "rss_mib"]
              for name in rows if name != "bm25s" for key in ("wall", "rss")}
    # bm25s removes its own English stop-word list, dashrag scikit-learn's: the lists differ a little
    overlap = len({r["document_id"] for r in answers["dashrag"]["results"]}
                  & {r["document_id"] for r in answers["bm25s"]["results"]})
    print(f"{args.runs} runs each, interleaved; median wall seconds and peak RSS")
    for name, row in rows.items():
        print(f"{name:8} {row['wall_s']:7.3f} s {row['rss_mib']:7.1f} MiB")
    for name in rows:
        if name != "bm25s":
            print(f"{name} / bm25s: wall {ratios[name + '_wall']:.2f}x, peak RSS {ratios[name + '_rss']:.2f}x "
                  "(<1 is better)")
    if "baseline" in answers:
        print(f"dashrag's answer equals the baseline's: {answers['dashrag'] == answers['baseline']}")
    load = os.getloadavg()
    print(f"top-10 documents in common with bm25s: {overlap}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "ratios": ratios, "samples": samples, "top10_overlap": overlap,
                                         "load_average": load}, indent=2) + "\n")


if __name__ == "__main__":
    main()
