"""The base API as the reference lists it, on ConfigObject and Retriever."""

from __future__ import annotations

import pytest

import dashrag
from dashrag.core.infra import Infra
from dashrag.errors import ConfigError, CredentialError, PersistenceError
from dashrag.retrievers.bm25 import BM25Retriever
from dashrag.retrievers.parallel import ParallelRetriever
from dashrag.retrievers.tfidf import TFIDFRetriever
from dashrag.store.store import Store
from tests.conftest import EXAMPLE_CORPUS

HYBRID_OF_KEYWORDS = {"component": "ParallelRetriever", "params": {"children": [
    {"component": "BM25Retriever", "params": {"top_k": 3}}, {"component": "TFIDFRetriever", "params": {"top_k": 3}}]}}


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    tree = dashrag.build(HYBRID_OF_KEYWORDS, dashrag.Corpus.from_folder(EXAMPLE_CORPUS), tmp_path_factory.mktemp("api"))
    yield tree
    tree.close()


def test_get_schema_is_callable_on_the_class():
    schema = BM25Retriever.get_schema()
    assert schema["x-component"] == "BM25Retriever" and "k1" in schema["properties"]


def test_get_metadata_is_callable_on_the_class():
    meta = BM25Retriever.get_metadata()
    assert meta["component"] == "BM25Retriever" and set(meta["display"]) >= {"en", "es"}


def test_get_representation_on_the_class_is_the_multilingual_template():
    template = BM25Retriever.get_representation()
    assert set(template) >= {"en", "es"} and "{k1}" in template["en"] and "{k1}" in template["es"]


def test_every_component_has_an_english_and_a_spanish_representation():
    for name, cls in dashrag.core.registry.all_components():
        assert {"en", "es"} <= set(cls.get_representation()), name


def test_render_representation_fills_the_template_for_an_instance():
    tree = BM25Retriever({"k1": 1.2, "top_k": 3})
    assert tree.render_representation() == f"BM25 {tree.params.variant} k1=1.2 b=0.75 top 3"
    assert tree.render_representation("es").endswith("mejores 3")


def test_render_representation_fills_nested_placeholders():
    tree = dashrag.build_component(HYBRID_OF_KEYWORDS)
    assert tree.render_representation() == "round_robin of [BM25Retriever, TFIDFRetriever]"


def test_get_schema_summary_parameters_lists_each_parameter():
    summary = BM25Retriever.get_schema_summary_parameters()
    assert summary["k1"]["default"] == 1.5 and summary["k1"]["type"] == "number"
    assert summary["vectorizer"]["component_kind"] == "vectorizer"


def test_set_trace_params_keeps_a_deep_copy_of_the_raw_params():
    raw = {"children": [{"component": "BM25Retriever", "params": {"top_k": 3}}, {"component": "TFIDFRetriever"}]}
    tree = ParallelRetriever(raw)
    raw["children"][0]["params"]["top_k"] = 99
    assert tree.trace_params == {"children": [{"component": "BM25Retriever", "params": {"top_k": 3}},
                                              {"component": "TFIDFRetriever"}]}
    tree.set_trace_params(raw)
    raw["children"].clear()
    assert tree.trace_params["children"][0]["params"]["top_k"] == 99


def test_built_nodes_keep_the_params_as_written_before_defaults_and_aliases():
    tree = dashrag.build_component({"component": "TFIDFRetriever", "params": {"vectorizer": {
        "component": "BagOfWordsConverter", "params": {"upper_bound_ngrams": 2}}}})
    written = {"vectorizer": {"component": "BagOfWordsConverter", "params": {"upper_bound_ngrams": 2}}}
    assert tree.trace_params == written
    assert tree.nested["vectorizer"].trace_params == {"upper_bound_ngrams": 2}


def test_set_trace_settings_is_what_the_old_set_trace_params_did(fitted):
    fitted.set_trace_settings(max_output=1)
    try:
        _, trace = fitted.retrieve("dense vectors")
        assert len(trace["output"]) == 1 and all(len(child["output"]) <= 1 for child in trace["children"])
    finally:
        fitted.set_trace_settings(max_output=None)


