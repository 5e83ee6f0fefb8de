"""Every relative link and every repository path that README.md and docs/*.md name exists.

A path is a backticked token whose first segment is a top-level entry of the repository
(``tests/llm/openai_server.py``, ``docs/service.md``) or a package of ``dashrag/`` (the docs
often write ``service/models.py`` for ``dashrag/service/models.py``); a pytest node id
(``path::test``) is checked by its file. Placeholders (``<Name>``, ``*``, ``{id}``, ``$VAR``)
and other projects' paths (``llama_cpp/llama_grammar.py``) are not repository paths.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\s]+)`")
PLACEHOLDER = re.compile(r"[<>*{}$]")
TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".") or p.name == ".github"}
PACKAGES = {p.name for p in (ROOT / "dashrag").iterdir() if p.is_dir()}


def relative_links(doc: Path) -> list[str]:
    targets = (m.group(1).split("#")[0] for m in LINK.finditer(doc.read_text(encoding="utf-8")))
    return [t for t in targets if t and not re.match(r"^[a-z][a-z+.-]*:", t)]


def repository_paths(doc: Path) -> list[str]:
    paths = []
    for match in CODE.finditer(doc.read_text(encoding="utf-8")):
        token = match.group(1).split("::")[0].rstrip(".,:;)")
        if PLACEHOLDER.search(token) or "/" not in token or token.startswith(("../", "/", "~")):
            continue
        token = token.removeprefix("./")
        first = token.split("/")[0]
        if first in TOP or first in PACKAGES:
            paths.append(token)
    return paths


def resolves(path: str) -> bool:
    """The file or folder exists; or ``module.name`` (``cli/paths.check_output_folder``) names something that
    module defines."""
    for base in (ROOT, ROOT / "dashrag"):
        if (base / path).exists():
            return True
        module, _, name = path.rpartition(".")
        source = base / f"{module}.py"
        if module and name.isidentifier() and source.is_file():
            return re.search(rf"^\s*(?:def|class)\s+{name}\b|^{name}\s*[:=]", source.read_text("utf-8"), re.M) is not None
    return False


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_relative_link_exists(doc: Path) -> None:
    missing = [t for t in relative_links(doc) if not (doc.parent / t).exists()]
    assert not missing, f"{doc.relative_to(ROOT)} links to missing files: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_repository_path_exists(doc: Path) -> None:
    missing = sorted({p for p in repository_paths(doc) if not resolves(p)})
    assert not missing, f"{doc.relative_to(ROOT)} names paths that are not in the repository: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_no_machine_paths(doc: Path) -> None:
    """A doc gives paths relative to the checkout or $HOME, never one machine's (/work/..., /home/...)."""
    found = sorted(set(re.findall(r"(?<![\w.~])/(?:work|home|Users|tmp/[\w-]+)/[\w./-]+", doc.read_text("utf-8"))))
    assert not found, f"{doc.relative_to(ROOT)} names paths of one machine: {found}"


def test_the_checker_sees_a_missing_path(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("see `tests/no_such_file.py`, `service/models.py`, `cli/paths.check_output_folder`, "
                   "`cli/paths.no_such_function` and [a](nowhere.md)", encoding="utf-8")
    assert repository_paths(doc) == ["tests/no_such_file.py", "service/models.py", "cli/paths.check_output_folder",
                                     "cli/paths.no_such_function"]
    assert [p for p in repository_paths(doc) if not resolves(p)] == ["tests/no_such_file.py",
                                                                        "cli/paths.no_such_function"]
    assert relative_links(doc) == ["nowhere.md"]
