"""The real ``dashrag serve`` on a loopback port and Debian's headless Chromium driven by Playwright.

Playwright's own browser download cannot be reached from these machines: the tests launch
``/usr/bin/chromium`` (``scripts/test.sh`` installs the ``chromium`` package when it is missing).
Every page records console errors, uncaught exceptions and failed requests or error statuses; a test that
produced any fails (must-show (e)).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from tests.conftest import REPO
from tests.fixtures.jobs import finished_job
from tests.llm.openai_server import ScriptedOpenAIServer

CHROMIUM = Path(os.environ.get("DASHRAG_CHROMIUM", "/usr/bin/chromium"))
PRESETS = REPO / "components"
LLM_KEY_VAR = "DASHRAG_WEB_TEST_LLM_KEY"  # the scripted LLM server's key, in the served process's environment


@dataclass
class Server:
    url: str
    trees: Path


def _forward(stream: IO[str] | None, lines: queue.Queue[str]) -> None:
    for line in stream or ():
        lines.put(line)
    lines.put("")  # the process closed its stderr: it has stopped, so waiting longer is pointless


@contextmanager
def serving(trees: Path, data_root: Path = REPO / "examples", env: dict[str, str] | None = None,
            dashrag: Sequence[str] = (sys.executable, "-m", "dashrag.cli.main"),
            cwd: Path | None = None) -> Iterator[str]:
    """``dashrag serve`` as a user starts it, on a free loopback port (--port 0); yields its URL, then stops it.
    ``env``: more environment for the served process (``RAG_AUTH_TOKEN_VAR`` and the token, for one);
    ``dashrag``: the command (an installed wheel's console script, tests/test_wheel.py)."""
    env = {**os.environ, "RAG_LOG_LEVEL": "INFO", "OPENBLAS_NUM_THREADS": "1", LLM_KEY_VAR: "sk-web-test",
           **(env or {})}
    command = [*dashrag, "serve", "--trees", str(trees), "--port", "0",
               "--host", "127.0.0.1", "--data-root", str(data_root)]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=cwd)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_forward, args=(process.stderr, lines), daemon=True).start()
    try:
        url, heard = None, []
        while url is None:
            try:
                heard.append(lines.get(timeout=90))
            except queue.Empty:
                raise RuntimeError("dashrag serve did not say where it listens within 90 s; it said:\n"
                                   + "".join(heard[-20:])) from None
            if heard[-1] == "":
                raise RuntimeError("dashrag serve stopped before it listened; it said:\n" + "".join(heard[-20:]))
            match = re.search(r"running on (http://127\.0\.0\.1:\d+)", heard[-1])
            url = match.group(1) if match else None
        assert httpx.get(f"{url}/health").json()["status"] == "ok"
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def headless_chromium() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        raise RuntimeError(f"{CHROMIUM} is missing: `apt-get install -y chromium` (scripts/test.sh does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-sandbox: CI and these machines run the tests as root, where Chromium's sandbox cannot start
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def web_llm() -> Iterator[ScriptedOpenAIServer]:
    """The scripted LLM that the page's trees may call: started before the server, which allows its endpoint
    and its key's variable to configs sent over HTTP (docs/security.md: none are allowed by default)."""
    with ScriptedOpenAIServer() as llm:
        yield llm


@pytest.fixture(scope="session")
def server(tmp_path_factory, web_llm) -> Iterator[Server]:
    """The real server over a temporary --trees folder, the examples as its data root."""
    trees = tmp_path_factory.mktemp("trees")
    allowed = {"RAG_ALLOW_ENDPOINTS": json.dumps([web_llm.api_base]),
               "RAG_ALLOW_CREDENTIALS": json.dumps([LLM_KEY_VAR])}
    with serving(trees, env=allowed) as url:
        yield Server(url, trees)


@dataclass
class Chromium:
    """The worker's one Chromium and the asyncio loop Playwright's sync API runs it on.

    Between two of its calls that API marks its loop as this thread's running loop (it resumes the loop in a
    greenlet of its own at each call, ``playwright/_impl/_greenlets.py:wait_for_future``), so while the mark is there
    a test's own loop (``asyncio.run``, ``anyio.run``: the MCP and rerank tests) cannot start. ``browser`` puts the
    mark back for a web test file and takes it off after it, so a later file on the same worker runs its loops; a
    Chromium of its own for each file (its start ~1.2 s of CPU and ~2 s of wall, its Playwright driver's included)
    was the first answer to that (docs/testing.md, "First pass: what changed", "Eighth pass").
    """

    browser: Any
    loop: asyncio.AbstractEventLoop

    def resume(self) -> None:
        asyncio.events._set_running_loop(self.loop)

    def pause(self) -> None:
        asyncio.events._set_running_loop(None)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Chromium]:
    with headless_chromium() as launched:
        running = Chromium(launched, asyncio.get_running_loop())
        running.pause()
        try:
            yield running
        finally:
            running.resume()  # Playwright's own state while it closes the browser and the driver


