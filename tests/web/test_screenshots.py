"""The page's screenshots in docs/ can be re-made: every ``img/web-*.png`` the docs show exists and is one that
``tests/web/screenshots.py`` writes (``python -m tests.web.screenshots`` regenerates them all)."""

from __future__ import annotations

import re

from tests.conftest import REPO

SHOWN = re.compile(r"\(img/(web-[a-z0-9-]+\.png)\)")
MADE = re.compile(r'out / "(web-[a-z0-9-]+\.png)"')


def test_every_page_screenshot_the_docs_show_is_made_by_the_script():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    shown = {name for page in pages for name in SHOWN.findall(page.read_text(encoding="utf-8"))}
    made = set(MADE.findall((REPO / "tests" / "web" / "screenshots.py").read_text(encoding="utf-8")))
    assert {"web-build-status.png", "web-delete-confirm.png", "web-query-unknown-field.png"} <= shown
    assert sorted(shown - made) == []
    assert sorted(name for name in made if not (REPO / "docs" / "img" / name).is_file()) == []
