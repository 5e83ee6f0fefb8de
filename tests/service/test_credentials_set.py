"""A credential a tree needs is checked before any build: allowed by the operator *and* set on the server.

The agentic preset used to embed the whole corpus and then fail at 95 % on a missing ``OPENAI_API_KEY``;
now the validation the page calls (``POST /trees/validate``) and ``POST /trees`` name the variable at its
field. A credential the tree can run without (an LLM on its own ``api_base`` sends a placeholder, an
``HttpReranker`` whose key is optional) is not required.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO
from tests.service.conftest import make_client

AGENTIC = json.loads((REPO / "components" / "agentic.json").read_text())
VAR_PATH = "params.llm_model.params.credential.params.var"
ALLOWED = {"allow_credentials": ["OPENAI_API_KEY"], "allow_endpoints": ["http://127.0.0.1:9/v1"]}


def with_llm(**llm_params) -> dict:
    tree = json.loads(json.dumps(AGENTIC))
    tree["params"]["llm_model"]["params"].update(llm_params)
    return tree


def problems(client, tree: dict) -> dict[str, str]:
    answer = client.post("/trees/validate", json=tree).json()
    return {e["path"]: e["message"] for e in answer["errors"]}


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.mark.slow
def test_the_agentic_preset_fails_validation_naming_its_unset_variable(no_key, trees_copy):
    with make_client(trees_dir=trees_copy, data_root=REPO / "examples", **ALLOWED) as client:
        found = problems(client, AGENTIC)
    assert "OPENAI_API_KEY is not set on the server" in found[VAR_PATH]


@pytest.mark.slow
def test_a_build_of_a_tree_whose_variable_is_unset_is_refused_before_it_starts(no_key, trees_copy):
    tree = with_llm(api_base=None)
    with make_client(trees_dir=trees_copy, data_root=REPO / "examples", **ALLOWED) as client:
        answer = client.post("/trees", json={"name": "no-key", "config": tree, "corpus_path": "corpus"})
        jobs = client.get("/trees").json()
    assert answer.status_code == 422
    assert any(e["path"] == VAR_PATH and "OPENAI_API_KEY is not set" in e["message"] for e in answer.json()["detail"])
    assert "no-key" not in {t["name"] for t in jobs} and not (trees_copy / "no-key").exists()


@pytest.mark.slow
def test_a_set_variable_passes(monkeypatch, trees_copy):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set")
    with make_client(trees_dir=trees_copy, data_root=REPO / "examples", **ALLOWED) as client:
        assert VAR_PATH not in problems(client, AGENTIC)


@pytest.mark.slow
def test_a_blank_variable_counts_as_unset(monkeypatch, trees_copy):
    monkeypatch.setenv("OPENAI_API_KEY", " \r\n")
    with make_client(trees_dir=trees_copy, data_root=REPO / "examples", **ALLOWED) as client:
        assert "is not set" in problems(client, AGENTIC)[VAR_PATH]


@pytest.mark.slow
def test_an_llm_on_its_own_server_does_not_need_the_variable(no_key, trees_copy):
    with make_client(trees_dir=trees_copy, data_root=REPO / "examples", **ALLOWED) as client:
        assert problems(client, with_llm(api_base="http://127.0.0.1:9/v1")) == {}


@pytest.mark.slow
def test_an_optional_reranker_key_is_not_required_and_a_required_one_is(no_key, trees_copy):
    def reranker(required: bool) -> dict:
        return {"component": "HttpReranker", "params": {"api_base": "http://127.0.0.1:9/v1", "api_key_required":
                required, "credential": {"component": "EnvCredential", "params": {"var": "OPENAI_API_KEY"}}}}

    with make_client(trees_dir=trees_copy, data_root=REPO / "examples", **ALLOWED) as client:
        optional, required = problems(client, reranker(False)), problems(client, reranker(True))
    assert optional == {} and "OPENAI_API_KEY is not set" in required["params.credential.params.var"]


@pytest.mark.slow
def test_whether_a_variable_that_is_not_allowed_is_set_is_never_said(no_key, trees_copy):
    with make_client(trees_dir=trees_copy, data_root=REPO / "examples") as client:
        message = problems(client, AGENTIC)[VAR_PATH]
    assert "--allow-credential" in message and "not set" not in message
