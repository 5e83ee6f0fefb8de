"""What the build status shows while a dense build runs, recorded at every change of the page (the model's loading,
the embedding counted, the export), and what it must show: tests/web/test_page.py's hybrid build, whose dense child
loads, embeds and is exported in the build's worker (a second cold dense build on the session server only for
this cost ~10 s of CPU: docs/testing.md, "Tenth pass")."""

from __future__ import annotations

import re
from typing import Any

#: What the page shows of the build's status at every change of the DOM (a MutationObserver: every state the page
#: rendered, which is every state a poll of the job found, not a stage that began and ended between two polls): the
#: stage's words, its counts, whether its own bar is the moving (indeterminate) one, and the whole build's bar.
RECORD_JOB = """() => {
  window.jobSeen = [];
  new MutationObserver(() => {
    const job = document.querySelector('.job');
    if (!job) return;
    const stageBar = job.querySelector('progress.stage-progress');
    const overall = job.querySelector('progress:not(.stage-progress)');
    window.jobSeen.push({
      status: job.dataset.status,
      stage: job.querySelector('.job-stage > span')?.textContent ?? null,
      counts: job.querySelector('.job-counts')?.textContent.trim() ?? null,
      moving: stageBar ? !stageBar.hasAttribute('value') : null,
      overall: overall ? Number(overall.value) : null,
    });
  }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
}"""


#: The stages the page lists as entered, in order (the job's ``stages``, in the page's language).
LISTED_STAGES = "() => [...document.querySelectorAll('.job .job-stages li')].map((li) => li.textContent)"


def assert_the_dense_stages_were_shown(page: Any, words: dict[str, str]) -> None:
    """After the build ends: the model's loading, the embedding and the export are listed, in that order (a stage
    shorter than the page's poll of the job, as the example corpus's embedding is on quiet cores, is listed all the
    same); of what the page caught running, the two uncounted stages had the moving bar and the embedding its counts
    with a fixed one; the whole build's bar only moved forward."""
    listed = page.evaluate(LISTED_STAGES)
    loading, embedding, export = words["stage_7"], words["stage_4"], words["stage_8"]
    assert loading in listed and embedding in listed and export in listed, listed
    assert listed.index(loading) < listed.index(embedding) < listed.index(export)
    seen = [s for s in page.evaluate("window.jobSeen") if s["status"] == "running" and s["stage"]]
    uncounted = [s for s in seen if s["stage"] in (loading, export)]
    assert uncounted and all(s["moving"] for s in uncounted)  # seconds each: always caught by a poll
    counted = [s for s in seen if s["stage"] == embedding and s["counts"]]
    assert all(re.fullmatch(r"\d+ / \d+", s["counts"]) and s["moving"] is False for s in counted)
    bars = [s["overall"] for s in seen]
    assert bars == sorted(bars) and any(0 < b < 1 for b in bars)  # the whole build's bar only moves forward
