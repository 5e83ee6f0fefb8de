"""Shared fixtures: the real SciFact folder, and a small real hybrid run over a SciFact subset."""

from __future__ import annotations

from pathlib import Path

import pytest

from .hybrid_fixture import HybridRun, build_hybrid_run

SCIFACT = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"


@pytest.fixture(scope="session")
def scifact_dir() -> Path:
    if not (SCIFACT / "qrels" / "test.tsv").is_file():
        pytest.skip(f"SciFact not found at {SCIFACT}")
    return SCIFACT


@pytest.fixture(scope="session")
def hybrid_run(scifact_dir) -> HybridRun:
    """BM25 and TF-IDF children fused by RRF over a SciFact subset, with one trace per query."""
    return build_hybrid_run(scifact_dir)
