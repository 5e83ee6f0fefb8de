"""The page shows where each hit came from (issue 35): PDF and DOCX files uploaded as a corpus from the page,
then each hit's file, page and section on its own line, as text (a heading holding markup stays text).
Real server, Chromium."""

from __future__ import annotations

from tests.fixtures.documents import write_docx, write_pdf

HOSTILE = '<img src=x onerror="window.hacked=1">Results'


def test_hits_of_uploaded_pdf_and_docx_files_show_their_file_page_and_section(page, tmp_path):
    pdf = write_pdf(tmp_path / "report.pdf", [["Okapi ranking"], ["fusion of rankings"], ["zebrafish were sampled"]])
    docx = write_docx(tmp_path / "notes.docx", [("h1", "Methods"), ("h2", HOSTILE), ("p", "zebrafish tanks counted")])
    page.get_by_label("Presets").select_option("keyword")
    page.get_by_role("button", name="Load preset").click()
    page.get_by_label("Tree name").fill("files")
    page.get_by_label("or upload").set_input_files([str(pdf), str(docx)])
    page.get_by_role("button", name="Build index").click()
    page.locator('.job[data-status="done"]').wait_for(timeout=120_000)
    page.get_by_role("button", name="Query saved trees").click()
    page.locator(".query-form select").first.select_option("files")
    page.get_by_label("Query", exact=True).fill("zebrafish")
    page.get_by_role("button", name="Search").click()
    page.locator(".results > li").nth(1).wait_for()
    origins = page.locator(".results > li .result-from").all_inner_texts()
    assert sorted(origins) == sorted(["From: report.pdf · p. 3", f"From: notes.docx · Methods › {HOSTILE}"])
    assert page.locator(".results img").count() == 0 and page.evaluate("window.hacked") is None
