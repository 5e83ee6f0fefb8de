"""Session set-up for every test: offline model hubs, the example corpus, the shared fixture plugins."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Under pytest-xdist each worker gets its share of the cores for torch's and OpenMP's thread pools (set here,
# before anything imports torch; inherited by the CLI and server processes a test starts). Left at their
# default, two workers each ran one thread per core: four threads on two cores, spinning against each other
# (docs/testing.md, "What changed"). A value the user set wins.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_CORPUS = REPO / "examples" / "corpus"
SCIFACT = REPO.parent / "shared" / "data" / "scifact"

# Shared fixtures live in tests/fixtures/ and are plugins, so a test names them without importing them.
pytest_plugins = ["tests.fixtures.scifact", "tests.fixtures.models", "tests.fixtures.servers",
                  "tests.fixtures.postgres", "tests.fixtures.qdrant", "tests.fixtures.qdrant_local_mode",
                  "tests.fixtures.finetuning", "tests.fixtures.recording", "tests.fixtures.cpu_time"]


@pytest.fixture(scope="session")
def example_corpus():
    import dashrag

    return dashrag.Corpus.from_folder(EXAMPLE_CORPUS)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def folder_digest(folder: Path) -> dict[str, str]:
    """The sha256 of every file under ``folder`` (by relative path): equal before and after = nothing written."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


# Fixtures that put a real model to work over a corpus subset: a test using one is slow (seconds to a
# minute here). `pytest -m "not slow"` is the quick loop; CI and scripts/test.sh run everything.
MODEL_FIXTURES = frozenset({"subset", "cross_encoder_dir", "second_cross_encoder_dir", "unnormalised_minilm_dir"})
# Fixtures that make every test using them slow too: a headless Chromium driving a served page (tests/web), and
# models fine-tuned by the real CLI (tests/fixtures/finetuning.py). Other slow tests are marked where they are
# written; docs/testing.md says how they were chosen.
SLOW_FIXTURES = MODEL_FIXTURES | {"browser", "trained_twice"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        parametrized = set(callspec.params) if callspec is not None else set()  # a parameter named alike
        if SLOW_FIXTURES & (set(getattr(item, "fixturenames", ())) - parametrized):
            item.add_marker(pytest.mark.slow)
    items[:] = slow_files_first(items)


def slow_files_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The files that hold a slow test first, then the others, each file's tests in their own order.

    Under ``--dist loadfile`` (scripts/test.sh) a worker that finishes a file takes the next one in this order, so
    the files run last are quick ones and the two workers end within seconds of each other: pytest-xdist's own
    order (most tests first) put the heavy files of few tests (a browser, a served tree, a kill loop) last, and one
    worker ran such a file alone while the other had finished (docs/testing.md, "Fifth pass: CLI, core and the
    rest")."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    return sorted(items, key=lambda item: item.path not in slow_files)  # stable: the order within each group stays
