#!/usr/bin/env bash
# Set-up + the whole test suite: install into .venv, then run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
