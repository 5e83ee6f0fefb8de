"""Where one agentic query's time goes: the child, the LLM round trips, and the rest.

    .venv/bin/python bench/bench_agentic.py                    # default hybrid child, 300 SciFact docs
    .venv/bin/python bench/bench_agentic.py --child bm25       # a BM25 child only (no embedding model)
    .venv/bin/python bench/bench_agentic.py --queries 50 --docs 1000 --trials-wrong 1

The model is the scripted OpenAI-compatible server of the tests (tests/llm/openai_server.py)
on loopback, answering every call with a valid selection (or, with ``--trials-wrong N``,
N invalid answers first), so the LLM time is litellm + HTTP + JSON with no model
inference: the figure to compare is **the rest**, i.e. what dashrag itself adds
(dedupe, prompt rendering, validation, usage and cost extraction, trace building).

For each query: ``total`` is the wall time of ``retrieve``; ``child`` is the child
node's ``elapsed_ms`` from the trace; ``llm`` is the sum of the attempts'
``latency_ms`` (each the wall time of one ``litellm.completion`` call); ``rest`` is
``total - child - llm``. litellm is imported and one call made before timing starts
(its first call in a process loads provider code lazily, about a second).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dashrag  # noqa: E402
from dashrag.core.validation import validate_and_transform  # noqa: E402
from dashrag.llm.tool_call import load_litellm  # noqa: E402
from tests.llm.openai_server import ScriptedOpenAIServer, select  # noqa: E402

SCIFACT = REPO.parent / "shared" / "data" / "scifact"


def scifact_subset(folder: Path, n_docs: int) -> tuple[Path, list[str]]:
    path = folder / "corpus.jsonl"
    with (
        gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as src,
        open(path, "w", encoding="utf-8") as dst,
    ):
        for i, line in enumerate(src):
            if i == n_docs:
                break
            dst.write(line)
    queries = [
        json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    return path, queries


def tree(child: str, api_base: str, k1: int, top_k: int) -> dict:
    config = validate_and_transform({"component": "AgenticRerankerRetriever", "params": {"k1": k1, "top_k": top_k}})
    if child == "bm25":
        config["params"]["children"] = [{"component": "BM25Retriever", "params": {}}]
    config["params"]["llm_model"] = {
        "component": "LiteLLMModel",
        "params": {
            "model": "openai/bench-model",
            "api_base": api_base,
            "credential": {"component": "EnvCredential", "params": {"var": "DASHRAG_BENCH_UNSET_KEY"}},
        },
    }
    return config


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"median {statistics.median(ordered):8.2f}  p90 {p90:8.2f}  max {ordered[-1]:8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", choices=["default", "bm25"], default="default")
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--k1", type=int, default=10)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--trials-wrong", type=int, default=0, help="invalid answers before the valid one")
    args = parser.parse_args()

    started = time.perf_counter()
    load_litellm()
    print(f"litellm import: {time.perf_counter() - started:.1f} s")
    with ScriptedOpenAIServer() as server, tempfile.TemporaryDirectory() as work:
        corpus, queries = scifact_subset(Path(work), args.docs)
        started = time.perf_counter()
        retriever = dashrag.build(tree(args.child, server.api_base, args.k1, args.top_k), corpus, Path(work) / "build")
        print(f"build ({args.child} child, {args.docs} docs): {time.perf_counter() - started:.1f} s")
        answer = select(*range(args.top_k, 0, -1))
        server.script(answer)
        retriever.retrieve(queries[-1])  # warm-up: litellm's first call, the child's first query
        rows, skipped = [], 0
        for query in queries[: args.queries]:
            server.script(*([select(args.k1 + 1)] * args.trials_wrong), answer)
            t0 = time.perf_counter()
            _, trace = retriever.retrieve(query)
            total = (time.perf_counter() - t0) * 1000
            selection = trace["selection"]
            if selection["model_skipped"]:  # the child found <= top_k: no LLM call to time
                skipped += 1
                continue
            child = trace["children"][0]["elapsed_ms"]
            llm = selection["llm_ms"]
            rows.append((total, child, llm, total - child - llm, selection["llm_calls"]))
        retriever.close()
    print(
        f"{len(rows)} queries ({skipped} more skipped the model: <= top_k candidates), "
        f"k1={args.k1}, top_k={args.top_k}, "
        f"LLM calls per query: {statistics.mean(r[4] for r in rows):.1f}  (times in ms)"
    )
    for name, column in (("total", 0), ("child", 1), ("llm round trips", 2), ("rest", 3)):
        print(f"  {name:16s} {summary([r[column] for r in rows])}")


if __name__ == "__main__":
    main()
