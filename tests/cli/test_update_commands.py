"""``dashrag add`` and ``dashrag remove`` as a user meets them: counts on stdout, one-line errors with exit 2 and
the folder untouched, answers equal to a rebuild's; and SIGKILL at random moments of ``dashrag add`` leaves the
old or the new tree, never a mix; so does SIGKILL during a removal by tombstone."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from dashrag.core.persistence import read_manifest
from dashrag.store import segments
from tests.cli.conftest import answers_of, error_line, invoke
from tests.conftest import EXAMPLE_CORPUS, folder_digest
from tests.fixtures.filesystem import immutable
from tests.fixtures.removed_text import example_sentence, files_holding
from tests.fixtures.save_phases import PHASES, first_write_after, kill_in_phase

TFIDF = '{"component": "TFIDFRetriever"}'
QUERY = "sparse inverted index postings"


@pytest.fixture
def tree(tmp_path) -> Path:
    out = tmp_path / "tree"
    result = invoke("index", TFIDF, "--corpus", EXAMPLE_CORPUS, "--out", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def more(tmp_path) -> Path:
    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "postings.txt").write_text("An inverted index keeps sparse postings lists per term.\n", encoding="utf-8")
    shutil.copy(EXAMPLE_CORPUS / "bm25.md", folder / "bm25.md")  # identical: skipped
    (folder / "chunking.txt").write_text("Chunking, rewritten: split text where the topic changes.\n",
                                         encoding="utf-8")  # changed: replaced
    return folder


def answers(folder: Path) -> list:
    result = invoke("query", folder, QUERY, "--json", "--top-k", "8")
    assert result.exit_code == 0, result.output
    return [(r["document_id"], r["position"], round(r["score"], 5)) for r in json.loads(result.output)["results"]]


def test_add_prints_the_counts_and_answers_as_a_rebuild(tree, more, tmp_path):
    result = invoke("add", tree, "--corpus", more)
    assert result.exit_code == 0, result.output
    assert "1 added, 1 replaced, 1 skipped, 0 removed" in result.output
    combined = tmp_path / "combined"
    shutil.copytree(EXAMPLE_CORPUS, combined)
    shutil.copy(more / "postings.txt", combined)
    shutil.copy(more / "chunking.txt", combined)
    rebuilt = tmp_path / "rebuilt"
    assert invoke("index", TFIDF, "--corpus", combined, "--out", rebuilt).exit_code == 0
    assert answers(tree)[0][0] == "postings.txt"
    assert sorted(answers(tree)) == sorted(answers(rebuilt))  # a folder corpus reads in name order: ties aside


def test_remove_takes_ids_as_arguments_or_a_file(tree, tmp_path):
    result = invoke("remove", tree, "bm25.md")
    assert result.exit_code == 0 and "1 removed" in result.output
    ids = tmp_path / "ids.txt"
    ids.write_text("chunking.txt\n\nreranking.md\n", encoding="utf-8")
    result = invoke("remove", tree, "--ids", ids)
    assert result.exit_code == 0 and "2 removed" in result.output
    documents = {d for d, _, _ in answers(tree)}
    assert not documents & {"bm25.md", "chunking.txt", "reranking.md"}


def test_remove_hides_a_document_and_remove_purge_takes_its_text_off_the_disk(tree):
    line = example_sentence("bm25.md")
    store = tree / read_manifest(tree)["store"]
    assert files_holding(tree, line) == [store]
    result = invoke("remove", tree, "bm25.md")
    assert result.exit_code == 0 and "1 removed" in result.output
    assert files_holding(tree, line) == [store]  # hidden by the new delta; the base untouched
    assert "bm25.md" not in {d for d, _, _ in answers(tree)}
    result = invoke("remove", tree, "chunking.txt", "--purge")
    assert result.exit_code == 0 and "1 removed" in result.output
    assert files_holding(tree, line) == [] and len(list(tree.glob("store-*.sqlite"))) == 1
    assert not {d for d, _, _ in answers(tree)} & {"bm25.md", "chunking.txt"}


@pytest.mark.parametrize("args, message", [
    (("remove", "{tree}", "no-such.md"), "unknown document id"),
    (("remove", "{tree}"), "name the documents to remove"),
    (("remove", "{tree}", "--ids", "{tmp}/missing.txt"), "no such ids file"),
    (("add", "{tree}", "--corpus", "{more}", "--chunker", "WholeDocumentChunker"), "is not the tree's"),
    (("add", "{tmp}/not-a-tree", "--corpus", "{more}"), "no such saved retriever folder"),
])
def test_a_bad_request_is_one_error_line_exit_2_and_changes_nothing(tree, more, tmp_path, args, message):
    before = folder_digest(tree)
    filled = [a.format(tree=tree, more=more, tmp=tmp_path) for a in args]
    assert message in error_line(invoke(*filled))
    assert folder_digest(tree) == before
    assert not (tmp_path / "not-a-tree").exists()


# -- crash safety: SIGKILL at random moments ---------------------------------------------------------
def _dashrag(*args: object) -> subprocess.Popen:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "dashrag.cli.main", *map(str, args)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


KILL_QUERIES = ["cancer cells", "protein expression in mice", "vitamin D"]


def _kill_in_each_phase(base: Path, tmp_path: Path, args: tuple[object, ...]):
    """``dashrag <command> FOLDER <rest>`` (``args``: the command, then the rest) run once to completion on a copy of
    ``base``, then SIGKILLed once in each phase of its save (tests/fixtures/save_phases.py), each on a copy of its
    own: yields (the copy, the phase of the kill, its answers then, the old answers, the new ones)."""
    command, *rest = args
    old = answers_of(base, KILL_QUERIES, 5)
    complete = tmp_path / "complete"
    shutil.copytree(base, complete)
    before_write_s = first_write_after(partial(_dashrag, command, complete, *rest), complete) / 2
    new = answers_of(complete, KILL_QUERIES, 5)
    assert new != old
    for attempt, phase in enumerate(PHASES):
        victim = tmp_path / f"victim-{attempt}"
        shutil.copytree(base, victim)
        killed_in = kill_in_phase(partial(_dashrag, command, victim, *rest), victim, phase, before_write_s)
        yield victim, killed_in, answers_of(victim, KILL_QUERIES, 5), old, new


def _only_named_stores_left(victim: Path) -> None:
    """The killed run's store file is gone: the folder holds the named store and, for a delta, its base."""
    named = victim / json.loads((victim / "dashrag.json").read_text())["store"]
    under = segments.base_of(named)
    assert sorted(victim.glob("store-*.sqlite")) == sorted([named] + ([under] if under is not None else []))


