"""A page that raises, in the real browser beside other students (ui/boundary.py): its student sees a short notice
and a button that runs it again, reachable by keyboard; the server's log holds the page, its URL and the traceback;
the student's other pages, and every other session, go on. The server's one-hot page is broken on purpose
(tests/e2e/broken_server.py)."""
from __future__ import annotations

import pytest

from harness.accessibility import axe_violations, blocking
from serve.process import Server
from tests.e2e.broken_server import BROKEN
from tests.e2e.conftest import (
    HAVE_CHROMIUM,
    NO_CHROMIUM,
    ROOT,
    assert_clean,
    go,
    new_tab,
    open_url,
    screenshot,
    settle,
)
from ui import boundary

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]
LOGGED = "Unexpected error on page one_hot at /one_hot?text=the+dog+sat"


@pytest.fixture(scope="module")
def broken_server():
    server = Server(ROOT / "app.py", ROOT, launcher="tests.e2e.broken_server")
    try:
        yield server
    finally:
        server.stop()


def test_a_broken_page_stays_one_page_for_one_student(browser, broken_server):
    student, other = new_tab(browser, broken_server.url), new_tab(browser, broken_server.url)
    try:
        open_url(student, "/one_hot?text=the+dog+sat")
        notice = student.get_by_role("alert").filter(has_text=boundary.NOTICE)
        assert notice.count() == 1
        assert student.locator("[data-testid='stException']").count() == 0  # not Streamlit's error page
        assert "Manage app" not in student.inner_text("body")
        assert broken_server.output().count(LOGGED) == 1
        assert f"RuntimeError: {BROKEN}" in broken_server.output()  # the traceback, in the log only
        assert BROKEN not in student.inner_text("body")
        assert blocking(axe_violations(student)) == []
        screenshot(student, "boundary_notice")

        open_url(other, "/kernel_regression")  # another student, meanwhile
        assert_clean(other)

        again = student.get_by_role("button", name=boundary.AGAIN)
        again.focus()
        student.keyboard.press("Enter")  # by keyboard: the page runs again, and fails again
        settle(student)
        assert notice.count() == 1
        assert broken_server.output().count(LOGGED) == 2
        assert "text=the+dog+sat" in student.url  # its URL kept, for the run again

        go(student, "/skipgram_pairs")  # the same student, on another page
        assert_clean(student)
        go(other, "/kernel_regression?h=0.8")
        assert_clean(other)
    finally:
        student.context.close()
        other.context.close()
