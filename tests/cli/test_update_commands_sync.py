"""``dashrag sync TREE FOLDER`` as a user meets it: a plan on --dry-run with nothing written, counts after a
sync, answers equal to a fresh index of the folder, unchanged files (even touched ones) not re-read, and a
failed file named, kept as it was, or refused with --strict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.cli.conftest import invoke
from tests.conftest import folder_digest
from tests.fixtures.documents import write_docx, write_pdf
from tests.fixtures.save_phases import PHASES, first_write_after, kill_in_phase

QUERIES = ["okapi ranking saturation", "dense embeddings vectors", "fusion of rankings", "sparse postings",
           "cancer cells", "protein expression in mice"]


def make_folder(folder: Path) -> Path:
    folder.mkdir()
    write_pdf(folder / "report.pdf", [["Okapi ranking", "term saturation"], ["page two: fusion of rankings"]])
    write_docx(folder / "notes.docx", [("h1", "Notes"), ("p", "dense embeddings as vectors")])
    (folder / "bm25.md").write_text("# BM25\n\nterm frequency saturation and okapi", encoding="utf-8")
    (folder / "gone.txt").write_text("sparse postings of a file that will be deleted", encoding="utf-8")
    (folder / "touched.txt").write_text("a file whose time changes, not its text", encoding="utf-8")
    return folder


def change_folder(folder: Path) -> None:
    (folder / "gone.txt").unlink()
    (folder / "bm25.md").write_text("# BM25\n\nrewritten: sparse postings with okapi weights", encoding="utf-8")
    write_docx(folder / "new.docx", [("h1", "Fusion"), ("p", "reciprocal rank fusion of rankings")])
    os.utime(folder / "touched.txt", (1_700_000_000, 1_700_000_000))


def answers(tree: Path) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        result = invoke("query", tree, query, "--json", "--top-k", "10")
        assert result.exit_code == 0, result.output
        hits = json.loads(result.stdout)["results"]
        out.append(sorted((h["document_id"], round(h["score"], 5)) for h in hits))
    return out


@pytest.fixture
def synced_pair(tmp_path):
    folder = make_folder(tmp_path / "docs")
    tree = tmp_path / "tree"
    assert invoke("index", "keyword", "--corpus", folder, "--out", tree).exit_code == 0
    change_folder(folder)
    return tree, folder


@pytest.mark.slow
def test_dry_run_shows_the_plan_and_writes_nothing(synced_pair):
    tree, folder = synced_pair
    before = folder_digest(tree)
    result = invoke("sync", tree, folder, "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert set(lines[:-1]) == {"would add new.docx", "would replace bm25.md", "would remove gone.txt"}
    assert lines[-1] == f"plan for {tree}: 1 to add, 1 to replace, 1 to remove, 3 unchanged (nothing written)"
    assert folder_digest(tree) == before


@pytest.mark.slow
def test_sync_counts_what_changed_and_answers_as_a_fresh_index(synced_pair, tmp_path):
    tree, folder = synced_pair
    result = invoke("sync", tree, folder)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"updated {tree}: 1 added, 1 replaced, 1 removed, 3 unchanged, 0 failed"
    fresh = tmp_path / "fresh"
    assert invoke("index", "keyword", "--corpus", folder, "--out", fresh).exit_code == 0
    assert answers(tree) == answers(fresh)
    again = invoke("sync", tree, folder)
    assert again.stdout.strip() == f"unchanged {tree}: 0 added, 0 replaced, 0 removed, 5 unchanged, 0 failed"


@pytest.mark.slow
def test_sync_without_a_folder_reads_the_one_the_tree_was_built_from(synced_pair, tmp_path, monkeypatch):
    tree, folder = synced_pair
    monkeypatch.chdir(tmp_path / "docs")  # the recorded folder is absolute: any working folder will do
    result = invoke("sync", tree)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"folder: {folder.resolve()} (the folder {tree} was built from)",
                                          f"updated {tree}: 1 added, 1 replaced, 1 removed, 3 unchanged, 0 failed"]
    (folder / "later.md").write_text("# Later\n\nadded after the first sync", encoding="utf-8")
    again = invoke("sync", tree)  # the update's save kept the record
    assert again.stdout.splitlines()[-1] == f"updated {tree}: 1 added, 0 replaced, 0 removed, 5 unchanged, 0 failed"


def test_sync_without_a_folder_of_a_tree_that_records_none_or_a_relative_one_is_one_error_line(tmp_path):
    import dashrag

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bm25.md").write_text("# BM25\n\nokapi saturation", encoding="utf-8")
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text(json.dumps({"_id": "d1", "text": "okapi saturation"}) + "\n", encoding="utf-8")
    assert invoke("index", "keyword", "--corpus", jsonl, "--out", tmp_path / "from-jsonl").exit_code == 0
    dashrag.build_tree("keyword", folder, tmp_path / "from-service", source_folder="docs")  # as the service records
    for tree, why in (("from-jsonl", "records no folder of files it was built from"),
                      ("from-service", "records the folder 'docs' relative to the data root")):
        before = folder_digest(tmp_path / tree)
        result = invoke("sync", tmp_path / tree)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert result.stderr.startswith(f"error: {tmp_path / tree}: the tree {why}"), result.stderr
        assert "dashrag sync TREE FOLDER" in result.stderr
        assert folder_digest(tmp_path / tree) == before


@pytest.mark.slow
def test_a_changed_file_that_no_longer_reads_is_named_and_kept_as_it_was(synced_pair):
    tree, folder = synced_pair
    (folder / "report.pdf").write_bytes(b"%PDF-1.4 truncated by a bad copy")
    result = invoke("sync", tree, folder)
    assert result.exit_code == 0, result.output
    assert "report.pdf: not a readable PDF" in result.stderr
    assert result.stdout.strip().endswith("1 failed")
    hits = json.loads(invoke("query", tree, "okapi ranking", "--json").stdout)["results"]
    assert "report.pdf" in {h["document_id"] for h in hits}


@pytest.mark.slow
def test_strict_sync_with_a_bad_file_is_exit_2_and_leaves_the_tree(synced_pair):
    tree, folder = synced_pair
    (folder / "broken.docx").write_bytes(b"not a zip")
    before = folder_digest(tree)
    result = invoke("sync", tree, folder, "--strict")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1].startswith("error: 1 file(s) could not be read (--strict)")
    assert folder_digest(tree) == before


def test_sync_of_a_folder_that_is_no_tree_is_one_error_line(tmp_path):
    folder = make_folder(tmp_path / "docs")
    result = invoke("sync", tmp_path / "nothing", folder)
    assert result.exit_code == 2 and result.stderr.startswith("error: ")


def _sync_process(tree: Path, folder: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dashrag.cli.main", "sync", str(tree), str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
def test_sigkill_at_any_moment_of_sync_leaves_the_old_or_the_new_tree(scifact_subset_file, tmp_path):
    records = [json.loads(line) for line in scifact_subset_file.read_text(encoding="utf-8").splitlines()[:240]]
    folder = tmp_path / "docs"
    folder.mkdir()
    for record in records[:160]:
        (folder / f"{record['_id']}.md").write_text(f"# {record['title']}\n\n{record['text']}", encoding="utf-8")
    write_pdf(folder / "report.pdf", [["Okapi ranking"], ["fusion of rankings"]])
    base = tmp_path / "base"
    assert invoke("index", "keyword", "--corpus", folder, "--out", base).exit_code == 0
    for record in records[:40]:  # removed
        (folder / f"{record['_id']}.md").unlink()
    for record in records[40:60]:  # changed
        (folder / f"{record['_id']}.md").write_text(f"# {record['title']}\n\nrewritten", encoding="utf-8")
    for record in records[160:]:  # added
        (folder / f"{record['_id']}.md").write_text(f"# {record['title']}\n\n{record['text']}", encoding="utf-8")
    old = answers(base)
    complete = tmp_path / "complete"
    shutil.copytree(base, complete)
    before_write_s = first_write_after(partial(_sync_process, complete, folder), complete) / 2
    new = answers(complete)
    assert new != old
    for attempt, phase in enumerate(PHASES):  # one kill in each phase of the save (tests/fixtures/save_phases.py)
        victim = tmp_path / f"victim-{attempt}"
        shutil.copytree(base, victim)
        killed_in = kill_in_phase(partial(_sync_process, victim, folder), victim, phase, before_write_s)
        assert answers(victim) in (old, new), f"killed {killed_in}: a mix of the old and the new tree"
        rerun = invoke("sync", victim, folder)  # run again (typer's runner: only the killed commands need a process)
        assert rerun.exit_code == 0, f"killed {killed_in}: {rerun.output}"  # it completes
        assert answers(victim) == new
