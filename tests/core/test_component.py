import pytest

from dashrag import build_component
from dashrag.core.component import params_argument
from dashrag.core.registry import all_components
from dashrag.core.retriever import UnitRetriever
from dashrag.retrievers.bm25 import BM25Params
from dashrag.retrievers.tfidf import TFIDFParams, TFIDFRetriever


def test_to_config_rebuilds_an_equal_tree():
    tree = build_component(
        {
            "component": "TFIDFRetriever",
            "params": {"top_k": 7, "vectorizer": {"component": "BagOfWordsConverter", "params": {"ngram_max": 2}}},
        }
    )
    assert build_component(tree.to_config()).to_config() == tree.to_config()
    assert tree.to_config()["params"]["vectorizer"]["params"]["ngram_max"] == 2


def test_python_construction_validates_like_json():
    assert (
        TFIDFRetriever({"top_k": 3}).to_config()
        == build_component({"component": "TFIDFRetriever", "params": {"top_k": 3}}).to_config()
    )


def test_representation_fills_own_placeholders():
    tree = build_component({"component": "TFIDFRetriever", "params": {"top_k": 4}})
    assert tree.render_representation() == "TF-IDF top 4"
    assert tree.render_representation("es") == "TF-IDF, los 4 mejores"
    assert tree.nested["vectorizer"].render_representation() == "word 1-1-grams"


def test_representation_fills_nested_placeholders(monkeypatch):
    tree = build_component(
        {
            "component": "TFIDFRetriever",
            "params": {"vectorizer": {"component": "BagOfWordsConverter", "params": {"ngram_max": 3}}},
        }
    )
    meta = type(tree).META
    template = {"en": "{vectorizer} up to {vectorizer.ngram_max}-grams, {missing}", "es": "-"}
    monkeypatch.setattr(type(tree), "META", type(meta)(**{**meta.__dict__, "representation": template}))
    assert tree.render_representation() == "BagOfWordsConverter up to 3-grams, {missing}"


def test_schema_summary_is_recursive():
    summary = build_component({"component": "TFIDFRetriever"}).get_schema_summary()
    assert summary["class"] == "TFIDFRetriever"
    assert summary["vectorizer"]["class"] == "BagOfWordsConverter"
    assert "vectorizer" not in summary["params"]


def test_iter_nodes_paths_are_stable():
    tree = build_component({"component": "TFIDFRetriever"})
    assert [p for p, _ in tree.iter_nodes()] == ["root", "root.vectorizer"]


def test_schema_is_the_generic_parameter_of_every_component():
    for _, cls in all_components():
        named = next(p for p in (params_argument(c) for c in cls.__mro__) if p is not None)
        assert cls.SCHEMA is named, cls.__name__


def test_a_subclass_naming_no_parameter_keeps_its_bases_schema():
    class Wider(TFIDFRetriever):
        pass

    assert Wider.SCHEMA is TFIDFRetriever.SCHEMA is TFIDFParams


def test_a_schema_line_contradicting_the_generic_parameter_is_refused():
    with pytest.raises(TypeError, match="contradicts its generic parameter TFIDFParams"):

        class Contradicting(UnitRetriever[TFIDFParams]):
            SCHEMA = BM25Params
