"""The service notices trees saved, replaced or removed in --trees by someone else (the CLI), by itself."""

from __future__ import annotations

import json
import shutil
import time

from typer.testing import CliRunner

from dashrag.cli.main import app as cli
from tests.conftest import EXAMPLE_CORPUS
from tests.service.conftest import KEYWORD, make_client


def names(client) -> list[str]:
    return [t["name"] for t in client.get("/trees").json()]


def ask(client, name: str):
    return client.post("/retrieve", json={"query": "how does BM25 saturate term frequency", "collection_name": name})


def cli_index(out, corpus=EXAMPLE_CORPUS, *extra: str) -> None:
    result = CliRunner().invoke(cli, ["index", json.dumps(KEYWORD), "--corpus", str(corpus), "--out", str(out),
                                      *extra])
    assert result.exit_code == 0, result.output


def test_a_tree_the_cli_saves_while_the_server_runs_is_served_without_a_reload(trees_copy):
    with make_client(trees_dir=trees_copy) as client:
        client.app.state.service.registry.rescan_seconds = 0.0
        assert ask(client, "fresh").status_code == 404
        cli_index(trees_copy / "fresh")
        assert "fresh" in names(client)
        answer = ask(client, "fresh")
        assert answer.status_code == 200 and answer.json()["context_chunks"]


def test_a_tree_removed_from_the_folder_is_no_longer_listed_or_served(trees_copy):
    with make_client(trees_dir=trees_copy) as client:
        client.app.state.service.registry.rescan_seconds = 0.0
        assert ask(client, "kw").status_code == 200
        shutil.rmtree(trees_copy / "kw")
        assert "kw" not in names(client)
        assert ask(client, "kw").status_code == 404


def test_a_tree_replaced_on_disk_is_served_in_its_new_version(trees_copy, tmp_path):
    corpus = tmp_path / "one"
    corpus.mkdir()
    (corpus / "only.md").write_text("BM25 saturates term frequency with k1.", encoding="utf-8")
    with make_client(trees_dir=trees_copy) as client:
        client.app.state.service.registry.rescan_seconds = 0.0
        before = {t["name"]: t["documents"] for t in client.get("/trees").json()}["kw"]
        cli_index(trees_copy / "kw2", corpus)
        shutil.rmtree(trees_copy / "kw")
        (trees_copy / "kw2").rename(trees_copy / "kw")
        after = {t["name"]: t["documents"] for t in client.get("/trees").json()}["kw"]
    assert (before, after) == (before, 1) and before > 1


def test_the_folder_is_looked_at_again_after_the_rescan_interval_only(trees_copy):
    with make_client(trees_dir=trees_copy) as client:
        registry = client.app.state.service.registry
        registry.rescan_seconds = 1.0
        registry.refresh(force=True)
        shutil.copytree(trees_copy / "kw", trees_copy / "copy")
        assert "copy" not in names(client)  # within the interval: what was loaded
        time.sleep(1.1)
        assert "copy" in names(client)
