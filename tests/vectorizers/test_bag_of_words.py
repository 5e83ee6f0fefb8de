"""BagOfWordsConverter: scikit-learn's counts, plus stemming, and a pickle-free save."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag import build_component

DOCS = ["The runners were running fast", "A runner runs; running is fun!", "Café au lait, cafe noir", "nothing here"]


def make(**params):
    vec = build_component({"component": "BagOfWordsConverter", "params": params})
    vec.fit_transform(DOCS)
    return vec


def scikit_learns(vec):
    """scikit-learn's own vectorizer fitted on DOCS with vec's settings: the reference (a single-word fit does
    not use scikit-learn, tests/vectorizers/test_fit_without_scikit_learn.py)."""
    return vec._make().fit(DOCS)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"ngram_max": 2},
        {"stop_words": "english"},
        {"strip_accents": "unicode"},
        {"stemmer": "english", "stop_words": "english", "ngram_max": 2},
        {"analyzer": "char_wb", "ngram_min": 2, "ngram_max": 3},
    ],
)
def test_transform_equals_scikit_learn(params):
    vec = make(**params)
    queries = ["running runners", "cafe CAFÉ noir noir", "zzz", "the fun of running is running"]
    ours = vec.transform(queries).toarray()
    reference = scikit_learns(vec).transform(queries).toarray()
    np.testing.assert_array_equal(ours, reference)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abc runing ")), max_size=60))
def test_transform_equals_scikit_learn_on_random_text(text):
    vec = make(stemmer="english")
    np.testing.assert_array_equal(vec.transform([text]).toarray(), scikit_learns(vec).transform([text]).toarray())


def test_stemming_merges_word_forms():
    vocabulary = make(stemmer="english").vocabulary
    assert "run" in vocabulary and "running" not in vocabulary


def test_unknown_stemmer_is_refused_at_validation_naming_the_field():
    from dashrag.core.validation import validate_and_transform
    from dashrag.errors import ConfigError

    with pytest.raises(ConfigError, match=r"params\.stemmer: Input should be 'arabic'.* or 'yiddish'"):
        validate_and_transform({"component": "BagOfWordsConverter", "params": {"stemmer": "klingon"}}, "vectorizer")


def test_the_stemmer_choices_are_pystemmers_algorithms():
    import typing

    import Stemmer

    from dashrag.vectorizers.bag_of_words import Stemmers

    assert sorted(typing.get_args(Stemmers)) == sorted(Stemmer.algorithms())


def test_save_and_load_rebuild_the_same_vocabulary(tmp_path):
    vec = make(stemmer="english", ngram_max=2)
    vec.save_state(tmp_path)
    other = build_component(vec.to_config())
    other.load_state(tmp_path)
    assert other.vocabulary == vec.vocabulary
    np.testing.assert_array_equal(other.transform(DOCS).toarray(), vec.transform(DOCS).toarray())


WORDS = ["running", "runners", "the", "and", "Café", "cafe", "noir", "fun", "zzz", "is", "RUN", "a1", "x"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join), max_size=8))
def test_batch_analysis_equals_one_text_at_a_time(texts):
    """The one-pass batch analysis (distinct words analysed once) gives each text's own counts."""
    vec = make(stemmer="english", stop_words="english")
    rows = [vec.term_counts(text) for text in texts]
    batch = vec.transform(texts)
    assert batch.shape == (len(texts), len(vec.vocabulary))
    for i, (ids, counts) in enumerate(rows):
        row = batch.getrow(i)
        np.testing.assert_array_equal(row.indices, ids)
        np.testing.assert_array_equal(row.data, counts)


def test_a_loaded_converter_analyses_with_the_saved_stop_words(tmp_path):
    vec = make(stop_words="english")
    vec.save_state(tmp_path)
    other = build_component(vec.to_config())
    other.load_state(tmp_path)
    assert other.single_word_steps().stop == vec.single_word_steps().stop and "the" in other.single_word_steps().stop
    np.testing.assert_array_equal(other.transform(DOCS).toarray(), scikit_learns(vec).transform(DOCS).toarray())


