"""A class served by two replicas behind HAProxy (`python -m serve`), in chromium: six students' sessions spread
over both by the proxy's cookie, a PNG and a CSV downloaded through it, a session the proxy sends to a replica
that never saw it, a replica killed mid-lecture whose students come back on the other with their views, and
that replica started again as `python -m serve` does, taking the next student; and a live lecture across them: a
follower on one replica follows a lecturer on the other through Redis, and again after its replica is killed.

The tests share one class and run in order; the third kills a replica, the fourth starts it again. Each session is a browser context of its
own, so each has its own cookie jar, as six students' laptops behind one lecture hall's NAT would.

A reconnected page that was idle is not run again by Streamlit's frontend (it expects the same server session
back), so it keeps showing what it showed; the student's next change runs on the new replica from the URL and
the widget states the browser sends. The tests check both: the view right after the reconnect, and after a
slider step run on the new replica.
"""
from __future__ import annotations

import csv
import io
import os
import signal
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlparse

import pytest

from harness.browser import IDLE
from serve.process import free_port
from serve.proxy import BACKEND, HAPROXY
from serve.replicas import Replicas
from tests.e2e.conftest import (
    HAVE_CHROMIUM,
    NO_CHROMIUM,
    PNG_SIGNATURE,
    assert_no_exception,
    download,
    new_tab,
    open_url,
    settle,
    wait_for_plots,
)
from tests.e2e.test_lecture_browser import FOLLOW_S, comes_to, start_lecture
from tests.e2e.test_lecture_browser import KEY as LECTURE_KEY

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM),
              pytest.mark.skipif(not Path(HAPROXY).exists(),
                                 reason=f"{HAPROXY} is missing (apt-get install -y haproxy): these tests need it")]

COOKIE = "HOW_LMS_REPLICA"  # serve/haproxy.cfg.template
FONT_SIZE = "parseFloat(getComputedStyle(document.documentElement).fontSize)"
# six students on light pages, away from their defaults: (link, title, {slider: the value it shows}); the last
# steps its seed in the browser after opening (5 to 6), as a student does mid-lecture
SESSIONS = [
    ("/sinusoidal?d=32", "Sinusoidal encoding", {"d": "32"}),
    ("/kernel_regression?kernel=Boxcar&h=1.5", "Kernel regression", {"h": "1.50"}),
    ("/flash_attention?N=32&step=5&lecture=true", "FlashAttention", {"N": "32", "step": "5"}),
    ("/scaling?m=8&seed=3", "Why divide by √d_k", {"m": "8", "seed": "3"}),
    ("/online_softmax?step=7", "Online softmax", {"step": "7"}),
    ("/kernel_regression?seed=5", "Kernel regression", {"seed": "6"}),
]
WORKED_EXAMPLE = "[0.84147, 0.54030, 0.00999983, 0.99995]"  # the Sinusoidal page's table, row 2 (002's example)
RECONNECT_S = 30  # a killed replica to its students' websockets open on the other, with both cores busy


def replica(tab) -> str:
    """The replica the proxy last sent this browser to, from the cookie it set."""
    return {c["name"]: c["value"] for c in tab.context.cookies()}[COOKIE]


def query(tab) -> dict[str, str]:
    return dict(parse_qsl(urlparse(tab.url).query))


def shown(tab, name: str) -> str:
    return tab.locator(f".st-key-{name} [data-testid='stSliderThumbValue']").inner_text().strip()


def assert_view(tab, title: str, values: dict[str, str]) -> None:
    """The page shows `title` and its sliders `values`, draws its figures and raised nothing."""
    assert tab.locator("h1").first.inner_text().strip() == title
    for name, value in values.items():
        assert shown(tab, name) == value, f"{name} shows {shown(tab, name)} on {tab.url}"
    wait_for_plots(tab)
    assert_no_exception(tab)


def step(tab, name: str) -> None:
    """One keyboard step of slider `name`, and the run it causes."""
    tab.runs.settled = tab.runs.finished
    tab.locator(f".st-key-{name} [data-testid='stSlider'] input[type='range']").focus()
    tab.keyboard.press("ArrowRight")
    settle(tab)


