"""The model card dashrag writes into every model folder it trains: ``dashrag-model-card.json``.

It says what the model is (base, kind), what it learnt from (dataset, the splits read, the split
trained on, the dev slice), how (hyperparameters, first stage of the negatives, library versions)
and what it reached (training loss, dev figures of the base and of the result, step times). The
figures are the ones measured during the run, never filled in later.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from dashrag.core.persistence import atomic_directory, atomic_write_json, load_json
from dashrag.errors import PersistenceError

CARD_NAME = "dashrag-model-card.json"
CARD_FORMAT = "dashrag-finetuned-model/1"
VERSIONED = ("dashrag", "sentence-transformers", "transformers", "torch")


def library_versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in VERSIONED}


def write_card(folder: Path, card: dict[str, Any]) -> Path:
    path = Path(folder) / CARD_NAME
    atomic_write_json(path, {"format": CARD_FORMAT, **card, "libraries": library_versions()})
    return path


def save_model_folder(out: Path, model: Any, card: dict[str, Any]) -> None:
    """The trained model and its card, published together by one rename (never a folder without its card)."""
    with atomic_directory(out) as folder:
        model.save(str(folder))
        write_card(folder, card)


def read_card(folder: Path) -> dict[str, Any]:
    """The card of a model folder dashrag trained; a clear error for any other folder."""
    path = Path(folder) / CARD_NAME
    if not path.is_file():
        raise PersistenceError(f"{folder}: no {CARD_NAME}: not a model folder written by `dashrag finetune`")
    card = load_json(path)
    if not isinstance(card, dict) or card.get("format") != CARD_FORMAT:
        raise PersistenceError(f"{path}: not a dashrag model card (format {CARD_FORMAT!r} expected)")
    return card
