"""Users' files on the page (issue 35): PDF, DOCX and HTML files uploaded as a corpus, what became of each file (read,
skipped or failed, with why) once built, then each hit's file, page and section on its own line, as text (a
heading holding markup stays text). Real server, Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

import dashrag
from tests.cli.test_documents_structure import make_folder
from tests.fixtures.documents import html_page, write_docx, write_pdf, write_scanned_pdf
from tests.web.conftest import serving, watched_page

HOSTILE = '<img src=x onerror="window.hacked=1">Results'


@pytest.mark.slow  # a build job of uploaded files in a real browser: about 15 s here
def test_uploaded_files_outcomes_then_hits_show_their_file_page_and_section(page, tmp_path):
    pdf = write_pdf(tmp_path / "report.pdf", [["Okapi ranking"], ["fusion of rankings"], ["zebrafish were sampled"]])
    docx = write_docx(tmp_path / "notes.docx", [("h1", "Methods"), ("h2", HOSTILE), ("p", "zebrafish tanks counted")])
    scan = write_scanned_pdf(tmp_path / "scan.pdf")
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    web = tmp_path / "page.html"
    web.write_text(html_page("Okapi notes", ["okapi weights saturate term frequency in every ranked list"],
                             heading="Weights"), encoding="utf-8")
    page.get_by_label("Presets").select_option("keyword")
    page.get_by_role("button", name="Load preset").click()
    page.get_by_label("Tree name").fill("files")
    page.get_by_label("or upload").set_input_files([str(pdf), str(docx), str(scan), str(tmp_path / "empty.md"),
                                                    str(web)])
    page.get_by_role("button", name="Build index").click()
    page.locator('.job[data-status="done"]').wait_for(timeout=120_000)
    files = page.locator(".job-files")
    assert files.locator("summary").inner_text() == "Files: 3 read, 1 skipped, 1 failed"
    outcomes = {li.get_attribute("data-outcome") + " " + li.inner_text() for li in files.locator("li").all()}
    assert outcomes == {"read report.pdf read", "read notes.docx read", "read page.html read",
                        "skipped empty.md skipped: empty",
                        "failed scan.pdf failed: no text layer on its 1 page(s) (a scanned PDF? dashrag does no OCR)"}
    assert str(tmp_path) not in files.inner_text() and ".upload-" not in files.inner_text()
    page.get_by_role("button", name="Query saved trees").click()
    page.locator(".query-form select").first.select_option("files")
    page.get_by_label("Query", exact=True).fill("zebrafish")
    page.get_by_role("button", name="Search").click()
    page.locator(".results > li").nth(1).wait_for()
    origins = page.locator(".results > li .result-from").all_inner_texts()
    assert sorted(origins) == sorted(["From: report.pdf · p. 3", f"From: notes.docx · Methods › {HOSTILE}"])
    assert page.locator(".results img").count() == 0 and page.evaluate("window.hacked") is None
    page.get_by_label("Query", exact=True).fill("okapi weights under")
    page.get_by_role("button", name="Search").click()
    expect(page.locator(".results > li .result-from").first).to_have_text("From: page.html · Okapi notes › Weights")


@pytest.fixture(scope="module")
def folder_server(tmp_path_factory):
    """A server whose data root holds a folder ``docs``, and a tree built from it that records it (absolute, as
    ``dashrag index`` does: the service offers it relative to its data root)."""
    root = tmp_path_factory.mktemp("folder-server")
    (root / "data").mkdir()
    folder = make_folder(root / "data" / "docs")
    dashrag.build_tree("keyword", folder, root / "trees" / "docs", source_folder=folder.resolve())
    with serving(root / "trees", data_root=root / "data") as url:
        yield url, folder


@pytest.mark.slow  # a server of its own and a sync job in a real browser: about 30 s here
def test_the_documents_panel_syncs_a_tree_with_the_server_folder_it_was_built_from(browser, folder_server, problems):
    url, folder = folder_server
    write_docx(folder / "new.docx", [("h1", "Okapi"), ("h2", "Saturation"), ("p", "okapi saturation of terms")])
    (folder / "guide.md").unlink()
    with watched_page(browser, problems) as page:
        page.goto(url + "/")
        page.get_by_role("button", name="Query saved trees").click()
        page.locator('li[data-tree="docs"]').get_by_role("button", name="Documents").click()
        panel = page.locator('.documents-panel[data-tree="docs"]')
        expect(panel.get_by_label("Folder (under the server data root)")).to_have_value("docs")  # offered, not typed
        assert panel.locator(".documents-sync-source").inner_text().startswith("The tree was built from docs,")
        assert str(folder.parent) not in panel.inner_text()
        panel.get_by_role("button", name="Sync", exact=True).click()
        counts = panel.locator(".documents-sync .documents-counts")
        counts.wait_for(timeout=120_000)
        assert counts.inner_text() == "1 added, 0 replaced, 1 removed, 3 unchanged, 0 failed."
        expect(panel.locator(".documents-count")).to_contain_text("4 documents")
        assert sorted(panel.locator("tr[data-document]").evaluate_all("rs => rs.map(r => r.dataset.document)")) == \
            ["new.docx", "notes.docx", "page.html", "report.pdf"]