def assert_next_change_runs_from_the_view(tab) -> None:
    """The student's next change after a reconnect: a step of the page's first slider, run by the replica the
    tab now reaches, keeps every other control of the view (tab.view) and the URL."""
    title, values = tab.view
    name = next(iter(values))
    before = query(tab)
    step(tab, name)
    moved = shown(tab, name)
    assert moved != values[name] and float(query(tab)[name]) == float(moved), tab.url
    tab.view = (title, values | {name: moved})
    assert_view(tab, *tab.view)
    assert {k: v for k, v in before.items() if k != name}.items() <= query(tab).items(), tab.url


def wait_reconnected(tab, sockets_before: int, to: str, deadline: float) -> None:
    """Until the tab has a websocket opened after its first `sockets_before`, and the proxy's cookie names `to`."""
    while len(tab.sockets) <= sockets_before or tab.sockets[-1].is_closed() or replica(tab) != to:
        assert time.monotonic() < deadline, f"{tab.url} did not reconnect to {to} within {RECONNECT_S} s"
        tab.wait_for_timeout(100)


def png_and_csv(tab) -> tuple[bytes, list[list[str]]]:
    """The Sinusoidal page's first figure as PNG and its worked-example table as CSV, downloaded as
    tests/e2e/test_export_browser.py does."""
    plot = tab.locator(".js-plotly-plot").first
    plot.hover()
    png = download(tab, lambda: plot.locator(".modebar-btn[data-title='Download plot as a PNG']").click())
    tab.locator("[data-testid='stDataFrame']").first.hover()
    data = download(tab, lambda: tab.get_by_role("button", name="Download as CSV").first.dispatch_event("click"))
    return png, list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))


@pytest.fixture(scope="module")
def replicas():
    """Two replicas with live lectures on (a lecturer key), their state in the redis-server Replicas starts."""
    os.environ["HOW_LMS_LECTURE_KEY"] = LECTURE_KEY  # the replicas' environments are copied as they start
    try:
        served = Replicas(2, free_port())
    finally:
        del os.environ["HOW_LMS_LECTURE_KEY"]
    with served:
        yield served


@pytest.fixture(scope="module")
def lecture(browser, replicas, students):
    """A lecturer on the replica the next tests keep, a follower on the one they kill (students[0]'s)."""
    victim = replica(students[0])
    tabs = {}
    try:
        for role, on in (("lecturer", {"r1": "r2", "r2": "r1"}[victim]), ("follower", victim)):
            tabs[role] = new_tab(browser, replicas.url)
            tabs[role].context.add_cookies([{"name": COOKIE, "value": on, "url": replicas.url}])  # sticky to `on`
            open_url(tabs[role], "/kernel_regression")
        tabs["code"] = start_lecture(tabs["lecturer"])
        yield tabs
    finally:
        for tab in tabs.values():
            if not isinstance(tab, str):
                tab.context.close()


@pytest.fixture(scope="module")
def students(browser, replicas):
    """The six sessions, opened one after another through the proxy; their contexts closed at the end."""
    tabs = []
    try:
        for link, title, values in SESSIONS:
            tab = new_tab(browser, replicas.url)
            tab.view = (title, values)  # what the page shows: its title and sliders
            tab.sockets = []
            tab.on("websocket", lambda socket, sockets=tab.sockets: sockets.append(socket))
            tab.add_init_script("delete window.showSaveFilePicker")  # a plain CSV download (test_export_browser)
            tabs.append(tab)
            open_url(tab, link)
        step(tabs[-1], "seed")
        yield tabs
    finally:
        for tab in tabs:
            tab.context.close()


def test_six_sessions_spread_over_both_replicas_and_downloads_pass_the_proxy(students):
    on = [replica(tab) for tab in students]
    assert set(on) == {"r1", "r2"}, f"the proxy sent all six sessions to one replica: {on}"
    for tab in students:
        assert_view(tab, *tab.view)
    assert students[2].evaluate(FONT_SIZE) == 22, "lecture mode from the URL"
    png, rows = png_and_csv(students[0])
    assert png.startswith(PNG_SIGNATURE) and rows[2][1] == WORKED_EXAMPLE
    assert [replica(tab) for tab in students] == on, "a download moved a session to another replica"


def test_a_session_sent_to_a_replica_that_never_saw_it_keeps_its_view(replicas, students):
    """Its cookie names the other replica (a stale cookie, a proxy restarted with other server lines) when its
    websocket drops; the reconnect reaches a replica without its session."""
    tab = students[1]
    was = replica(tab)
    other = {"r1": "r2", "r2": "r1"}[was]
    tab.context.add_cookies([{"name": COOKIE, "value": other, "url": replicas.url}])
    sockets = len(tab.sockets)
    replicas.proxy.command(f"shutdown sessions server {BACKEND}/{was}")  # every websocket to `was` drops
    wait_reconnected(tab, sockets, other, time.monotonic() + RECONNECT_S)
    assert_view(tab, *tab.view)
    assert_next_change_runs_from_the_view(tab)
    assert replica(tab) == other


