#!/usr/bin/env bash
# Set-up + the whole test suite: install into .venv, then run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# The web page's browser tests drive Debian's chromium (Playwright's browser download is unreachable).
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
    elif command -v sudo >/dev/null 2>&1; then
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
    else
        echo "warning: /usr/bin/chromium is missing and cannot be installed here: tests/web will fail" >&2
    fi
fi
# dashrag's and the tests' bytecode, compiled once into their (git-ignored) __pycache__ folders: where
# PYTHONDONTWRITEBYTECODE is set (this machine, many CI images) Python writes none, so every process a test starts
# (a CLI command, `dashrag serve`, a build job's worker, each xdist worker) would compile the same modules again
# (docs/testing.md, "Fourth pass: CLI, core and the rest"). Nothing is written outside the checkout.
.venv/bin/python -m compileall -q dashrag tests component_services >/dev/null
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Two pytest-xdist workers (docs/testing.md), a test file's tests on one worker so that its module fixtures
# are built once. The user's own -n / --numprocesses / -p no:xdist wins; so does their --dist (given last).
# The files go out in the collection's order, the files holding slow tests first (tests/conftest.py), not in
# xdist's own (most tests first), which left a heavy file of few tests to run alone at the end.
workers=(-n 2 --dist loadfile --no-loadscope-reorder)
for arg in "$@"; do
    case "$arg" in
        -n | -n* | --numprocesses | --numprocesses=* | no:xdist | -pno:xdist) workers=() ;;
    esac
done
# Only the pytest plugins the tests use. Autoloaded, every installed one would load in each process, and pytest
# would assertion-rewrite every module of each package that ships one (langchain-tests brings langsmith, syrupy,
# pytest-benchmark and more: ~630 library modules rewritten on import, ~4.5 s of CPU a worker; docs/testing.md).
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
plugins=(-p xdist -p timeout -p hypothesispytest -p anyio -p schemathesis)
exec .venv/bin/python -m pytest "${plugins[@]}" "${workers[@]}" "$@"
