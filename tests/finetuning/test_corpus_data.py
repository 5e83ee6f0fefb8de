"""Training data from an unjudged corpus: pseudo-queries sliced, paired and mined like judged ones."""

from __future__ import annotations

import json

import pytest

from dashrag.errors import ConfigError, CorpusError
from dashrag.finetuning.corpus_data import prepare_corpus_training_data
from dashrag.finetuning.pseudo_queries import HEADING, SOURCES
from tests.conftest import EXAMPLE_CORPUS


def flat(text: str) -> str:
    """The text with every run of whitespace one space (a query is a hard-wrapped sentence joined)."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def example_folder():
    return EXAMPLE_CORPUS


@pytest.fixture(scope="module")
def prepared(example_folder, tmp_path_factory):
    return prepare_corpus_training_data(example_folder, workdir=tmp_path_factory.mktemp("work"),
                                        held_out_fraction=0.2, dev_fraction=0.2, seed=5)


def test_the_held_out_dev_and_fit_slices_are_disjoint_and_cover_every_pseudo_query(prepared):
    data, held_out = prepared.data, prepared.held_out
    assert data.dev is not None
    slices = [set(held_out.queries), set(data.dev.queries), set(data.fit.queries)]
    assert all(s for s in slices)
    assert not (slices[0] & slices[1] or slices[0] & slices[2] or slices[1] & slices[2])
    assert set.union(*slices) == set(data.split.queries)
    assert held_out.split.endswith("held-out")


def test_each_pair_is_a_fit_query_and_its_document_without_the_querys_words(prepared):
    data = prepared.data
    assert [p.query_id for p in data.pairs] == list(data.fit.queries)
    for pair in data.pairs:
        assert data.fit.qrels[pair.query_id] == {pair.document_id: 1}
        positive, whole = flat(pair.document), flat(data.documents[pair.document_id])
        assert positive.count(pair.query) == whole.count(pair.query) - 1
        assert "\n#\n" not in f"\n{pair.document}\n"


def test_every_query_is_ranked_by_the_first_stage_for_its_hard_negatives(prepared):
    ranked = prepared.data.candidates.ranked
    assert set(ranked) == set(prepared.data.split.queries)
    assert all(ranked[q] for q in ranked)


def test_the_same_seed_slices_the_same_way(prepared, example_folder, tmp_path):
    again = prepare_corpus_training_data(example_folder, workdir=tmp_path, held_out_fraction=0.2,
                                         dev_fraction=0.2, seed=5)
    assert list(again.held_out.queries) == list(prepared.held_out.queries)
    assert [p.query for p in again.data.pairs] == [p.query for p in prepared.data.pairs]
    assert prepared.sources == SOURCES


def test_a_corpus_that_gives_no_pseudo_query_is_refused_naming_it(tmp_path):
    corpus = tmp_path / "short.jsonl"
    corpus.write_text("".join(json.dumps({"_id": str(i), "text": "Too short."}) + "\n" for i in range(3)),
                      encoding="utf-8")
    with pytest.raises(CorpusError, match=r"short\.jsonl: its 3 document\(s\) give no pseudo-query"):
        prepare_corpus_training_data(corpus, workdir=tmp_path / "work")


def test_no_held_out_slice_is_refused(example_folder, tmp_path):
    with pytest.raises(CorpusError, match="held-out slice"):
        prepare_corpus_training_data(example_folder, workdir=tmp_path, held_out_fraction=0.0)
    with pytest.raises(ConfigError, match="--held-out-fraction"):
        prepare_corpus_training_data(example_folder, workdir=tmp_path, held_out_fraction=1.0)


def test_one_source_alone_makes_only_its_queries(example_folder, tmp_path):
    only = prepare_corpus_training_data(example_folder, workdir=tmp_path, sources=[HEADING],
                                        held_out_fraction=0.2, dev_fraction=0.2)
    assert all(q.startswith(f"{HEADING}:") for q in only.data.split.queries)
