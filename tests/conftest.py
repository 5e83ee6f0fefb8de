"""Shared fixtures: the shipped example corpus and a SciFact subset read from ../shared/data."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_CORPUS = REPO / "examples" / "corpus"
SCIFACT = REPO.parent / "shared" / "data" / "scifact"


@pytest.fixture(scope="session")
def example_corpus():
    import dashrag

    return dashrag.Corpus.from_folder(EXAMPLE_CORPUS)


@pytest.fixture(scope="session")
def scifact_dir() -> Path:
    if not (SCIFACT / "corpus.jsonl.gz").is_file():
        pytest.fail(f"SciFact data missing at {SCIFACT} (the project reads it from ../shared/data)")
    return SCIFACT


@pytest.fixture(scope="session")
def scifact_subset_file(tmp_path_factory, scifact_dir) -> Path:
    """The first 400 SciFact documents as a BEIR corpus.jsonl (fast to fit, real text)."""
    path = tmp_path_factory.mktemp("scifact") / "corpus.jsonl"
    with gzip.open(scifact_dir / "corpus.jsonl.gz", "rt", encoding="utf-8") as src, open(path, "w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            if i == 400:
                break
            dst.write(line)
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def folder_digest(folder: Path) -> dict[str, str]:
    """The sha256 of every file under ``folder`` (by relative path): equal before and after = nothing written."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}
