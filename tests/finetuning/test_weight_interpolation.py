"""WiSE-FT (``finetuning/weight_interpolation``): the learned weights averaged with the base's after training.

On real torch modules (the arithmetic, tied weights, integer buffers, refusals), on a tiny bi-encoder trained twice
with the same seed (the written model is the average of the base and the model as trained), and through the CLI.
"""

from __future__ import annotations

import pytest
import torch

from dashrag.errors import ConfigError
from dashrag.finetuning.model_card import read_card
from dashrag.finetuning.weight_interpolation import interpolate_with_base, named_tensors
from tests.conftest import EXAMPLE_CORPUS
from tests.fixtures.finetuning import run_cli


class Tied(torch.nn.Module):
    """Two layers sharing one weight (as tied embeddings do) and an integer buffer (as token positions are)."""

    def __init__(self, fill: float) -> None:
        super().__init__()
        self.first = torch.nn.Linear(3, 3)
        self.second = torch.nn.Linear(3, 3)
        self.second.weight = self.first.weight
        self.register_buffer("positions", torch.arange(4))
        with torch.no_grad():
            for tensor in self.parameters():
                tensor.fill_(fill)


def test_half_of_each_gives_the_midpoint_and_a_tied_weight_is_mixed_once():
    learned, base = Tied(4.0), Tied(2.0)
    assert interpolate_with_base(learned, base, 0.5) == 3  # the shared weight and the two biases
    assert all(torch.equal(t, torch.full_like(t, 3.0)) for t in learned.parameters())
    assert learned.second.weight is learned.first.weight
    assert torch.equal(learned.positions, torch.arange(4))  # integer buffers are not weights


def test_the_learned_share_weighs_the_learned_model_and_one_keeps_it():
    learned = Tied(4.0)
    interpolate_with_base(learned, Tied(2.0), 0.75)
    assert torch.allclose(learned.first.bias, torch.full((3,), 3.5))
    interpolate_with_base(learned, Tied(0.0), 1.0)
    assert torch.allclose(learned.first.bias, torch.full((3,), 3.5))


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5, float("nan")])
def test_a_share_outside_zero_to_one_is_refused_naming_the_option(share):
    learned = Tied(4.0)
    with pytest.raises(ConfigError, match="--learned-share"):
        interpolate_with_base(learned, Tied(2.0), share)
    assert torch.equal(learned.first.bias, torch.full((3,), 4.0))  # nothing changed


def test_a_base_of_another_architecture_is_refused_before_any_weight_changes():
    learned, other = Tied(4.0), torch.nn.Linear(3, 5)
    with pytest.raises(ConfigError, match="not of its architecture"):
        interpolate_with_base(learned, other, 0.5)


@pytest.mark.slow
def test_the_written_model_is_the_average_of_its_base_and_the_model_as_trained(tiny_scifact, tmp_path):
    from sentence_transformers import SentenceTransformer

    from dashrag.finetuning.base_model import resolve_embedding_base
    from dashrag.finetuning.embedding_trainer import Allowance, EmbeddingHyperparameters, train_embedding
    from dashrag.finetuning.training_data import prepare_training_data

    data = prepare_training_data(tiny_scifact, dev_fraction=0.25, workdir=tmp_path / "work")
    hyper = EmbeddingHyperparameters(epochs=1, batch_size=8, max_seq_length=64)
    for name, share in (("trained", 1.0), ("averaged", 0.5)):
        train_embedding(data, tmp_path / name, hyper=hyper, allowance=Allowance(max_steps=2), dev_figures=False,
                        learned_share=share)
    assert read_card(tmp_path / "averaged")["recipe"]["learned_share"] == 0.5
    assert read_card(tmp_path / "trained")["recipe"]["learned_share"] == 1.0
    base = named_tensors(SentenceTransformer(str(resolve_embedding_base("MiniLMEmbedding").source.path)))
    trained = named_tensors(SentenceTransformer(str(tmp_path / "trained")))
    averaged = named_tensors(SentenceTransformer(str(tmp_path / "averaged")))
    floating = [name for name, tensor in averaged.items() if tensor.is_floating_point()]
    assert len(floating) > 100
    assert any(not torch.allclose(trained[n], base[n]) for n in floating)  # training moved the weights
    for name in floating:
        torch.testing.assert_close(averaged[name], (base[name] + trained[name]) / 2, rtol=0, atol=1e-6)


def test_a_learned_share_with_judged_queries_is_refused(tmp_path, tiny_scifact):
    result = run_cli("finetune", "pipeline", "--dataset", tiny_scifact, "--learned-share", "0.5",
                     "--out", tmp_path / "mine.json")
    assert result.exit_code == 2
    assert "--learned-share" in result.stderr and "--dataset" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "mine.json").exists()


def test_a_learned_share_outside_zero_to_one_is_refused_before_any_work(tmp_path):
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--learned-share", "1.5",
                     "--out", tmp_path / "mine.json", "--workdir", tmp_path / "work")
    assert result.exit_code == 2
    assert "--learned-share" in result.stderr and "(0, 1]" in result.stderr
    assert not (tmp_path / "mine.json").exists() and not (tmp_path / "work").exists()


def test_a_learned_share_without_training_is_refused(tmp_path):
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--no-training", "--learned-share", "0.5",
                     "--out", tmp_path / "mine.json")
    assert result.exit_code == 2
    assert "--learned-share" in result.stderr and "--no-training" in result.stderr
