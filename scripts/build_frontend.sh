#!/usr/bin/env bash
# Builds the web page into dashrag/web/static/ (committed, so users and CI need no Node):
# npm ci installs exactly what frontend/package-lock.json pins, then esbuild bundles the sources.
# Rerun after any change under frontend/; tests/web/test_bundle.py fails while the bundle is stale.
set -euo pipefail
cd "$(dirname "$0")/../frontend"
npm ci --no-audit --no-fund
node build.mjs
