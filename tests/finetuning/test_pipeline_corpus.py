"""``dashrag finetune pipeline --corpus``: learning from documents without judgements, through the CLI."""

from __future__ import annotations

import json

import pytest

from tests.conftest import EXAMPLE_CORPUS
from tests.finetuning.test_doc2query import written
from tests.fixtures.finetuning import TINY, run_cli


def test_neither_dataset_nor_corpus_is_refused_in_one_line(tmp_path):
    result = run_cli("finetune", "pipeline", "--out", tmp_path / "mine.json")
    assert result.exit_code == 2
    assert "--dataset/--corpus" in result.stderr and "give exactly one" in result.stderr
    assert "Traceback" not in result.output


def test_both_dataset_and_corpus_are_refused(tmp_path, tiny_scifact):
    result = run_cli("finetune", "pipeline", "--dataset", tiny_scifact, "--corpus", EXAMPLE_CORPUS,
                     "--out", tmp_path / "mine.json")
    assert result.exit_code == 2
    assert "give exactly one" in result.stderr
    assert not (tmp_path / "mine.json").exists()


def test_a_recipe_with_judged_queries_is_refused(tmp_path, tiny_scifact):
    result = run_cli("finetune", "pipeline", "--dataset", tiny_scifact, "--recipe", "mnrl",
                     "--out", tmp_path / "mine.json")
    assert result.exit_code == 2
    assert "--recipe" in result.stderr and "--dataset" in result.stderr
    assert not (tmp_path / "mine.json").exists()


def test_an_unknown_recipe_is_refused_naming_the_known_ones(tmp_path):
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--recipe", "gpl",
                     "--out", tmp_path / "mine.json")
    assert result.exit_code == 2
    assert "--recipe" in result.stderr and "'gpl'" in result.stderr and "distill, mnrl" in result.stderr


def test_an_unknown_pseudo_query_source_is_refused_naming_the_known_ones(tmp_path):
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--sources", "title,summary",
                     "--out", tmp_path / "mine.json")
    assert result.exit_code == 2
    assert "--sources" in result.stderr and "summary" in result.stderr and "held_out_sentence" in result.stderr


@pytest.mark.slow
def test_the_corpus_pipeline_writes_a_preset_and_says_which_tree_it_chose_and_why(tmp_path):
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--out", tmp_path / "mine.json",
                     "--model-dir", tmp_path / "model", "--workdir", tmp_path / "work", "--json",
                     tmp_path / "report.json", "--held-out-fraction", "0.2", "--max-steps", "2", *TINY,
                     "--reading-seq-length", "96")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    choice = report["choice"]
    assert choice["shipped"] in {"base", "learned"}
    # trained at TINY's 64 tokens a text, the written model reads 96: a shorter training buys steps, not a
    # shorter reading of every document the model embeds afterwards
    hyper = report["model_card"]["hyperparameters"]
    assert (hyper["max_seq_length"], hyper["reading_seq_length"]) == (64, 96)
    from sentence_transformers import SentenceTransformer

    assert SentenceTransformer(str(tmp_path / "model")).max_seq_length == 96
    # the teacher encoded its negatives: the base model's cached corpus vectors read 256 tokens, not TINY's 64
    assert report["model_card"]["recipe"]["teacher"]["negatives_read_from_cached_vectors"] == 0
    assert choice["held_out_queries"] > 0
    assert f"wrote the {choice['shipped']} tree" in result.stdout
    preset = json.loads((tmp_path / "mine.json").read_text(encoding="utf-8"))
    dense_model = preset["params"]["children"][1]["params"]["embedding"]["params"]["model"]
    assert dense_model == report["model_reference"]
    learned_model_shipped = choice["shipped"] == "learned" and choice["dense_model"]["chosen"] == "learned"
    assert learned_model_shipped == (dense_model == str((tmp_path / "model").resolve()))
    assert (choice["dense_model"]["chosen"] == "learned") == (choice["dense_alone"]["learned"] >
                                                              choice["dense_alone"]["base"])
    assert (choice["shipped"] == "learned") == (choice["learned"] > choice["base"])
    estimated = report["model_card"]["plan"]["estimated_after_training_s"]
    assert estimated["choose"] > 0  # the budget counts it
    assert "final" not in estimated  # no --final-eval asked
    assert "dev figures" not in estimated and report["model_card"]["figures"]["dev_pool"] is None
    assert set(choice["dense_alone"]) == {"base", "learned"}
    assert all(0 <= figure <= 1 for figure in choice["dense_alone"].values())
    recipe = report["model_card"]["recipe"]  # the default recipe distils the untuned hybrid's margins
    assert recipe["loss"] == "MarginMSELoss"
    assert recipe["learned_share"] == 0.5  # WiSE-FT: averaged with the base after training, the paper's default
    assert report["settings"]["learn_from"]["learned_share"] == 0.5
    assert recipe["teacher"]["triples"] == report["model_card"]["plan"]["pairs_trained"]
    assert recipe["teacher"]["lexical_weight"] > 0 and recipe["teacher"]["encoding_per_step_s"] > 0
    assert "the dense model alone on the held-out pseudo-queries" in result.stdout
    assert report["timings"]["embed_base_s"] > 0
    # each model embedded the corpus once, into the cache: the choice and the dense figures re-embedded nothing
    sidecars = [json.loads(p.read_text(encoding="utf-8")) for p in (tmp_path / "work" / "embeddings").glob("*.json")]
    assert len(sidecars) == 2
    assert str((tmp_path / "model").resolve()) in {s["embedding"]["params"]["model"] for s in sidecars}
    assert (tmp_path / "model").is_dir()