@pytest.fixture(scope="module")
def browser(chromium: Chromium) -> Iterator[Any]:
    """The worker's Chromium for a test file; a later file's asyncio loops run as if it were closed (``Chromium``)."""
    chromium.resume()
    try:
        yield chromium.browser
    finally:
        chromium.pause()


@dataclass
class PageProblems:
    """What must never happen on the page: console errors, uncaught exceptions, failed requests or error statuses.

    A test that makes the server refuse on purpose (a 401 without the token, a 422 for a wrong corpus path)
    names each refusal it causes with :meth:`expect`: that status from that path, and Chromium's console line
    about it, are then no problem; any other still is.
    """

    found: list[str] = field(default_factory=list)
    expected: list[tuple[int, str]] = field(default_factory=list)

    def expect(self, status: int, path: str) -> None:
        self.expected.append((status, path))

    def _is_expected(self, status: int, url: str) -> bool:
        return any(status == s and url.split("?")[0].endswith(path) for s, path in self.expected)

    def watch(self, page: Any) -> Callable[[], None]:
        """Record the page's problems from now on; the function returned stops recording (a reused page,
        ``tab``)."""
        handlers = {"console": self._console, "pageerror": lambda e: self.found.append(f"uncaught: {e}"),
                    "requestfailed": lambda r: self.found.append(f"request failed: {r.method} {r.url} {r.failure}"),
                    "response": self._response}
        for event, handler in handlers.items():
            page.on(event, handler)

        def unwatch() -> None:
            for event, handler in handlers.items():
                page.remove_listener(event, handler)

        return unwatch

    def _console(self, message: Any) -> None:
        if message.type != "error":
            return
        refused = re.match(r"Failed to load resource: the server responded with a status of (\d+)", message.text)
        if refused and self._is_expected(int(refused.group(1)), message.location.get("url", "")):
            return
        self.found.append(f"console error: {message.text}")

    def _response(self, response: Any) -> None:
        if response.status >= 400 and not self._is_expected(response.status, response.url):
            self.found.append(f"{response.status} from {response.url}")


@pytest.fixture()
def problems() -> PageProblems:
    """The problems of the test's page; a test that causes a refusal on purpose says so here first."""
    return PageProblems()


@contextmanager
def watched_page(browser: Any, problems: PageProblems, *, accept_downloads: bool = False) -> Iterator[Any]:
    """A fresh page in English at 1400x1000 in a context of its own; any console error or failed request fails the
    test when the block ends, and the context is closed whatever happens."""
    context = browser.new_context(accept_downloads=accept_downloads, viewport={"width": 1400, "height": 1000},
                                  locale="en-US")
    try:
        opened = context.new_page()
        opened.set_default_timeout(20_000)
        problems.watch(opened)
        yield opened
        assert problems.found == [], problems.found
    finally:
        context.close()


