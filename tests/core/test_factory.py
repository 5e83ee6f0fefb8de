"""The factory: build_as hands back the class a caller needs, or says what was built instead."""

import pytest

from dashrag.chunkers.base import Chunker
from dashrag.core.factory import build_as
from dashrag.core.retriever import Retriever
from dashrag.errors import ConfigError


def test_build_as_returns_the_tree_typed_as_the_class_asked_for():
    tree = build_as({"component": "BM25Retriever", "params": {"top_k": 3}}, Retriever, "retriever")
    assert isinstance(tree, Retriever) and tree.to_config()["params"]["top_k"] == 3


def test_build_as_names_the_component_that_is_not_of_the_class():
    with pytest.raises(ConfigError, match="BM25Retriever is not a Chunker"):
        build_as({"component": "BM25Retriever"}, Chunker)
