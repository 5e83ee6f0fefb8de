"""The OpenAPI document as the JavaScript ecosystem meets it, unpatched and with default options:
openapi-typescript's types compile under ``tsc --strict`` with requests that leave defaulted fields out,
and Redocly's recommended lint finds no error, with and without a bearer token. The npm packages are
installed into a temporary folder from the registry (slow); without npm the test is skipped, saying so."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings

pytestmark = pytest.mark.slow

PACKAGES = ["openapi-typescript@7", "typescript@5", "@redocly/cli@2"]

# requests as a TypeScript user writes them: the required fields only, the defaulted ones left out
REQUESTS = """
import type { components } from "./api";
type S = components["schemas"];
const retrieve: S["RetrieveRequest"] = { query: "how does BM25 saturate term frequency", collection_name: "notes" };
const query: S["TreeQuery"] = { query: "stemming" };
const build: S["BuildRequest"] = { name: "notes", config: { component: "BM25Retriever" }, corpus_path: "corpus" };
const add: S["AddDocumentsRequest"] = { documents: [{ id: "a.md", text: "Stemming maps words to a stem." }] };
console.log(retrieve, query, build, add);
"""


@pytest.fixture(scope="module")
def npm_tools(tmp_path_factory) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the JavaScript generators cannot run here")
    folder = tmp_path_factory.mktemp("npm-tools")
    subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(folder), *PACKAGES],
                   check=True, capture_output=True, timeout=600)
    return folder / "node_modules" / ".bin"


def write_document(folder: Path, guarded: bool) -> Path:
    settings = ServiceSettings(auth_token_var="DASHRAG_TS_TEST_TOKEN") if guarded else ServiceSettings()
    path = folder / "openapi.json"
    path.write_text(json.dumps(create_app(settings).openapi()))
    return path


def test_openapi_typescript_types_compile_strict_with_defaulted_fields_left_out(npm_tools, tmp_path):
    document = write_document(tmp_path, guarded=True)
    subprocess.run([str(npm_tools / "openapi-typescript"), str(document), "-o", str(tmp_path / "api.d.ts")],
                   check=True, capture_output=True, timeout=300)
    (tmp_path / "requests.ts").write_text(REQUESTS)
    compiled = subprocess.run([str(npm_tools / "tsc"), "--strict", "--noEmit", "requests.ts", "api.d.ts"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr


@pytest.mark.parametrize("guarded", [True, False], ids=["with-token", "without-token"])
def test_redocly_lint_finds_no_error(npm_tools, tmp_path, guarded):
    document = write_document(tmp_path, guarded)
    linted = subprocess.run([str(npm_tools / "redocly"), "lint", str(document)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert linted.returncode == 0 and "Your API description is valid" in linted.stdout + linted.stderr, \
        linted.stdout + linted.stderr
