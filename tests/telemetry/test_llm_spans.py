"""An agentic reranker's query as spans: the reranker (OpenInference RERANKER) with its input and output
documents, and one LLM span per model call with the model, tokens and cost of that call. The model is the
scripted OpenAI-protocol server on loopback (tests/llm/openai_server.py), driven through litellm by a real
process; the spans come to the loopback OTLP receiver."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLE_CORPUS
from tests.llm.openai_server import ScriptedOpenAIServer, select
from tests.telemetry.otlp_receiver import OtlpReceiver

KEY_VAR = "DASHRAG_TEST_OTEL_LLM_KEY"
QUERY = "how does BM25 saturate the frequency of a term in documents"


@pytest.mark.slow
def test_an_agentic_query_exports_a_reranker_span_and_an_llm_span_per_call(tmp_path):
    with ScriptedOpenAIServer() as server, OtlpReceiver() as receiver:
        server.script(select(1, 5), select(2, 1))  # the first answer breaks the rules (5 of 3): one retry
        config = {"component": "AgenticRerankerRetriever", "params": {
            "k1": 3, "top_k": 2, "children": [{"component": "BM25Retriever", "params": {}}],
            "llm_model": {"component": "LiteLLMModel", "params": {
                "model": "openai/test-model", "api_base": server.api_base, "timeout": 5.0,
                "retry_feedback": "tool_message", "credential": {"component": "EnvCredential",
                                                                 "params": {"var": KEY_VAR}}}}}}
        (tmp_path / "tree.json").write_text(json.dumps(config))
        script = (f"import json, dashrag; tree = dashrag.build(json.load(open({str(tmp_path / 'tree.json')!r})), "
                  f"{str(EXAMPLE_CORPUS)!r}, {str(tmp_path / 'work')!r}); chunks, node = tree.retrieve({QUERY!r}); "
                  "print(json.dumps(node['selection']['attempts']))")
        env = {**os.environ, KEY_VAR: "sk-otel-test", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
               "OTEL_BSP_SCHEDULE_DELAY": "100"}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        attempts = json.loads(result.stdout.strip().splitlines()[-1])
        spans = receiver.wait_for(4)
    assert len(attempts) == 2, attempts
    assert {s["name"] for s in spans} == {"AgenticRerankerRetriever", "BM25Retriever", "LiteLLMModel"}, spans
    reranker = next(s for s in spans if s["name"] == "AgenticRerankerRetriever")
    llm_calls = sorted((s for s in spans if s["name"] == "LiteLLMModel"), key=lambda s: s["start"])
    assert reranker["attributes"]["openinference.span.kind"] == "RERANKER"
    assert reranker["attributes"]["reranker.query"] == QUERY and reranker["attributes"]["reranker.top_k"] == 2
    assert "reranker.input_documents.2.document.id" in reranker["attributes"]
    assert "reranker.output_documents.1.document.id" in reranker["attributes"]
    assert len(llm_calls) == 2 and all(s["parent_id"] == reranker["span_id"] for s in llm_calls)
    for span, attempt in zip(llm_calls, attempts):
        assert span["attributes"]["openinference.span.kind"] == "LLM"
        assert span["attributes"]["llm.model_name"] == "openai/test-model"
        assert span["attributes"]["llm.token_count.prompt"] == attempt["usage"]["prompt_tokens"]
        assert span["attributes"]["llm.token_count.total"] == attempt["usage"]["total_tokens"]
        assert ("llm.cost.total" in span["attributes"]) == (attempt["cost"] is not None)
