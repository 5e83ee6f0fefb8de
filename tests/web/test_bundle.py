"""The committed bundle in dashrag/web/static/ was built from the sources in frontend/ as they are now."""

from __future__ import annotations

import hashlib
import json
import re

from tests.conftest import REPO

FRONTEND = REPO / "frontend"
STATIC = REPO / "dashrag" / "web" / "static"
BUILD_INPUTS = ("index.html", "build.mjs", "package.json", "package-lock.json")


def source_hash() -> tuple[str, list[str]]:
    """As ``sourceHash`` in frontend/build.mjs: for each source in path order, its path, NUL, its bytes, NUL."""
    paths = [p.relative_to(FRONTEND).as_posix() for p in (FRONTEND / "src").rglob("*") if p.is_file()]
    paths = sorted(paths + list(BUILD_INPUTS))
    digest = hashlib.sha256()
    for rel in paths:
        digest.update(rel.encode() + b"\0" + (FRONTEND / rel).read_bytes() + b"\0")
    return digest.hexdigest(), paths


def test_the_committed_bundle_was_built_from_the_current_sources():
    info = json.loads((STATIC / "build-info.json").read_text(encoding="utf-8"))
    sha256, paths = source_hash()
    assert info["sources"] == paths, "rebuild with `bash scripts/build_frontend.sh`: the set of sources changed"
    assert info["sources_sha256"] == sha256, "rebuild with `bash scripts/build_frontend.sh`: frontend/ changed"


def test_the_bundle_is_complete_and_asks_no_other_host():
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    assert 'src="app.js"' in html and 'href="app.css"' in html
    for name in ("app.js", "app.css"):
        text = (STATIC / name).read_text(encoding="utf-8")
        assert (STATIC / name).stat().st_size > 0
        # no absolute URL that a browser would fetch (JSON Schema ids and license links are not fetched)
        fetched = (re.findall(r"""(?:src|href)\s*=\s*["'](https?:)?//""", text)
                   + re.findall(r"""url\(\s*["']?https?:""", text))
        assert fetched == [], f"{name} loads from another host"


def test_the_page_uses_no_raw_html_injection():
    """Document text reaches the page only as React text nodes, which escape it."""
    sources = "".join(p.read_text(encoding="utf-8") for p in (FRONTEND / "src").rglob("*.jsx"))
    assert "dangerouslySetInnerHTML" not in sources and "innerHTML" not in sources