@pytest.mark.slow
def test_where_learning_cannot_help_the_pipeline_writes_the_base_tree(tmp_path):
    """Five documents on five unrelated topics: the base hybrid already ranks every held-out pseudo-query's own
    document first (nDCG@10 1.0), so no trained model can beat it and the preset written is the base tree.
    Whatever the recipe: this run trains with ``--recipe mnrl`` (hard labels, no teacher), the other one's."""
    from tests.finetuning.test_keep_base import TOPICS

    corpus = tmp_path / "topics.jsonl"
    corpus.write_text("".join(json.dumps({"_id": name, "title": f"All about the {name} topic", "text": text}) + "\n"
                              for name, text in TOPICS.items()), encoding="utf-8")
    result = run_cli("finetune", "pipeline", "--corpus", corpus, "--out", tmp_path / "mine.json",
                     "--model-dir", tmp_path / "model", "--workdir", tmp_path / "work", "--json",
                     tmp_path / "report.json", "--held-out-fraction", "0.2", "--max-steps", "2", "--recipe", "mnrl",
                     *TINY)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    recipe = report["model_card"]["recipe"]
    assert recipe["loss"] == "MultipleNegativesRankingLoss" and recipe["teacher"] is None
    choice = report["choice"]
    assert choice["base"] == pytest.approx(1.0)
    assert choice["shipped"] == "base" and "the base is kept" in choice["reason"]
    assert "wrote the base tree" in result.stdout
    preset = json.loads((tmp_path / "mine.json").read_text(encoding="utf-8"))
    model = preset["params"]["children"][1]["params"]["embedding"]["params"]["model"]
    assert model != str((tmp_path / "model").resolve())  # the base model, not the one trained
    assert (tmp_path / "model").is_dir()  # trained all the same: the model is there to inspect


def test_no_training_with_a_step_cap_is_refused_before_any_work(tmp_path):
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--no-training", "--max-steps", "2",
                     "--out", tmp_path / "mine.json", "--workdir", tmp_path / "w")
    assert result.exit_code == 2
    assert "--max-steps" in result.stderr and "--no-training" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "w").exists()



def test_no_training_with_a_recipe_is_refused_before_any_work(tmp_path):
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--no-training", "--recipe", "distill",
                     "--out", tmp_path / "mine.json", "--workdir", tmp_path / "w")
    assert result.exit_code == 2
    assert "--recipe" in result.stderr and "--no-training" in result.stderr
    assert not (tmp_path / "w").exists()