def test_a_follower_follows_a_lecturer_on_the_other_replica(lecture):
    lecturer, follower = lecture["lecturer"], lecture["follower"]
    assert replica(lecturer) != replica(follower)
    open_url(follower, f"/?join={lecture['code']}")
    lecturer.get_by_text("1 following").wait_for(timeout=FOLLOW_S * 1000)
    step(lecturer, "seed")
    comes_to(follower, "seed", "1")


def test_a_killed_replicas_sessions_come_back_on_the_other_with_their_views(replicas, students):
    victim = replica(students[0])  # the one with the downloads
    survivor = {"r1": "r2", "r2": "r1"}[victim]
    moved = [i for i, tab in enumerate(students) if replica(tab) == victim]
    sockets = {}
    for i in moved:  # idle first: the sessions' websockets dropped by the last test have reconnected
        students[i].wait_for_selector(IDLE)
        sockets[i] = len(students[i].sockets)
    killed = time.monotonic()
    os.killpg(replicas.names()[victim].proc.pid, signal.SIGKILL)
    for i in moved:
        wait_reconnected(students[i], sockets[i], survivor, killed + RECONNECT_S)
    print(f"\n{len(moved)} sessions of {victim} reconnected to {survivor} {time.monotonic() - killed:.1f} s "
          "after it was killed")
    for i in moved:
        tab = students[i]
        assert_view(tab, *tab.view)
        assert tab.locator("[role='dialog']").count() == 0, "more than a reconnect notice"
    for i in moved:
        assert_next_change_runs_from_the_view(students[i])
        assert replica(students[i]) == survivor
    if 2 in moved:
        assert students[2].evaluate(FONT_SIZE) == 22, "lecture mode lost on the survivor"
    png, rows = png_and_csv(students[0])  # the same downloads, from the survivor
    assert png.startswith(PNG_SIGNATURE) and rows[2][1] == WORKED_EXAMPLE


def test_a_replica_started_again_takes_new_students(replicas, browser, students):
    """What `python -m serve` does when a replica has exited: start it again on a new port, re-point the proxy's
    server line, and send it the next student once its checks pass (the fewest open connections: none)."""
    exited_by = time.monotonic() + RECONNECT_S
    restarted = replicas.restart_exited()
    while not restarted:  # the replica killed in the last test may not be reaped yet: a large process dies slowly
        assert time.monotonic() < exited_by, f"no replica had exited {RECONNECT_S} s after the last test's kill"
        time.sleep(0.2)
        restarted = replicas.restart_exited()
    (victim,) = restarted
    deadline = time.monotonic() + RECONNECT_S
    while not any(line.split()[3:6:2] == [victim, "2"]  # srv_name, srv_op_state 2: up
                  for line in replicas.proxy.command(f"show servers state {BACKEND}").splitlines()[2:]):
        assert time.monotonic() < deadline, f"{victim} not up behind the proxy within {RECONNECT_S} s"
        time.sleep(0.5)
    tab = new_tab(browser, replicas.url)
    try:
        open_url(tab, "/kernel_regression?h=0.8")
        assert replica(tab) == victim
        assert_view(tab, "Kernel regression", {"h": "0.80"})
    finally:
        tab.context.close()


def test_a_follower_of_the_killed_replica_follows_again_from_the_other(lecture):
    """The follower's tab reconnected to the survivor (the test before killed its replica), which has never seen it;
    the lecturer's next change moves it within FOLLOW_S, and it is counted there."""
    lecturer, follower = lecture["lecturer"], lecture["follower"]
    deadline = time.monotonic() + RECONNECT_S
    while replica(follower) != replica(lecturer):
        assert time.monotonic() < deadline, "the follower did not reconnect to the survivor"
        follower.wait_for_timeout(200)
    # counted once: on the survivor, and no longer on the killed replica once it has been silent for REPLICA_S
    lecturer.get_by_text("1 following").wait_for(timeout=RECONNECT_S * 1000)
    step(lecturer, "seed")
    comes_to(follower, "seed", "2")
