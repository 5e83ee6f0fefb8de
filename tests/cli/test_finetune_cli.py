"""``dashrag finetune`` refuses bad input with one ``error:`` line and exit 2, before any training."""

from __future__ import annotations

import shutil

import pytest

from tests.cli.conftest import error_line
from tests.fixtures.finetuning import TINY, run_cli

COMMANDS = ("embedding", "reranker")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_split_named_test_is_refused_unless_forced(command, tiny_scifact, tmp_path):
    line = error_line(run_cli("finetune", command, "--dataset", tiny_scifact, "--split", "test",
                              "--out", tmp_path / "m", *TINY))
    assert "--split: is the 'test' split" in line and "--force-test" in line
    assert not (tmp_path / "m").exists()


def test_the_pipeline_refuses_the_test_split_too(tiny_scifact, tmp_path):
    line = error_line(run_cli("finetune", "pipeline", "--dataset", tiny_scifact, "--split", "test",
                              "--out", tmp_path / "p.json", *TINY))
    assert "is the 'test' split" in line and not (tmp_path / "p.json").exists()


def test_tune_refuses_to_search_on_the_test_split(tiny_scifact, tmp_path):
    line = error_line(run_cli("tune", "keyword", "--dataset", tiny_scifact, "--train-split", "test",
                              "--test-split", "train", "--param", "params.k1=0.9,1.2", "--out", tmp_path / "t.json"))
    assert "--train-split: is the 'test' split" in line


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_qrels_split_names_the_file_and_the_splits_there(command, tiny_scifact, tmp_path):
    line = error_line(run_cli("finetune", command, "--dataset", tiny_scifact, "--split", "dev",
                              "--out", tmp_path / "m", *TINY))
    assert "dev.tsv: no qrels for split 'dev'; available splits: test, train" in line


def test_a_split_with_no_judged_pair_in_the_corpus_is_a_clear_error(tiny_scifact, tmp_path):
    dataset = shutil.copytree(tiny_scifact, tmp_path / "data")
    (dataset / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{line.split(chr(9))[0]}\tnot-in-the-corpus\t1\n"
        for line in (tiny_scifact / "qrels" / "train.tsv").read_text().splitlines()[1:]))
    line = error_line(run_cli("finetune", "embedding", "--dataset", dataset, "--out", tmp_path / "m", *TINY))
    assert "'train-fit': no query is judged relevant to a document of the corpus" in line


@pytest.mark.parametrize("base, expected", [
    ("NoSuchEmbedding", "is not an embedding component or a model folder"),
    ("MiniLMOnnxEmbedding", "does not run on sentence-transformers"),
    ("./no/such/folder", "is not an embedding component or a model folder"),
])
def test_an_unknown_or_untrainable_base_is_refused(base, expected, tiny_scifact, tmp_path):
    line = error_line(run_cli("finetune", "embedding", "--dataset", tiny_scifact, "--base", base,
                              "--out", tmp_path / "m", *TINY))
    assert "--base" in line and expected in line


def test_a_missing_dataset_folder_is_named(tmp_path):
    line = error_line(run_cli("finetune", "embedding", "--dataset", tmp_path / "nowhere", "--out", tmp_path / "m"))
    assert "nowhere: dataset folder not found" in line


def test_a_dev_fraction_that_leaves_nothing_to_train_on_is_refused(tiny_scifact, tmp_path):
    line = error_line(run_cli("finetune", "embedding", "--dataset", tiny_scifact, "--dev-fraction", "1",
                              "--out", tmp_path / "m"))
    assert "--dev-fraction" in line


def test_the_pipeline_checks_its_final_split_before_any_training(tiny_scifact, tmp_path):
    line = error_line(run_cli("finetune", "pipeline", "--dataset", tiny_scifact, "--final-eval", "dev",
                              "--out", tmp_path / "p.json", "--model-dir", tmp_path / "m", *TINY))
    assert "dev.tsv: no qrels for split 'dev'" in line
    assert not (tmp_path / "m").exists() and not (tmp_path / "p.json").exists()


def test_the_pipeline_refuses_to_score_its_final_figure_on_the_training_split(tiny_scifact, tmp_path):
    line = error_line(run_cli("finetune", "pipeline", "--dataset", tiny_scifact, "--final-eval", "train",
                              "--out", tmp_path / "p.json", *TINY))
    assert "--final-eval: is the training split 'train'" in line
