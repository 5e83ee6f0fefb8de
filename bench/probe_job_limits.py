"""Issue 38's probe of the job limits, re-run: what a client that floods a served tree gets.

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/probe_job_limits.py

Against a real server on loopback (examples/corpus as the ``kw`` tree): 24 ``POST /trees/{name}/documents``
sent at once with the default settings (the probe: all 24 were 202), then 10 uploads of 20 MB each with the
defaults and with ``max_queued_upload_bytes`` of 50 MB (the probe: 210 MB queued, no 429). It prints the
statuses and the bytes the uploads held on disk at the peak: counts, not timings.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

import dashrag
from dashrag.service.app import create_app
from dashrag.service.settings import ServiceSettings

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.service.conftest import KEYWORD, LoopbackServer  # noqa: E402


def uploads_on_disk(trees: Path) -> int:
    return sum(f.stat().st_size for d in trees.glob(".upload-*") for f in d.rglob("*") if f.is_file())


def flood(trees: Path, **settings: int) -> None:
    with LoopbackServer(create_app(ServiceSettings.model_validate({"trees_dir": trees, **settings}))) as server:
        def post(i: int, out: list) -> None:
            out.append(httpx.post(f"{server.url}/trees/kw/documents", timeout=120, json={
                "documents": [{"id": f"probe/{i}.txt", "text": f"probe note {i}"}]}))

        answers: list[httpx.Response] = []
        threads = [threading.Thread(target=post, args=(i, answers)) for i in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"  24 JSON posts at once: {dict(Counter(a.status_code for a in answers))}")
        for accepted in (a for a in answers if a.status_code == 202):  # the queue empties before the uploads
            while httpx.get(f"{server.url}/jobs/{accepted.json()['job_id']}").json()["status"] in ("queued",
                                                                                               "running"):
                time.sleep(0.2)
        body = b"probe words " * (20_000_000 // 12)
        peak, upload_statuses = 0, []
        for i in range(10):
            upload_statuses.append(httpx.post(f"{server.url}/trees/kw/documents/upload", timeout=120, files={
                "corpus": (f"big{i}.txt", body, "text/plain")}).status_code)
            peak = max(peak, uploads_on_disk(trees))
        print(f"  10 x {len(body) / 1e6:.0f} MB uploads, one after another: {dict(Counter(upload_statuses))}; "
              f"at most {peak / 1e6:.0f} MB of uploads on disk")


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="probe-jobs-"))
    try:
        dashrag.api.build_tree(KEYWORD, REPO / "examples" / "corpus", work / "base" / "kw")
        for label, settings in (("defaults (max_pending_builds 4, max_queued_upload_bytes 400 MiB)", {}),
                                ("max_pending_builds 20, max_queued_upload_bytes 50 MB",
                                 {"max_pending_builds": 20, "max_queued_upload_bytes": 50_000_000})):
            trees = work / label.split()[0]
            shutil.copytree(work / "base", trees)
            print(label)
            flood(trees, **settings)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
