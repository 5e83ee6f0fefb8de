"""retrieval_score calibration: cosine trees keep the cosine, other trees saturate with a per-tree constant."""

from __future__ import annotations

import json
import os
import sys

import anyio
import httpx
import pytest

import dashrag
from dashrag.service.app import create_app
from dashrag.service.calibration import (
    CACHE_FILE,
    Calibration,
    calibrate_retriever,
    calibrate_saved,
    clip_cosine,
    is_cosine_tree,
    median_best,
    probe_queries,
    saturate,
)
from dashrag.service.settings import ServiceSettings
from tests.conftest import EXAMPLE_CORPUS
from tests.llm.openai_server import ScriptedOpenAIServer, select
from tests.service.conftest import LoopbackServer
from tests.web.conftest import serving


def test_cosine_is_clipped_to_the_unit_interval():
    assert [clip_cosine(s) for s in (-0.4, 0.0, 0.37, 1.0000001)] == [0.0, 0.0, 0.37, 1.0]


def test_saturation_is_half_at_the_constant_zero_at_zero_and_monotone():
    assert saturate(2.5, 2.5) == 0.5 and saturate(0.0, 2.5) == 0.0 and saturate(-3, 2.5) == 0.0
    values = [saturate(s, 2.5) for s in (0.1, 1, 5, 50, 5000)]
    assert values == sorted(values) and all(0 < v < 1 for v in values)


def test_the_constant_is_the_median_of_positive_best_scores():
    assert median_best([0.0, 1.0, 3.0, 10.0]) == 3.0
    assert median_best([0.0, 0.0]) == 1.0


def test_which_trees_are_cosine_trees():
    assert is_cosine_tree({"component": "DenseEmbeddingRetriever", "params": {"similarity_metric": "cosine"}})
    assert not is_cosine_tree({"component": "DenseEmbeddingRetriever", "params": {"similarity_metric": "dot"}})
    assert is_cosine_tree({"component": "TFIDFRetriever", "params": {}})
    assert not is_cosine_tree({"component": "BM25Retriever", "params": {}})


def test_a_keyword_tree_gets_a_saturating_calibration_from_its_own_probes(trees_dir):
    tree = dashrag.load(trees_dir / "kw")
    probes = probe_queries(tree.require_infra().chunks)
    assert probes and probes == probe_queries(tree.require_infra().chunks)
    best = sorted(chunks[0].score for chunks, _ in tree.retrieve_batch(probes) if chunks)
    calibration = calibrate_retriever(tree)
    assert calibration.kind == "saturating"
    assert calibration.constant == pytest.approx(median_best(best))
    assert calibration(calibration.constant) == pytest.approx(0.5)


def test_a_calibration_maps_the_same_native_score_to_the_same_value_whatever_the_query():
    calibration = Calibration("saturating", 4.0)
    assert calibration(4.0) == calibration(4.0) == 0.5


AGENTIC_KEY_VAR = "DASHRAG_TEST_CALIBRATION_LLM_KEY"


def agentic_config(api_base: str) -> dict:
    return {"component": "AgenticRerankerRetriever", "params": {
        "k1": 3, "top_k": 2, "children": [{"component": "BM25Retriever", "params": {}}],
        "llm_model": {"component": "LiteLLMModel", "params": {
            "model": "openai/test-model", "api_base": api_base, "timeout": 5.0,
            "credential": {"component": "EnvCredential", "params": {"var": AGENTIC_KEY_VAR}}}}}}


async def mcp_list_trees(trees: str) -> dict:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = StdioServerParameters(command=sys.executable, args=["-m", "dashrag.cli.main", "mcp", "--trees", trees],
                                    env=dict(os.environ))
    async with stdio_client(command) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return (await session.call_tool("list_trees", {})).structured_content


@pytest.mark.slow
def test_an_agentic_trees_calibration_calls_the_llm_once_per_save_not_at_every_start(tmp_path, monkeypatch):
    """The service's first load (`dashrag serve`) probes the tree (an LLM call per probe that needs one); its next
    start (the app started again, in this process) and a `dashrag mcp` read the cached calibration: no LLM call. The
    scripted OpenAI-protocol server counts the calls."""
    monkeypatch.setenv(AGENTIC_KEY_VAR, "sk-calibration-test")
    with ScriptedOpenAIServer() as llm:
        llm.script(*[select(1, 2)] * 64)
        trees = tmp_path / "trees"
        dashrag.build(agentic_config(llm.api_base), EXAMPLE_CORPUS, tmp_path / "work").save(trees / "agentic")
        assert len(llm.requests) == 0  # building asks no LLM

        with serving(trees, env={AGENTIC_KEY_VAR: "sk-calibration-test"}) as url:
            first = httpx.get(f"{url}/trees").json()[0]["calibration"]
        calls = len(llm.requests)  # one per probe that leaves the reranker more candidates than it keeps
        assert calls > 1 and first["kind"] == "saturating"

        # the next start: the same app in this process (a `dashrag serve` start is ~3.5 s of CPU; docs/testing.md,
        # "Ninth pass"), which holds nothing of the first start's process: only the saved calibration can answer
        with LoopbackServer(create_app(ServiceSettings(trees_dir=trees))) as server:
            assert httpx.get(f"{server.url}/trees", timeout=60).json()[0]["calibration"] == first
        assert anyio.run(mcp_list_trees, str(trees))["trees"][0]["name"] == "agentic"
        assert len(llm.requests) == calls  # neither the second start nor the MCP server called the LLM


def test_a_cache_of_another_save_or_unreadable_is_computed_again(tmp_path):
    from dashrag.core.persistence import read_manifest

    folder = tmp_path / "kw"
    tree = dashrag.build({"component": "BM25Retriever", "params": {}}, EXAMPLE_CORPUS, tmp_path / "work")
    tree.save(folder)
    manifest = read_manifest(folder)
    computed = calibrate_saved(folder, manifest, tree)
    assert json.loads((folder / CACHE_FILE).read_text())["calibration"] == computed.describe()
    for cached in ({"key": "another save", "calibration": {"kind": "saturating", "constant": 99.0}},
                   {"key": "x", "calibration": "not an object"}, "[truncated"):
        (folder / CACHE_FILE).write_text(cached if isinstance(cached, str) else json.dumps(cached))
        if isinstance(cached, dict):  # the right key, a value that is no calibration: not trusted either
            assert calibrate_saved(folder, manifest, tree) == computed
        assert calibrate_saved(folder, manifest, tree) == computed
    good = json.loads((folder / CACHE_FILE).read_text())
    (folder / CACHE_FILE).write_text(json.dumps({**good, "calibration": {"kind": "saturating", "constant": -1}}))
    assert calibrate_saved(folder, manifest, tree) == computed
