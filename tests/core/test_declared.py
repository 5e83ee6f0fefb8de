"""Param kinds (core/params.py ``kind_field``) and the walker over a validated tree (core/declared.py)."""

from __future__ import annotations

import re

from dashrag.core.declared import declared_values
from dashrag.core.params import ParamKind
from dashrag.core.registry import all_components
from dashrag.core.validation import validate_and_transform

#: A string parameter whose name says it reaches outside the component.
REACHING = re.compile(r"(url|uri|base|host|path|dir|folder|file|var|model|endpoint)", re.IGNORECASE)
#: String parameters whose names match but that reach nothing outside: why each is safe.
NOT_REACHING = {
    ("LiteLLMModel", "model"): "a litellm model name; where it is sent is api_base (an endpoint)",
    ("CohereReranker", "model"): "the name of a model the service runs; where it is sent is api_base (an endpoint)",
    ("JinaReranker", "model"): "the name of a model the service runs; where it is sent is api_base (an endpoint)",
    ("HttpReranker", "model"): "the score protocol's model name, sent to the server; where it is sent is api_base",
}


def test_every_parameter_that_reaches_outside_declares_its_kind():
    undeclared = []
    for name, cls in all_components():
        kinds = cls.SCHEMA.kinded_fields()
        nested = cls.SCHEMA.component_fields()
        for field, info in cls.SCHEMA.model_fields.items():
            if field in nested or "str" not in str(info.annotation) or not REACHING.search(field):
                continue
            if field not in kinds and (name, field) not in NOT_REACHING:
                undeclared.append(f"{name}.{field}")
    assert undeclared == []


def test_declared_values_are_found_at_every_depth_with_defaults():
    tree = validate_and_transform({"component": "ParallelRetriever", "params": {"children": [
        {"component": "BM25Retriever", "params": {"index": {"component": "QdrantKeywordIndex",
                                                            "params": {"path": "kw"}}}},
        {"component": "HttpReranker", "params": {"api_base": "http://rerank:8080",
                                                 "children": [{"component": "BM25Retriever"}]}}]}}, "retriever")
    found = {(v.path, v.kind, v.value) for v in declared_values(tree)}
    assert ("params.children[0].params.index.params.path", ParamKind.STORAGE_PATH, "kw") in found
    assert ("params.children[0].params.index.params.url", ParamKind.ENDPOINT, None) in found
    assert ("params.children[1].params.api_base", ParamKind.ENDPOINT, "http://rerank:8080") in found
    assert ("params.children[1].params.credential.params.var", ParamKind.CREDENTIAL_NAME,
            "DASHRAG_RERANKER_API_KEY") in found  # the default credential, which the config never wrote
