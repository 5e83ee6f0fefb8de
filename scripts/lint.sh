#!/usr/bin/env bash
# The code checks .ci/run runs before the tests (docs/design.md, "Checks"):
#   ruff check   pyflakes, pycodestyle, isort, bugbear, pyupgrade ([tool.ruff] in pyproject.toml)
#   mypy         types, with the pydantic plugin and check_untyped_defs ([tool.mypy])
#   lint-imports the layers as import contracts ([tool.importlinter])
# Every check runs even when an earlier one fails; the exit status is non-zero if any failed.
# Needs the test extras (bash scripts/install.sh). Fix most ruff findings with `.venv/bin/ruff check --fix`.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN="${DASHRAG_LINT_BIN:-.venv/bin}"
for tool in ruff mypy lint-imports; do
    if [ ! -x "$BIN/$tool" ]; then
        echo "lint: $BIN/$tool is missing; run: bash scripts/install.sh (the tools are in the test extras)" >&2
        exit 1
    fi
done
failed=()
run() {
    local name="$1"; shift
    echo "== $name: $*"
    if "$@"; then echo "-- $name: ok"; else echo "-- $name: FAILED"; failed+=("$name"); fi
}
run ruff "$BIN/ruff" check --no-cache --output-format concise .
run mypy "$BIN/mypy"
run import-contracts "$BIN/lint-imports" --no-cache
if [ "${#failed[@]}" -gt 0 ]; then
    echo "lint failed: ${failed[*]}"
    exit 1
fi
echo "lint: all checks passed"
