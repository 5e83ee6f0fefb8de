#!/usr/bin/env bash
# Creates .venv in the repo root and installs dashrag with its test extras.
# torch is pinned (2.13.0, the version the ONNX query encoder's export is tested with). From PyPI on Linux the
# pin is the CUDA build; for the CPU build install torch first from PyTorch's CPU index (docs/packaging.md).
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
