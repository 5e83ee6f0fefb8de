"""The page's own strings (frontend/src/strings.json) exist in English and Spanish alike."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO

TEXTS = json.loads((REPO / "frontend" / "src" / "strings.json").read_text(encoding="utf-8"))
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def test_every_page_string_has_english_and_spanish():
    en, es = TEXTS["strings"]["en"], TEXTS["strings"]["es"]
    assert sorted(en) == sorted(es)
    assert [k for k in en if not en[k].strip() or not es[k].strip()] == []


def test_the_spanish_strings_keep_the_english_placeholders():
    en, es = TEXTS["strings"]["en"], TEXTS["strings"]["es"]
    assert {k: sorted(PLACEHOLDER.findall(v)) for k, v in en.items()} == \
        {k: sorted(PLACEHOLDER.findall(v)) for k, v in es.items()}


def test_every_category_of_the_picker_has_both_names():
    used = {json.loads(p.read_text(encoding="utf-8"))["category"] for p in (REPO / "frontend_meta").glob("*.json")}
    assert set(TEXTS["categories"]["en"]) == set(TEXTS["categories"]["es"]) == used


def test_every_string_of_the_form_library_has_its_spanish():
    """rjsf's own words (its TranslatableString values, in frontend/node_modules when installed)."""
    enums = REPO / "frontend" / "node_modules" / "@rjsf" / "utils" / "lib" / "enums.js"
    spanish = TEXTS["rjsf_es"]
    assert all(text.strip() for text in spanish.values())
    if enums.is_file():  # the bundle's build installs it; CI without Node checks the table alone
        english = [json.loads(s) for s in re.findall(r'TranslatableString\["\w+"\] = ("(?:[^"\\]|\\.)*");',
                                                       enums.read_text(encoding="utf-8"))]
        assert english and sorted(english) == sorted(spanish)
