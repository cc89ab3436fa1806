"""The real app, served by `streamlit run` on a free local port, driven by Debian's chromium.

Each browser-test module starts one browser and kills it at its end. The modules that take the app as it is served
share one app server per pytest-xdist worker, so its caches stay warm from module to module (each module's own server
computed every page cold again, about 25 s of a core per walk through the pages). A module that trains, or starts
its server in another environment, has a server of its own (`own_app_url`): one server for all modules once left the
word2vec page running for good after the embeddings' tests. The helpers live in harness/browser.py, shared with the
README's pictures (benchmarks.screenshots), and wait the way Streamlit's own e2e tests do.
"""
from __future__ import annotations

import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.browser import (  # noqa: F401 (the browser-test modules import these from here)
    CHROMIUM,
    assert_clean,
    assert_no_exception,
    chromium,
    drawn,
    go,
    new_tab,
    open_url,
    save_screenshot,
    settle,
    wait_for_plots,
)
from serve.process import Server

ROOT = Path(__file__).resolve().parents[2]
HAVE_CHROMIUM = Path(CHROMIUM).exists()
NO_CHROMIUM = f"{CHROMIUM} is missing (apt-get install -y chromium): the browser tests need it"
SCREENSHOTS = ROOT / "tests" / "e2e" / "screenshots"  # gitignored
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def pytest_configure(config):
    # pyproject registers it too; registering twice is harmless and keeps `--strict-markers` happy either way
    config.addinivalue_line("markers", "e2e: drives the real app in headless chromium")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups, also when this conftest loads before xdist's hook
def pytest_collection_modifyitems(items):
    """Under pytest-xdist (`--dist loadgroup`) each browser-test module goes whole to one worker, with its own
    app server whose caches stay warm from test to test; the AppTests fill the workers around them. The browser tests
    mostly wait on the server, so one worker per module balances better than all of them on one."""
    for item in items:
        if item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@contextmanager
def _served(request, name: str) -> Iterator[str]:
    """`streamlit run app.py` on a free loopback port in its own process group, killed at the end. When a test
    failed meanwhile, the server's log (a page's traceback is there, not in the browser) is kept, and the run's
    warnings say where."""
    server, failed_before = Server(ROOT / "app.py", ROOT), request.session.testsfailed
    try:
        yield server.url
    finally:
        if request.session.testsfailed > failed_before:
            kept = Path(tempfile.gettempdir()) / f"server-{name}.log"
            kept.write_text(server.output())
            warnings.warn(f"a test failed while {name} served: its server's log is {kept}", stacklevel=1)
        server.stop()


@pytest.fixture(scope="session")
def app_url(request):
    """The app as it is served, shared by this worker's modules that take it as it is (the others override it with
    own_app_url)."""
    with _served(request, "shared") as url:
        yield url


@pytest.fixture(scope="module")
def own_app_url(request):
    """A server of the module's own, started in the environment the module's fixtures have set by then."""
    with _served(request, request.module.__name__) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    if not HAVE_CHROMIUM:
        pytest.skip(NO_CHROMIUM)
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser, app_url):
    tab = new_tab(browser, app_url)
    try:
        yield tab
    finally:
        tab.context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call" and report.failed:
        item.session.e2e_failed = True  # a walk's next test starts in a fresh tab (see walker)
    return report


@pytest.fixture(scope="module")
def _walk(browser, app_url):
    shared = {}  # "tab": the tab the module's walk is in
    yield shared
    if "tab" in shared:
        shared["tab"].context.close()


@pytest.fixture
def walker(_walk, browser, app_url, request):
    """One tab that the module's tests share, moving from page to page as a student does (go, the sidebar)
    rather than each loading the app afresh: a fresh load costs chromium about 5 s of CPU, a move a few hundred
    ms. It starts on the home page; after a test fails, the next gets a fresh tab, so one failure is not many."""
    if "tab" not in _walk or getattr(request.session, "e2e_failed", False):
        request.session.e2e_failed = False
        if "tab" in _walk:
            _walk["tab"].context.close()
        _walk["tab"] = new_tab(browser, app_url)
        open_url(_walk["tab"], "/")
    return _walk["tab"]


def screenshot(tab, name: str, whole_page: bool = True) -> None:
    """tests/e2e/screenshots/<name>.png: the whole page, or the window's first screen."""
    save_screenshot(tab, SCREENSHOTS / f"{name}.png", whole_page)


def download(tab, click) -> bytes:
    """The bytes of the file that click() makes the tab download."""
    with tab.expect_download(timeout=30_000) as info:
        click()
    return open(info.value.path(), "rb").read()