def test_validate_and_transform_on_config_object_takes_params_or_a_node():
    assert TFIDFRetriever.validate_and_transform({"top_k": 2})["params"]["top_k"] == 2
    assert TFIDFRetriever.validate_and_transform({"component": "TFIDFRetriever", "params": {}})["params"]["top_k"] == 5
    with pytest.raises(ConfigError, match="top_k"):
        TFIDFRetriever.validate_and_transform({"top_k": 0})
    with pytest.raises(ConfigError, match="given to TFIDFRetriever"):
        TFIDFRetriever.validate_and_transform({"component": "BM25Retriever", "params": {}})


def test_save_and_load_are_methods(fitted, tmp_path):
    fitted.save(tmp_path / "saved")
    loaded = ParallelRetriever.load(tmp_path / "saved")
    assert loaded.retrieve("dense vectors")[0] == fitted.retrieve("dense vectors")[0]
    with pytest.raises(PersistenceError, match="holds a ParallelRetriever, not a BM25Retriever"):
        BM25Retriever.load(tmp_path / "saved")


def test_inject_infra_accepts_the_references_shape(fitted, tmp_path):
    chunks = fitted.require_infra().chunks
    tree = dashrag.build_component(HYBRID_OF_KEYWORDS)
    tree.inject_infra(tmp_path, list(chunks.chunks), fitted.require_infra().store_url, documents=None)
    tree.init_model()
    assert tree.retrieve("dense vectors")[0] == fitted.retrieve("dense vectors")[0]
    assert tree.require_infra() == Infra(tmp_path, tree.require_infra().chunks, fitted.require_infra().store_url)
    assert all(child.infra is tree.infra for child in tree.get_children())


def test_inject_infra_still_takes_an_infra_alone(fitted):
    tree = dashrag.build_component(HYBRID_OF_KEYWORDS)
    tree.inject_infra(fitted.require_infra())
    with pytest.raises(TypeError):
        tree.inject_infra(fitted.require_infra(), [])


def test_remove_takes_the_child():
    tree = dashrag.build_component(HYBRID_OF_KEYWORDS)
    bm25, tfidf = tree.get_children()
    assert tree.remove(tfidf) is tfidf and tree.get_children() == [bm25]
    with pytest.raises(ConfigError, match="not one of its children"):
        tree.remove(tfidf)


def test_get_id_and_set_id_are_tied_to_the_stores_retriever_record(fitted):
    assert dashrag.build_component(HYBRID_OF_KEYWORDS).get_id() is None
    infra = fitted.require_infra()
    store = Store(infra.store_url)
    try:
        record_id = store.add_retriever_record("hybrid", fitted.to_config(), "/saved/here", infra.chunks.fingerprint)
    finally:
        store.close()
    fitted.set_id(record_id)
    assert fitted.get_id() == record_id
    with pytest.raises(PersistenceError, match=f"no retriever record {record_id + 1000}"):
        fitted.set_id(record_id + 1000)
    assert fitted.get_id() == record_id


def test_get_credential_reads_the_named_credential_when_asked(monkeypatch):
    llm = dashrag.build_component({"component": "LiteLLMModel", "params": {
        "credential": {"component": "EnvCredential", "params": {"var": "DASHRAG_TEST_API_KEY"}}}})
    monkeypatch.setenv("DASHRAG_TEST_API_KEY", "sk-test-value")
    assert llm.get_credential("credential") == llm.get_credential("DASHRAG_TEST_API_KEY") == "sk-test-value"
    monkeypatch.delenv("DASHRAG_TEST_API_KEY")
    with pytest.raises(CredentialError, match="DASHRAG_TEST_API_KEY"):
        llm.get_credential("credential")
    with pytest.raises(CredentialError, match="no credential named 'other'"):
        llm.get_credential("other")
    assert "sk-test-value" not in repr(llm.__dict__)

