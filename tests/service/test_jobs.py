"""Build jobs as the page watches them: real stages with counts, elapsed time, an estimate, cancel, failure."""

from __future__ import annotations

import json
import time

import pytest

from dashrag.api import build_tree
from tests.conftest import EXAMPLE_CORPUS, REPO
from tests.service.conftest import KEYWORD, make_client

SEMANTIC = json.loads((REPO / "components" / "semantic.json").read_text())


def semantic(batch_size: int) -> dict:
    return {**SEMANTIC, "params": {**SEMANTIC["params"], "embedding": {
        "component": "MiniLMEmbedding", "params": {"batch_size": batch_size}}}}


def statuses(client, job_id: str, timeout: float = 300) -> list[dict]:
    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    while not seen or seen[-1]["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, seen[-1:]
        seen.append(client.get(f"/jobs/{job_id}").json())
        time.sleep(0.05)
    return seen


@pytest.mark.slow
def test_embedding_reports_every_two_batches_while_it_runs(tmp_path):
    heard: list[tuple[str, int, int | None]] = []
    build_tree(semantic(batch_size=2), EXAMPLE_CORPUS, tmp_path / "t",
               progress=lambda stage, done=0, total=None: heard.append((stage, done, total)))
    chunks = next(total for stage, _, total in heard if stage == "fitting")
    embedded = [done for stage, done, _ in heard if stage == "embedding chunks"]
    assert embedded == [0, *range(4, chunks, 4), chunks]  # 0: the model is loaded, the counting starts
    stages = [stage for stage, _, _ in heard]
    assert stages.index("fitting") < stages.index("loading the embedding model") < stages.index("embedding chunks")


@pytest.mark.slow
def test_a_finished_job_says_its_last_stage_counts_and_elapsed_time(trees_copy):
    with make_client(trees_dir=trees_copy, data_root=REPO / "examples") as client:
        job = client.post("/trees", json={"name": "k2", "config": KEYWORD, "corpus_path": "corpus"}).json()
        seen = statuses(client, job["job_id"])
    last = seen[-1]
    assert last["status"] == "done" and last["progress"] == 1.0 and last["stage"] == "publishing"
    assert last["elapsed_s"] > 0 and last["stage_eta_s"] is None
    counted = [s for s in seen if s["stage"] == "chunking" and s["total"]]
    assert all(s["total"] == len(list((REPO / "examples" / "corpus").iterdir())) for s in counted)


@pytest.mark.slow
def test_a_cancelled_build_ends_cancelled_and_leaves_nothing(trees_copy):
    with make_client(trees_dir=trees_copy, data_root=REPO / "examples") as client:
        job = client.post("/trees", json={"name": "gone", "config": semantic(1), "corpus_path": "corpus"}).json()
        while client.get(f"/jobs/{job['job_id']}").json()["status"] == "queued":
            time.sleep(0.02)
        assert client.post(f"/jobs/{job['job_id']}/cancel").status_code == 200
        last = statuses(client, job["job_id"])[-1]
        assert "gone" not in [t["name"] for t in client.get("/trees").json()]
    assert last["status"] == "cancelled" and last["message"].startswith("cancelled during ")
    assert not (trees_copy / "gone").exists() and not [p for p in trees_copy.iterdir() if p.name.startswith(".")]


def test_cancelling_an_unknown_job_is_404(client):
    assert client.post("/jobs/nope/cancel").status_code == 404


@pytest.mark.slow
def test_a_failed_build_names_its_stage_and_the_error(trees_copy, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the agentic preset's credential
    agentic = json.loads((REPO / "components" / "agentic.json").read_text())
    agentic["params"]["llm_model"]["params"]["api_base"] = "http://127.0.0.1:9/v1"  # nothing listens there
    # its keyword child only: the build fails where the LLM is first asked, after its children are fitted; the
    # preset's dense child added a model load and an embedding (10 s of CPU) before that moment, nothing to the check
    agentic["params"]["children"] = [json.loads((REPO / "components" / "keyword.json").read_text())]
    allowed = {"allow_credentials": ["OPENAI_API_KEY"], "allow_endpoints": ["http://127.0.0.1:9/v1"]}
    with make_client(trees_dir=trees_copy, data_root=REPO / "examples", **allowed) as client:
        job = client.post("/trees", json={"name": "bad", "config": agentic, "corpus_path": "corpus"}).json()
        last = statuses(client, job["job_id"])[-1]
    assert last["status"] == "failed" and "127.0.0.1:9" in last["error"], last
    assert last["message"] == f"build failed during {last['stage']}" and last["stage"]


def test_a_stages_estimate_counts_down_between_reports_instead_of_climbing(monkeypatch):
    from dashrag.service import jobs

    now = [100.0]
    monkeypatch.setattr(jobs.time, "monotonic", lambda: now[0])
    job = jobs.Job(id="j", tree="t")
    job.enter("embedding chunks", 0, 100)
    now[0] += 10.0
    job.enter("embedding chunks", 20, 100)  # 20 in 10 s: 40 s left at that pace
    assert job.stage_eta_s() == 40.0
    now[0] += 6.0  # a long batch runs: the estimate counts down with the clock, it does not grow
    assert job.stage_eta_s() == 34.0
    now[0] += 60.0
    assert job.stage_eta_s() == 0.0
