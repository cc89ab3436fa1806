"""The real app driven in Debian's chromium the way Streamlit's own e2e tests drive it: open a page, wait until
the run it caused has finished and the app is idle, take a screenshot. The browser tests (tests/e2e/conftest.py)
and the benchmarks (screenshots, accessibility) use these; harness.arrival has the async visits of a class.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from google.protobuf.message import DecodeError
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from ui.boundary import NOTICE

CHROMIUM = "/usr/bin/chromium"
# no sandbox as root, no background traffic to a closed network
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"  # as Streamlit's own e2e tests wait
# Streamlit loads most elements' code on first use (React.lazy) and shows a skeleton meanwhile: a run can have
# finished while a tab's first button is still a skeleton (under load, 3 first visits in 12 of a tour's page)
DRAWN = "() => !document.querySelector(\"[data-testid='stSkeleton']\")"

VIEWPORT = {"width": 1400, "height": 900}  # narrower windows collapse the sidebar and its links become inert
WAKE_MS = 250  # the longest a wait for the server's next message lasts before the counter is read again
PROMISE_S = 60  # the longest a promise evaluated in a tab may take (within): playwright's evaluate has no limit
RUN_S = 150  # a page's run on a cold cache (the Wikipedia sample: 6 s alone) with both cores busy with tests
# Streamlit's spinner and loading skeletons animate for as long as a run lasts: about 0.1 core-second every second
# for each waiting tab, taken from the server on the machine that runs both (a real student's browser runs on
# their own machine). Each endless CSS animation plays one cycle instead; finite ones and transitions are untouched.
ONE_CYCLE = """document.addEventListener("DOMContentLoaded", () => {
  const style = document.createElement("style");
  style.textContent = "*, *::before, *::after { animation-iteration-count: 1 !important; }";
  document.head.append(style);
});"""


def within(promise: str, what: str, seconds: float = PROMISE_S) -> str:
    """`promise`, the source of a function of one argument that returns a promise, as one that fails after `seconds`
    with an error naming `what`: playwright waits on an evaluated promise without a limit, so a tab that stopped
    drawing would hold its test, and CI, for good instead of failing it."""
    error = json.dumps(f"{what} did not finish within {seconds:g} s")
    return (f"arg => new Promise((done, fail) => {{ const timer = setTimeout(() => fail(new Error({error})), "
            f"{seconds * 1000:.0f}); ({promise})(arg).then(value => {{ clearTimeout(timer); done(value); }}, "
            f"error => {{ clearTimeout(timer); fail(error); }}); }})")


FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"  # two drawn frames
TWO_FRAMES = within(FRAMES, "two animation frames")


@contextmanager
def chromium() -> Iterator:
    """Headless chromium from Debian (playwright's own browser download is not used), closed at the end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class RunCounter:
    """Counts the app's finished script runs in one tab from the server's own messages (a ForwardMsg
    `script_finished`, read off the websocket), so a caller waits for the run its action caused instead of
    guessing with a pause. stApp's data-test-script-state cannot tell: React can commit running and
    notRunning in one render, and a fast run never shows as running."""

    def __init__(self, tab):
        self.finished = 0
        self.settled = 0
        self.socket = None  # the app's websocket, the newest: a reconnection opens another
        tab.on("websocket", self._opened)

    def _opened(self, socket) -> None:
        socket.on("framereceived", self._frame)
        self.socket = socket

    def wait(self, tab) -> None:
        """Until the server sends the tab something (at most WAKE_MS): waiting on the socket costs nothing, where
        a poll every 20 ms kept playwright's driver and this process at 12% of a core for as long as a run lasted.
        A frame dispatched just before the wait began wakes nobody: the wait ends at WAKE_MS then."""
        from playwright.sync_api import Error as PlaywrightError

        socket = self.socket
        if socket is None or socket.is_closed():
            tab.wait_for_timeout(20)  # between sockets: Streamlit is reconnecting
            return
        with suppress(PlaywrightError):  # a timeout, or the socket closed meanwhile
            socket.wait_for_event("framereceived", timeout=WAKE_MS)

    def _frame(self, payload) -> None:
        if isinstance(payload, str):
            return
        message = ForwardMsg()
        try:
            message.ParseFromString(payload)
        except DecodeError:
            return
        if message.WhichOneof("type") == "script_finished" and \
                message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:  # the rerun that replaced it counts
            self.finished += 1


def new_tab(browser, app_url: str, endless_animations: bool = False, **context_options):
    """A tab in a fresh context (own cookies, own Streamlit session) that counts the app's runs; its endless
    animations play one cycle (ONE_CYCLE) unless a measure of what a student sees asks for them."""
    context = browser.new_context(base_url=app_url, **{"viewport": VIEWPORT} | context_options)
    if not endless_animations:
        context.add_init_script(ONE_CYCLE)
    context.set_default_timeout(30_000)
    tab = context.new_page()
    tab.runs = RunCounter(tab)  # settle reads it from here
    return tab


def settle(tab) -> None:
    """Wait until a script run has finished since the last settle (the action before this one caused it), the
    browser has drawn what it sent (two animation frames, no element still waiting for its code), and the app
    is idle, as Streamlit's own e2e tests wait. How fast a page is belongs to the benchmarks; here a slow run
    under load only waits longer."""
    runs = tab.runs
    deadline = time.monotonic() + RUN_S
    while runs.finished <= runs.settled:
        assert time.monotonic() < deadline, f"no script run finished within {RUN_S} s on {tab.url}"
        runs.wait(tab)  # playwright delivers the websocket's frames to the counter meanwhile
    drawn(tab)
    runs.settled = runs.finished


def drawn(tab) -> None:
    """Wait until the browser has drawn what the server sent (two animation frames, no element still waiting for
    its code) and the app is idle: what the page shows is the finished run's, not one in progress (whose elements
    of the run before are faded), and no run of its own is to be waited for."""
    tab.evaluate(TWO_FRAMES)
    tab.wait_for_selector(IDLE, timeout=RUN_S * 1000)
    tab.wait_for_function(DRAWN, timeout=RUN_S * 1000)


def open_url(tab, path: str) -> None:
    tab.goto(path)
    settle(tab)


# what Back and Forward do: the URL changes in place and Streamlit asks the server for that page and query string
GO = "path => { history.pushState(null, '', path); dispatchEvent(new PopStateEvent('popstate')); }"


def go(tab, path: str) -> None:
    """Open path (a page and its query string) in a tab that already holds the app, as Back and Forward move
    between pages: the server runs it as it runs a pasted link. A fresh load costs chromium about 5 s of CPU
    (Streamlit's code, then plotly's and KaTeX's at their first use), a move in place a few hundred ms."""
    tab.evaluate(GO, path)
    settle(tab)


def assert_no_exception(tab) -> None:
    errors = tab.locator("[data-testid='stException']")
    assert errors.count() == 0, f"exception on {tab.url}:\n{errors.first.inner_text()}"
    traceback = tab.get_by_text("Traceback")
    assert traceback.count() == 0, f"'Traceback' on {tab.url}:\n{traceback.first.inner_text()[:2000]}"
    caught = tab.get_by_text(NOTICE)  # an exception the page's boundary caught: its traceback is in the server's log
    assert caught.count() == 0, f"the page's boundary caught an exception on {tab.url}"


def assert_clean(tab, expected_warnings: tuple[str, ...] = ()) -> None:
    """No exception, no st.error, and no warning other than ones containing an expected text."""
    assert_no_exception(tab)
    errors = tab.locator("[data-testid='stAlertContentError']").all_inner_texts()
    assert not errors, f"st.error on {tab.url}: {errors}"
    warnings = tab.locator("[data-testid='stAlertContentWarning']").all_inner_texts()
    unexpected = [w for w in warnings if not any(e in w for e in expected_warnings)]
    assert not unexpected, f"unexpected warning on {tab.url}: {unexpected}"


def wait_for_plots(tab) -> None:
    """Plotly mounts lazily after the script finished: wait for the first chart to draw."""
    tab.locator("[data-testid='stPlotlyChart'] .js-plotly-plot, .js-plotly-plot").first.wait_for(timeout=20_000)


def save_screenshot(tab, path: Path, whole_page: bool = True) -> None:
    """The whole page into path (PNG), or only the window's first screen. Streamlit scrolls inside `stMain`,
    not the document, so `full_page` alone stops at the fold: grow the window to the content's height for the
    shot, then put it back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not whole_page:
        tab.screenshot(path=str(path))
        return
    viewport = tab.viewport_size
    height = viewport["height"]
    for _ in range(3):  # content can reflow once the window is taller
        needed = tab.evaluate("() => Math.max(...['stMain', 'stSidebarContent'].map(id => "
                              "document.querySelector(`[data-testid='${id}']`)?.scrollHeight ?? 0))")
        if needed <= height:
            break
        height = min(int(needed) + 8, 16_000)
        tab.set_viewport_size({"width": viewport["width"], "height": height})
        tab.wait_for_timeout(300)
    tab.screenshot(path=str(path), full_page=True)
    tab.set_viewport_size(viewport)
