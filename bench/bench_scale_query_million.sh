#!/usr/bin/env bash
# Query p50/p99 (one at a time) and a batch's ms per query at a million documents (docs/scale.md, "Goals"): dashrag's
# `keyword` tree against bm25s on the same texts, with this checkout's code. bench_scale.py's phases, each in a fresh
# process: `make_corpus`, one `--phase build` per library, then `--phase query` alternating dashrag, bm25s, dashrag,
# bm25s (the load is in each: `load_s`). Each phase's JSON and `uptime`.
#   flock /tmp/team/bench.lock nice -n 10 bash bench/bench_scale_query_million.sh WORK [DOCUMENTS] [QUERIES]
# WORK needs ~8 GB free at 1M (the corpus and the two saved indexes); remove it afterwards.
set -euo pipefail
W=$1; N=${2:-1000000}; Q=${3:-300}
CODE=$(cd "$(dirname "$0")/.." && pwd); PY=$CODE/.venv/bin/python; B=$CODE/bench/bench_scale.py
mkdir -p "$W"
phase() { echo "== $(date -u +%T) $* | $(uptime)"; PYTHONPATH=$CODE nice -n 10 "$PY" "$B" "$@"; }
echo "start $(date -u +%T) $(uptime)"
[ -f "$W/corpus.jsonl" ] || PYTHONPATH=$CODE "$PY" -c "
import sys; sys.path.insert(0, '$CODE/bench'); from pathlib import Path; import bench_scale
bench_scale.make_corpus(Path('$W/corpus.jsonl'), $N)"
for library in dashrag bm25s; do
  [ -d "$W/$library" ] || phase --library "$library" --phase build --corpus "$W/corpus.jsonl" --folder "$W/$library"
done
for _ in 1 2; do
  for library in dashrag bm25s; do phase --library "$library" --phase query --folder "$W/$library" --queries "$Q"; done
done
echo "end $(date -u +%T) $(uptime)"
