"""Users' files on the page (issue 35): PDF and DOCX files uploaded as a corpus, what became of each file (read,
skipped or failed, with why) once built, then each hit's file, page and section on its own line, as text (a
heading holding markup stays text). Real server, Chromium."""

from __future__ import annotations

from tests.fixtures.documents import write_docx, write_pdf, write_scanned_pdf

HOSTILE = '<img src=x onerror="window.hacked=1">Results'


def test_uploaded_files_outcomes_then_hits_show_their_file_page_and_section(page, tmp_path):
    pdf = write_pdf(tmp_path / "report.pdf", [["Okapi ranking"], ["fusion of rankings"], ["zebrafish were sampled"]])
    docx = write_docx(tmp_path / "notes.docx", [("h1", "Methods"), ("h2", HOSTILE), ("p", "zebrafish tanks counted")])
    scan = write_scanned_pdf(tmp_path / "scan.pdf")
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    page.get_by_label("Presets").select_option("keyword")
    page.get_by_role("button", name="Load preset").click()
    page.get_by_label("Tree name").fill("files")
    page.get_by_label("or upload").set_input_files([str(pdf), str(docx), str(scan), str(tmp_path / "empty.md")])
    page.get_by_role("button", name="Build index").click()
    page.locator('.job[data-status="done"]').wait_for(timeout=120_000)
    files = page.locator(".job-files")
    assert files.locator("summary").inner_text() == "Files: 2 read, 1 skipped, 1 failed"
    outcomes = {li.get_attribute("data-outcome") + " " + li.inner_text() for li in files.locator("li").all()}
    assert outcomes == {"read report.pdf read", "read notes.docx read", "skipped empty.md skipped: empty",
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
