#!/usr/bin/env bash
# Set-up + the main job: install into .venv, build the `keyword` tree on examples/corpus,
# answer a few example queries, print the ranked chunks and the trace tree.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python examples/quickstart.py "$@"
