"""``dashrag finetune embedding`` on a tiny SciFact subset: the folder, its card, loading it, reproducibility."""

from __future__ import annotations

import json
import shutil

import numpy as np

from dashrag.embeddings.sentence_transformer import MiniLMEmbedding, SentenceTransformerEmbedding
from dashrag.finetuning.model_card import CARD_NAME, read_card
from tests.fixtures.finetuning import TINY, run_cli

TEXTS = ["Vitamin D deficiency is associated with fractures.", "Aspirin lowers the risk of heart attack."]


def test_the_model_folder_holds_a_card_with_base_data_splits_hyperparameters_and_figures(trained_twice):
    card = read_card(trained_twice.first)
    assert card["kind"] == "embedding"
    assert card["base"]["named"]["component"] == "MiniLMEmbedding"
    assert card["data"]["splits_read"] == ["train"]
    assert card["data"]["trained_on"]["split"] == "train-fit" and card["data"]["dev"]["split"] == "train-dev"
    assert card["data"]["trained_on"]["queries"] + card["data"]["dev"]["queries"] == 16
    assert card["hyperparameters"] | {"epochs": 1, "batch_size": 8, "max_seq_length": 64, "seed": 42} \
        == card["hyperparameters"]
    figures = card["figures"]
    assert figures["train_steps"] >= 1 and figures["train_loss"] > 0
    assert 0 <= figures["dev_pool"]["base"]["ndcg@10"] <= 1 and 0 <= figures["dev_pool"]["fine_tuned"]["ndcg@10"] <= 1
    assert card["timings"]["train_s"] > 0


def test_the_model_loads_offline_by_path_in_the_embedding_component(trained_twice):
    tuned = SentenceTransformerEmbedding({"model": str(trained_twice.first), "max_seq_length": 64})
    base = MiniLMEmbedding({"max_seq_length": 64})
    vectors = tuned.embed_documents(TEXTS)
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert not np.allclose(vectors, base.embed_documents(TEXTS), atol=1e-4)  # training changed the weights


def test_two_runs_with_the_same_seed_give_the_same_figures_and_vectors(trained_twice):
    first, second = read_card(trained_twice.first), read_card(trained_twice.second)
    for key in ("train_loss",):
        assert abs(first["figures"][key] - second["figures"][key]) <= 1e-4
    for model in ("base", "fine_tuned"):
        for metric, value in first["figures"]["dev_pool"][model].items():
            assert abs(value - second["figures"]["dev_pool"][model][metric]) <= 1e-4
    a = SentenceTransformerEmbedding({"model": str(trained_twice.first)}).embed_documents(TEXTS)
    b = SentenceTransformerEmbedding({"model": str(trained_twice.second)}).embed_documents(TEXTS)
    np.testing.assert_allclose(a, b, atol=1e-4)


def test_a_model_retrained_into_the_same_folder_gets_a_new_cache_key_and_new_vectors(trained_twice, tiny_scifact,
                                                                                   tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(trained_twice.first, folder)
    before = SentenceTransformerEmbedding({"model": str(folder)})
    key, vectors = before.cache_key(), before.embed_documents(TEXTS)
    result = run_cli("finetune", "embedding", "--dataset", tiny_scifact, "--out", folder, "--seed", "7",
                     "--workdir", trained_twice.workdir, *TINY)
    assert result.exit_code == 0, result.output
    after = SentenceTransformerEmbedding({"model": str(folder)})
    assert after.cache_key() != key
    assert not np.allclose(after.embed_documents(TEXTS), vectors, atol=1e-4)  # not the old model, still loaded
    assert read_card(folder)["hyperparameters"]["seed"] == 7
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left beside it


def test_a_copy_of_a_model_folder_shares_its_cache_key(trained_twice, tmp_path):
    copy = shutil.copytree(trained_twice.first, tmp_path / "elsewhere")
    assert SentenceTransformerEmbedding({"model": str(copy)}).cache_key() == \
        SentenceTransformerEmbedding({"model": str(trained_twice.first)}).cache_key()


def test_the_card_is_json_beside_the_sentence_transformers_files(trained_twice):
    names = {p.name for p in trained_twice.first.iterdir()}
    assert {CARD_NAME, "config.json", "modules.json", "model.safetensors"} <= names
    assert json.loads((trained_twice.first / CARD_NAME).read_text())["format"].startswith("dashrag-finetuned-model/")


def test_writing_over_a_folder_that_is_not_a_model_is_refused(tiny_scifact, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    result = run_cli("finetune", "embedding", "--dataset", tiny_scifact, "--out", tmp_path, *TINY)
    assert result.exit_code == 2 and "holds files but no dashrag-model-card.json" in result.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_the_card_records_the_dataset_it_read(trained_twice, tiny_scifact):
    assert read_card(trained_twice.first)["data"]["dataset_path"] == str(tiny_scifact.resolve())
