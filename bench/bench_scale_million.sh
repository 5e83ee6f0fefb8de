#!/usr/bin/env bash
# Load, add 10 and remove 10 at a million documents (docs/scale.md, "Chunk columns in the snapshot"): one build with
# this checkout's code; then this checkout and BEFORE (another checkout's dashrag, e.g. `git archive REV dashrag |
# tar -x -C BEFORE`) each, in place: load twice (a fresh process each), add 10, load once more, remove 10. BEFORE
# builds its own tree from the same corpus (two 1M builds). Each phase's JSON and `uptime`.
#   flock /tmp/team/bench.lock nice bash bench/bench_scale_million.sh BEFORE WORK [DOCUMENTS]
# WORK needs ~15 GB free at 1M (the corpus, two saved trees and what an update adds); remove it afterwards.
set -euo pipefail
BEFORE=$(realpath "$1"); W=$2; N=${3:-1000000}
AFTER=$(cd "$(dirname "$0")/.." && pwd); PY=$AFTER/.venv/bin/python; B=$AFTER/bench/bench_scale.py
mkdir -p "$W"
phase() { local code=$1; shift; echo "== $(date -u +%T) $code $* | $(uptime)"; PYTHONPATH=$code nice -n 10 "$PY" "$B" --library dashrag "$@"; }
echo "start $(date -u +%T) $(uptime)"
[ -f "$W/corpus.jsonl" ] || PYTHONPATH=$AFTER "$PY" -c "
import sys; sys.path.insert(0, '$AFTER/bench'); from pathlib import Path; import bench_scale
bench_scale.make_corpus(Path('$W/corpus.jsonl'), $N)"
[ -d "$W/T" ] || phase "$AFTER" --phase build --corpus "$W/corpus.jsonl" --folder "$W/T"
# BEFORE builds its own tree: a folder saved with the keyword segments (docs/scale.md) is not readable by code
# from before them, so the copy BEFORE used to resave would not load
[ -d "$W/B" ] || phase "$BEFORE" --phase build --corpus "$W/corpus.jsonl" --folder "$W/B"
side_phases() { local code=$1 f=$2
  phase "$code" --phase query --folder "$f" --queries 3
  phase "$code" --phase query --folder "$f" --queries 3
  phase "$code" --phase add --folder "$f" --size "$N"
  phase "$code" --phase query --folder "$f" --queries 3
  phase "$code" --phase remove --folder "$f" --size "$N"
}
side_phases "$AFTER" "$W/T"
side_phases "$BEFORE" "$W/B"
echo "end $(date -u +%T) $(uptime)"
