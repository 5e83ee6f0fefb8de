"""A small real hybrid run over a SciFact subset (``scifact_dir`` comes from tests/fixtures/scifact.py)."""

from __future__ import annotations

import pytest

from .hybrid_fixture import HybridRun, build_hybrid_run


@pytest.fixture(scope="session")
def hybrid_run(scifact_dir) -> HybridRun:
    """BM25 and TF-IDF children fused by RRF over a SciFact subset, with one trace per query."""
    return build_hybrid_run(scifact_dir)
