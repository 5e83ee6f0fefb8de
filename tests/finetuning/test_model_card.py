"""The model card: written with the library versions, read back only from a folder dashrag trained."""

from __future__ import annotations

import json

import pytest

from dashrag.errors import PersistenceError
from dashrag.finetuning.model_card import CARD_FORMAT, CARD_NAME, read_card, write_card


def test_a_written_card_reads_back_with_its_format_and_library_versions(tmp_path):
    write_card(tmp_path, {"kind": "embedding", "figures": {"train_loss": 0.5}})
    card = read_card(tmp_path)
    assert card["format"] == CARD_FORMAT and card["figures"] == {"train_loss": 0.5}
    assert set(card["libraries"]) == {"dashrag", "sentence-transformers", "transformers", "torch"}


def test_a_folder_without_a_card_is_not_a_dashrag_model(tmp_path):
    with pytest.raises(PersistenceError, match="not a model folder written by `dashrag finetune`"):
        read_card(tmp_path)


def test_a_card_of_another_format_is_refused(tmp_path):
    (tmp_path / CARD_NAME).write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(PersistenceError, match="not a dashrag model card"):
        read_card(tmp_path)
