"""The table and the log-log plot of docs/scale.md, from the JSON bench_scale.py writes.

    .venv/bin/python bench/plot_scale.py bench/results/scale.json docs/scale.png   # prints the Markdown table
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

COLUMNS = [  # (heading, library, phase, field)
    ("build s", "build", "seconds"), ("build peak MiB", "build", "peak_rss_mib"), ("saved MiB", "build", "saved_mib"),
    ("load s", "query", "load_s"), ("query p50 ms", "query", "p50_ms"), ("query p99 ms", "query", "p99_ms"),
    ("batch ms/query", "query", "batch_ms_per_query"),
]


def cell(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def table(rows: list[dict[str, Any]]) -> str:
    headings = [h for h, _, _ in COLUMNS] + ["add 10 s", "remove 10 s", "load avg"]
    lines = ["| documents | library | " + " | ".join(headings) + " |", "|---:|---|" + "---:|" * len(headings)]
    for row in rows:
        for library in ("bm25s", "dashrag"):
            figures = row[library]
            values = [cell(figures[phase][field]) for _, phase, field in COLUMNS]
            changes = [cell(figures[k]["seconds"]) if k in figures else "—" for k in ("add", "remove")]
            load = figures["build"]["load_average"]
            lines.append(f"| {row['documents']:,} | {library} | " + " | ".join(values + changes) + f" | {load} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["documents"] for r in rows]
    figure, (seconds, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
    series = [("bm25s build", "bm25s", "build", "seconds"), ("dashrag build", "dashrag", "build", "seconds"),
              ("dashrag load", "dashrag", "query", "load_s"), ("bm25s load", "bm25s", "query", "load_s"),
              ("dashrag add 10", "dashrag", "add", "seconds"), ("dashrag remove 10", "dashrag", "remove", "seconds")]
    for label, library, phase, field in series:
        seconds.plot(sizes, [r[library][phase][field] for r in rows], marker="o", label=label)
    for library in ("bm25s", "dashrag"):
        memory.plot(sizes, [r[library]["build"]["peak_rss_mib"] for r in rows], marker="o", label=f"{library} build")
    for axes, unit in ((seconds, "seconds"), (memory, "peak RSS, MiB")):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("documents")
        axes.set_ylabel(unit)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    figure.suptitle("keyword tree cost against corpus size (bench/bench_scale.py)")
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def main() -> None:
    rows = json.loads(Path(sys.argv[1]).read_text())["rows"]
    plot(rows, Path(sys.argv[2]))
    print(table(rows))


if __name__ == "__main__":
    main()