def _base_of_300(scifact_subset_file: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """A keyword tree of the first 300 SciFact documents (``more.jsonl``: the rest), and its lines."""
    lines = scifact_subset_file.read_text(encoding="utf-8").splitlines()
    (tmp_path / "base.jsonl").write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
    (tmp_path / "more.jsonl").write_text("\n".join(lines[300:]) + "\n", encoding="utf-8")
    base = tmp_path / "base"
    assert invoke("index", "keyword", "--corpus", tmp_path / "base.jsonl", "--out", base).exit_code == 0
    return base, lines


@pytest.mark.slow
def test_sigkill_at_any_moment_of_add_leaves_the_old_or_the_new_tree(scifact_subset_file, tmp_path):
    base, _ = _base_of_300(scifact_subset_file, tmp_path)
    more = tmp_path / "more.jsonl"
    for victim, killed_in, now, old, new in _kill_in_each_phase(base, tmp_path, ("add", "--corpus", more)):
        assert now in (old, new), f"killed {killed_in}: a mix of the old and the new tree"
        # the killed update can be run again, and it completes to the new tree (only the killed commands need a
        # process of their own: the rerun is the same command through typer's runner, in this process)
        rerun = invoke("add", victim, "--corpus", more)
        assert rerun.exit_code == 0, f"killed {killed_in}: {rerun.output}"
        assert answers_of(victim, KILL_QUERIES, 5) == new
        _only_named_stores_left(victim)


@pytest.mark.slow
def test_sigkill_at_any_moment_of_a_removal_by_tombstone_leaves_the_old_or_the_new_tree(scifact_subset_file,
                                                                                       tmp_path):
    """Two documents of 300: their few chunks are under the counts' fraction (1/64 of the base's), so the removal
    writes tombstones beside the bases it keeps (docs/scale.md, "Removals by tombstone")."""
    base, lines = _base_of_300(scifact_subset_file, tmp_path)
    gone = [json.loads(lines[i])["_id"] for i in (0, 150)]
    for victim, killed_in, now, old, new in _kill_in_each_phase(base, tmp_path, ("remove", *gone)):
        assert now in (old, new), f"killed {killed_in}: a mix of the old and the new tree"
        if now == old:  # the killed removal can be run again, and it completes to the new tree
            rerun = invoke("remove", victim, *gone)
            assert rerun.exit_code == 0, f"killed {killed_in}: {rerun.output}"
            _only_named_stores_left(victim)  # (killed after the switch, the old store waits for the next save)
        assert answers_of(victim, KILL_QUERIES, 5) == new
        snapshot = victim / json.loads((victim / "dashrag.json").read_text())["snapshot"]
        [weights] = snapshot.glob("nodes/*/weights.json")
        assert json.loads(weights.read_text())["tombstones"] > 0


def test_the_update_module_alone_adds_and_removes(tree, more):
    """``dashrag.cli.update_commands`` driven by itself (its own typer app, no main.py)."""
    from typer.testing import CliRunner

    from dashrag.cli import update_commands

    added = CliRunner().invoke(update_commands.app, ["add", str(tree), "--corpus", str(more)])
    assert added.exit_code == 0 and "1 added" in added.output, added.output
    removed = CliRunner().invoke(update_commands.app, ["remove", str(tree), "postings.txt"])
    assert removed.exit_code == 0 and "1 removed" in removed.output
    assert "postings.txt" not in {d for d, _, _ in answers(tree)}


def test_add_over_an_immutable_old_store_is_published_with_a_warning_line_and_the_next_save_cleans(tree, more):
    old_store = next(tree.glob("store-*.sqlite"))
    with immutable(old_store):
        result = invoke("add", tree, "--corpus", more, "--purge")  # a whole new store: the old one is to go
    assert result.exit_code == 0, result.output
    assert "updated" in result.stdout and "1 added" in result.stdout
    warnings = result.stderr.splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("warning: the new tree is published"), result.stderr
    assert answers(tree)[0][0] == "postings.txt" and old_store.exists()
    assert invoke("remove", tree, "postings.txt").exit_code == 0
    named = tree / read_manifest(tree)["store"]  # a delta hiding postings.txt over the purge's whole store
    assert not old_store.exists() and sorted(tree.glob("store-*.sqlite")) == sorted([named, segments.base_of(named)])


def _killed_while_writing_its_store(tree: Path, corpus: Path) -> list[str]:
    """Run ``dashrag add`` and SIGKILL it as soon as its temporary store shows in the folder; what it left."""
    process = _dashrag("add", tree, "--corpus", corpus)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if list(tree.glob(".store-*.sqlite.tmp")):
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    process.wait(timeout=60)
    return sorted(p.name for p in tree.glob(".store-*"))


@pytest.mark.slow
def test_what_a_killed_add_left_is_removed_by_the_next_save(scifact_dir, tmp_path):
    """A real kill -9 while ``add`` writes its temporary store leaves it (and SQLite's journal); the next save
    of the folder holds the save lock every such writer holds, so it knows them abandoned and removes them."""
    with gzip.open(scifact_dir / "corpus.jsonl.gz", "rt", encoding="utf-8") as corpus:
        lines = [line for _, line in zip(range(3300), corpus)]
    (tmp_path / "base.jsonl").write_text("".join(lines[:300]), encoding="utf-8")
    (tmp_path / "more.jsonl").write_text("".join(lines[300:]), encoding="utf-8")
    base = tmp_path / "base"
    assert invoke("index", "keyword", "--corpus", tmp_path / "base.jsonl", "--out", base).exit_code == 0
    for attempt in range(10):
        victim = tmp_path / f"victim-{attempt}"
        shutil.copytree(base, victim)
        left = _killed_while_writing_its_store(victim, tmp_path / "more.jsonl")
        if left:
            break
    assert left and all(n.startswith(".store-") and ".sqlite.tmp" in n for n in left), left
    assert invoke("remove", victim, json.loads(lines[0])["_id"]).exit_code == 0  # the next save
    named = victim / read_manifest(victim)["store"]  # a delta hiding the removed document, over its base
    assert not list(victim.glob(".store-*")) and sorted(victim.glob("store-*.sqlite")) == sorted(
        [named, segments.base_of(named)])
    assert answers(victim)


@pytest.mark.slow
def test_a_save_during_an_index_waits_and_leaves_the_builds_temporary_store_alone(scifact_dir, tmp_path):
    """What makes "the next save removes temporary stores" safe: a build holds the folder's save lock while its
    temporary store exists, so a concurrent ``remove`` waits for it instead of removing the store under it."""
    with gzip.open(scifact_dir / "corpus.jsonl.gz", "rt", encoding="utf-8") as corpus:
        lines = [line for _, line in zip(range(3000), corpus)]
    (tmp_path / "small.jsonl").write_text("".join(lines[:50]), encoding="utf-8")
    (tmp_path / "big.jsonl").write_text("".join(lines), encoding="utf-8")
    tree = tmp_path / "tree"
    assert invoke("index", "keyword", "--corpus", tmp_path / "small.jsonl", "--out", tree).exit_code == 0
    build = _dashrag("index", "keyword", "--corpus", tmp_path / "big.jsonl", "--out", tree, "--overwrite")
    deadline = time.monotonic() + 120
    while not list(tree.glob(".store-*.sqlite.tmp")) and build.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert build.poll() is None, "the build ended before its temporary store was seen"
    removed = invoke("remove", tree, json.loads(lines[0])["_id"])  # a save of the same folder, meanwhile
    assert build.wait(timeout=300) == 0, build.stderr.read().decode() if build.stderr else ""
    assert removed.exit_code == 0 and "1 removed" in removed.output, removed.output
    result = invoke("query", tree, "cancer cells", "--json", "--top-k", "50")
    found = {r["document_id"] for r in json.loads(result.output)["results"]}
    assert len(found) > 0 and json.loads(lines[0])["_id"] not in found
    assert not list(tree.glob(".store-*"))


def test_add_with_strict_refuses_a_metadata_line_naming_no_document_and_changes_nothing(tree, more):
    (more / "metadata.jsonl").write_text('{"file": "postings.md", "metadata": {"year": 2024}}\n', encoding="utf-8")
    before = folder_digest(tree)
    assert "names 'postings.md'" in error_line(invoke("add", tree, "--corpus", more, "--strict"))
    assert folder_digest(tree) == before
