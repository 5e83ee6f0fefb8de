#!/usr/bin/env bash
# Creates .venv in the repo root and installs dashrag with its test extras.
# torch is pinned to the CPU build (2.13.0): an unpinned torch pulls a multi-GB CUDA build.
# Re-running is cheap: the install is skipped while pyproject.toml is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=".venv/.dashrag-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet "torch==2.13.0" -e ".[test]"
    echo "$want" > "$stamp"
fi