def test_no_training_with_judged_queries_is_refused_pointing_at_tune(tmp_path, tiny_scifact):
    result = run_cli("finetune", "pipeline", "--dataset", tiny_scifact, "--no-training",
                     "--out", tmp_path / "mine.json", "--workdir", tmp_path / "w")
    assert result.exit_code == 2
    assert "--no-training" in result.stderr and "dashrag tune" in result.stderr
    assert not (tmp_path / "w").exists() and not (tmp_path / "mine.json").exists()

@pytest.mark.slow
def test_no_training_tunes_the_base_models_tree_on_the_pseudo_queries_and_trains_nothing(tmp_path):
    """A user who wants their tree fitted to their documents without training a model: the base model's hybrid,
    tuned on the dev pseudo-queries, judged against the untuned base on the held-out ones; no model folder."""
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--no-training",
                     "--out", tmp_path / "mine.json", "--model-dir", tmp_path / "model", "--workdir", tmp_path / "work",
                     "--json", tmp_path / "report.json", "--held-out-fraction", "0.2", "--dev-fraction", "0.25")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["model_card"] is None and "train_s" not in report["timings"]
    assert not (tmp_path / "model").exists()
    assert report["tuning"]["points"] == 4 * 4 * 7 and "--no-training" in report["tuning"]["grid_chosen"]
    choice = report["choice"]
    assert set(choice["dense_alone"]) == {"base"}
    assert choice["dense_model"]["chosen"] == "base" and "--no-training" in choice["dense_model"]["reason"]
    assert f"wrote the {choice['shipped']} tree" in result.stdout and "steps, loss" not in result.stdout
    preset = json.loads((tmp_path / "mine.json").read_text(encoding="utf-8"))
    assert preset["params"]["children"][1]["params"]["embedding"]["params"]["model"] == report["model_reference"]
    tuned = report["tuning"]["best"]["values"]
    keyword = preset["params"]["children"][0]["params"]
    if choice["shipped"] == "learned":  # the tuned point is what ships
        assert (keyword["k1"], keyword["b"]) == (tuned["params.children[0].params.k1"],
                                                 tuned["params.children[0].params.b"])
    # only the base model embedded the corpus
    assert len(list((tmp_path / "work" / "embeddings").glob("*.json"))) == 1


def test_an_llm_with_judged_data_is_refused(tmp_path, tiny_scifact):
    result = run_cli("finetune", "pipeline", "--dataset", tiny_scifact, "--llm", "LiteLLMModel",
                     "--out", tmp_path / "mine.json")
    assert result.exit_code == 2
    assert "--llm" in result.stderr and "--corpus" in result.stderr


def test_a_bad_llm_config_is_refused_before_any_work(tmp_path):
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--llm", '{"component": "LiteLLMModel", '
                     '"params": {"temperature": "hot"}}', "--out", tmp_path / "mine.json", "--workdir", tmp_path / "w")
    assert result.exit_code == 2
    assert "temperature" in result.stderr
    assert not (tmp_path / "w").exists()


@pytest.mark.slow
def test_the_llm_writes_queries_for_a_sample_of_documents_and_the_report_counts_them(tmp_path, openai_server):
    openai_server.script(*[written(f"how does retrieval step {i} work", f"explain retrieval step {i}")
                           for i in range(3)])
    llm = json.dumps({"component": "LiteLLMModel", "params": {"model": "openai/test-model",
                                                              "api_base": openai_server.api_base}})
    result = run_cli("finetune", "pipeline", "--corpus", EXAMPLE_CORPUS, "--llm", llm, "--llm-sample", "3",
                     "--out", tmp_path / "mine.json", "--model-dir", tmp_path / "model", "--workdir",
                     tmp_path / "work", "--json", tmp_path / "report.json", "--held-out-fraction", "0.2",
                     "--max-steps", "2", *TINY)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    [account] = report["choice"]["written"]
    assert account == {"source": "doc2query", "queries": 6, "asked": 3, "failed": [], "stopped_at_deadline": False}
    assert len(openai_server.requests) == 3