class Tabs:
    """One browser tab per locale for a worker's web tests, handed to them one after the other (``tab``).

    A tab of its own costs each test about 1.5 s of Chromium's CPU (a new renderer process, the page's script
    compiled again) where loading the page again in a tab already open costs about 0.4 s (docs/testing.md, "Eighth
    pass"). What a test could leave behind for the next is undone in ``tab``: the document (each test loads the page
    anew), the page's storage and cookies, routes, listeners, the window's size and the timeout. A tab that cannot be
    reset, or whose ``tab`` block raised, is closed, and the next test gets a new one.
    """

    def __init__(self, browser: Any) -> None:
        self._browser = browser
        self._open: dict[str, Any] = {}

    def page(self, locale: str) -> Any:
        page = self._open.get(locale)
        if page is None or page.is_closed():
            page = self._open[locale] = self._browser.new_context(locale=locale).new_page()
        return page

    def reset(self, page: Any) -> None:
        """Leave the tab as a new one would be: the origin's storage and the cookies cleared, no route, a blank
        document (the old one's requests end here, unwatched); closed when that fails."""
        try:
            page.unroute_all(behavior="ignoreErrors")
            if page.url.startswith("http"):
                page.evaluate("() => { window.localStorage.clear(); window.sessionStorage.clear(); }")
            page.context.clear_cookies()
            page.goto("about:blank")
        except Exception:
            self.drop(page)
            raise

    def drop(self, page: Any) -> None:
        self._open = {locale: p for locale, p in self._open.items() if p is not page}
        page.context.close()

    def close(self) -> None:
        for page in self._open.values():
            page.context.close()
        self._open = {}


@pytest.fixture(scope="session")
def open_tabs(chromium: Chromium) -> Iterator[Tabs]:
    reused = Tabs(chromium.browser)
    try:
        yield reused
    finally:
        chromium.resume()
        try:
            reused.close()
        finally:
            chromium.pause()


@pytest.fixture(scope="module")
def tabs(browser, open_tabs: Tabs) -> Tabs:
    """The worker's tabs (one per locale), for a test file's tests one after the other."""
    return open_tabs


@contextmanager
def tab(tabs: Tabs, problems: PageProblems, url: str, *, locale: str = "en-US",
        viewport: tuple[int, int] = (1400, 1000), timeout_ms: int = 20_000) -> Iterator[Any]:
    """The page at ``url`` in the file's tab for ``locale`` at ``viewport``, watched as ``watched_page`` watches a
    page of its own: any problem fails the test when the block ends; then the tab is reset for the next test, or
    closed if the test failed."""
    page = tabs.page(locale)
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    page.set_default_timeout(timeout_ms)
    unwatch = problems.watch(page)
    try:
        page.goto(url)
        yield page
        assert problems.found == [], problems.found
    except BaseException:
        unwatch()
        tabs.drop(page)
        raise
    unwatch()
    tabs.reset(page)


@pytest.fixture()
def page(tabs, server, problems):
    """The served web app in English, loaded afresh; fails the test on any console error or failed request."""
    with tab(tabs, problems, server.url + "/") as opened:
        opened.get_by_role("button", name="Choose the root component").wait_for()
        yield opened


def preset(name: str) -> dict:
    return json.loads((PRESETS / f"{name}.json").read_text(encoding="utf-8"))


def build_tree(url: str, name: str, config: dict, corpus_path: str = "corpus") -> None:
    """Index ``config`` over the API (POST /trees, then GET /jobs/{id} until it ends)."""
    job = httpx.post(f"{url}/trees", json={"name": name, "config": config, "corpus_path": corpus_path},
                     timeout=60).json()  # a loaded machine answers slowly
    state = finished_job(url, job["job_id"])
    if state["status"] != "done":
        raise RuntimeError(f"indexing {name} failed: {state['error']}")