def test_a_folder_saved_without_stop_words_uses_scikit_learns(tmp_path):
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    vec = make(stop_words="english")
    vec.save_state(tmp_path)
    (tmp_path / "stop_words.json").unlink()
    other = build_component(vec.to_config())
    other.load_state(tmp_path)
    assert other.single_word_steps().stop == frozenset(ENGLISH_STOP_WORDS)


def test_a_malformed_stop_word_file_is_a_persistence_error(tmp_path):
    from dashrag.errors import PersistenceError

    vec = make(stop_words="english")
    vec.save_state(tmp_path)
    (tmp_path / "stop_words.json").write_text('{"the": 1}')
    with pytest.raises(PersistenceError, match="stop_words.json: not a list of words"):
        build_component(vec.to_config()).load_state(tmp_path)


@pytest.mark.parametrize("added, removed", [
    (["runners running fast", "cafe noir"], []),  # every term known, none leaves: the columns stay as they are
    (["a brand new word"], ["doc3"]),  # terms join, and the removed document's only terms leave
    ([], ["doc1"]),
    (["a brand new word", "runners noir"], []),  # an add with new terms: they take the columns after the others
])
def test_updated_counts_are_a_fit_on_the_resulting_texts(added, removed):
    from dashrag.documents.changes import plan_change
    from dashrag.documents.chunk_set import ChunkSet
    from dashrag.documents.model import Chunk, SourceDocument

    chunks = ChunkSet(Chunk(id=i, document_id=f"doc{i}", position=0, text=t) for i, t in enumerate(DOCS))
    new = [SourceDocument(id=f"new{i}", text=t) for i, t in enumerate(added)]
    change = plan_change({f"doc{i}": SourceDocument(id=f"doc{i}", text=t) for i, t in enumerate(DOCS)}, chunks, new,
                         removed, lambda docs: [Chunk(id=0, document_id=d.id, position=0, text=d.text) for d in docs])
    vec = make(stemmer="english")
    old_terms = vec.vocabulary
    vec.apply_change(change)
    fitted = make(stemmer="english")
    expected = fitted.fit_transform(change.new.texts)
    if removed:  # the counts made again: scikit-learn's columns (sorted terms), rows sorted
        assert vec.vocabulary == fitted.vocabulary
        assert (vec.current_counts() != expected).nnz == 0 and vec.current_counts().has_sorted_indices
        return
    # an add appends rows (the counts' segments): the old columns stay, new terms come after them
    assert vec.vocabulary[: len(old_terms)] == old_terms and sorted(vec.vocabulary) == fitted.vocabulary
    by_term = [vec.vocabulary.index(t) for t in fitted.vocabulary]
    assert (vec.current_counts()[:, by_term] != expected).nnz == 0


def test_the_column_order_names_a_numbering_that_an_add_made():
    """Two histories over the same documents (new words added in either order) number the columns differently, so
    an engine storing term ids must tell them apart (``BM25Retriever._identity``); a fit's sorted order is None."""
    from dashrag.documents.changes import plan_change
    from dashrag.documents.chunk_set import ChunkSet
    from dashrag.documents.model import Chunk, SourceDocument

    def added_in_order(texts):
        vec = make(stemmer="english")
        documents = {f"doc{i}": SourceDocument(id=f"doc{i}", text=t) for i, t in enumerate(DOCS)}
        chunks = ChunkSet(Chunk(id=i, document_id=f"doc{i}", position=0, text=t) for i, t in enumerate(DOCS))
        vec.fit_transform(chunks.texts)
        assert vec.column_order() is None
        for text in texts:
            new = SourceDocument(id=f"new{text}", text=text)
            change = plan_change(documents, chunks, [new], [], lambda docs: [
                Chunk(id=0, document_id=d.id, position=0, text=d.text) for d in docs])
            vec.apply_change(change)
            documents[new.id], chunks = new, change.new
        return vec

    one, other = added_in_order(["zebras graze", "quokkas smile"]), added_in_order(["quokkas smile", "zebras graze"])
    assert sorted(one.vocabulary) == sorted(other.vocabulary) and one.vocabulary != other.vocabulary
    assert one.column_order() is not None and other.column_order() is not None
    assert one.column_order() != other.column_order()
