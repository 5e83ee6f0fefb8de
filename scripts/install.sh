#!/usr/bin/env bash
# Creates .venv in the repo root and installs dashrag with its test extras.
# torch is pinned (2.13.0, the version the ONNX query encoder's export is tested with). From PyPI on Linux the
# pin is the CUDA build; for the CPU build install torch first from PyTorch's CPU index (docs/packaging.md).
# Re-running is cheap: the install is skipped while pyproject.toml is unchanged.
#
# The packages go in through uv (installed first by the venv's own pip, from the same indexes): uv links each
# file from its cache where pip unpacks every wheel again, ~2 minutes of a clean clone's CI for the same set
# (docs/testing.md, "Seventh pass"). uv reads no pip configuration, so pip's own settings (its indexes,
# find-links, constraints and CA file, from its config files or PIP_* variables) are handed to uv here, and uv
# picks the best version over all indexes as pip does. Bytecode is compiled at install, as pip does.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=".venv/.dashrag-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet "uv==0.13.9"
    pip_settings="$(.venv/bin/python -m pip config list)"
    pip_setting() {  # the value pip uses for setting $1 (a PIP_* variable, printed last, wins over the files)
        sed -n "s/^[^.]*\.$1='\(.*\)'$/\1/p" <<< "$pip_settings" | tail -n 1
    }
    index_url="$(pip_setting index-url)" extra_index_url="$(pip_setting extra-index-url)"
    find_links="$(pip_setting find-links)" constraint="$(pip_setting constraint)" cert="$(pip_setting cert)"
    export UV_INDEX_STRATEGY=unsafe-best-match
    if [ -n "$index_url" ]; then export UV_DEFAULT_INDEX="$index_url"; fi
    if [ -n "$extra_index_url" ]; then export UV_EXTRA_INDEX_URL="$extra_index_url"; fi
    if [ -n "$find_links" ]; then export UV_FIND_LINKS="${find_links// /,}"; fi
    if [ -n "$constraint" ]; then export UV_CONSTRAINT="$constraint"; fi
    if [ -n "$cert" ]; then export SSL_CERT_FILE="$cert"; fi
    # pip itself is brought up to date too, as the install did before uv (the tests drive the venv's pip)
    .venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python --upgrade-package pip \
        pip "torch==2.13.0" -e ".[test]"
    echo "$want" > "$stamp"
fi
