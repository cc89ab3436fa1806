"""A live lecture in the real browser (ui/lecture.py, serve/lectures.py): a lecturer's tab and students' tabs on one
server with a lecturer key. The class follows the lecturer's change without touching anything, a student who moves
a control explores alone until they go back, a question is answered and revealed, the end leaves everyone their page;
the new controls pass axe and work from the keyboard. Over Streamlit's own protocol, no URL, forged widget state,
other session's link or replayed message makes a session the lecturer."""
from __future__ import annotations

import os
import re
import threading
import time

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.lecture import join, pushed
from benchmarks.protocol import Session
from engine.efficiency.flash import tile_kinds
from harness.accessibility import axe_violations, blocking
from serve.process import Server
from serve.replicas import REDIS_SERVER, Store
from tests.e2e.conftest import (
    HAVE_CHROMIUM,
    NO_CHROMIUM,
    ROOT,
    assert_no_exception,
    drawn,
    new_tab,
    open_url,
    screenshot,
    settle,
)

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]
KEY = "a-lecturer-key-for-tests"
FOLLOW_S = 10  # the lecturer's change to a follower's page with both cores busy (the benchmark measures the lag)
SLIDER = ".st-key-{} [data-testid='stSlider'] input[type='range']"
THUMB = ".st-key-{} [data-testid='stSliderThumbValue']"


@pytest.fixture(scope="module")
def lecture_url():
    os.environ["HOW_LMS_LECTURE_KEY"] = KEY  # the server's copy of the environment is taken as it starts
    try:
        server = Server(ROOT / "app.py", ROOT)
    finally:
        del os.environ["HOW_LMS_LECTURE_KEY"]
    try:
        yield server.url
    finally:
        server.stop()


def start_lecture(tab) -> str:
    """Enter the key in the sidebar's Live lecture control, by keyboard; the join code the bar shows."""
    tab.get_by_text("Live lecture").click()
    tab.get_by_label("Lecturer key").fill(KEY)
    tab.get_by_label("Lecturer key").press("Enter")  # Enter in a form's field submits it
    settle(tab)
    return re.search(r"Join code: ([A-Z0-9]{5})", tab.inner_text("body")).group(1)


def step(tab, name: str) -> None:
    tab.locator(SLIDER.format(name)).first.focus()
    tab.keyboard.press("ArrowRight")
    tab.wait_for_url(re.compile(rf"[?&]{name}="), timeout=15_000)  # the run the key press caused has drawn
    settle(tab)


def shows(tab, name: str) -> str:
    return tab.locator(THUMB.format(name)).first.inner_text().strip()


def comes_to(tab, name: str, value: str) -> None:
    """Wait until the slider `name` shows `value`: a pushed move runs without any action in this tab to wait on."""
    tab.locator(THUMB.format(name)).filter(has_text=re.compile(f"^{value}$")).first.wait_for(timeout=FOLLOW_S * 1000)


def test_the_class_follows_steps_away_comes_back_answers_and_sees_the_reveal(browser, lecture_url):
    lecturer, follower, explorer = (new_tab(browser, lecture_url) for _ in range(3))
    try:
        open_url(lecturer, "/flash_attention")
        code = start_lecture(lecturer)
        for student in (follower, explorer):
            open_url(student, f"/?join={code.lower()}")  # a link, typed in any case
            student.wait_for_url(re.compile(r"/flash_attention\?"), timeout=FOLLOW_S * 1000)
            assert student.get_by_text(f"Following lecture {code}").count() == 1
        lecturer.get_by_text("2 following").wait_for(timeout=FOLLOW_S * 1000)
        assert blocking(axe_violations(lecturer)) == []
        assert blocking(axe_violations(follower)) == []

        step(lecturer, "N")  # 24 -> 25: both students move without touching anything
        for student in (follower, explorer):
            comes_to(student, "N", "25")
            student.wait_for_url(re.compile(r"[?&]N=25"), timeout=FOLLOW_S * 1000)

        step(explorer, "seed")  # a control of their own: on their own from now
        explorer.get_by_text("You are exploring on your own").wait_for(timeout=FOLLOW_S * 1000)
        lecturer.get_by_text("1 exploring on their own").wait_for(timeout=FOLLOW_S * 1000)
        assert "FlashAttention 1" in lecturer.inner_text("[class*='st-key-lecture_bar']")
        step(lecturer, "N")  # 25 -> 26: the follower moves, the explorer stays
        comes_to(follower, "N", "26")
        time.sleep(1)
        assert shows(explorer, "N") == "25" and shows(explorer, "seed") == "1"
        assert blocking(axe_violations(explorer)) == []
        back = explorer.get_by_role("button", name="Back to the lecture")
        back.focus()
        explorer.keyboard.press("Enter")
        comes_to(explorer, "N", "26")
        comes_to(explorer, "seed", "0")

        ask = lecturer.get_by_role("button", name="Ask", exact=True)
        ask.focus()
        lecturer.keyboard.press("Enter")
        settle(lecturer)
        for student, typed in ((follower, "9"), (explorer, "8")):  # N = 26, B_r = 8, B_c = 4: 9 tiles skipped
            box = student.get_by_label("Your answer (a number)")
            box.wait_for(timeout=FOLLOW_S * 1000)
            box.fill(typed)
            box.press("Enter")
            # waited for, not settled on: pushed runs (the question, the counts) also finish in a follower's tab
            student.get_by_text(f"Your answer: {typed}.").wait_for(timeout=FOLLOW_S * 1000)
        drawn(follower)  # axe on the finished run: a run in progress fades the last one's elements
        assert blocking(axe_violations(follower)) == []
        lecturer.get_by_text("2 answered").wait_for(timeout=FOLLOW_S * 1000)
        assert "Answer:" not in follower.inner_text("body")  # hidden until the reveal
        lecturer.get_by_role("button", name="Reveal the answers").click()
        lecturer.wait_for_function("told => document.body.innerText.includes(told)", arg="Answer: 9 · 1 of 2 right",
                                   timeout=FOLLOW_S * 1000)  # the counts' pushed runs finish in this tab too
        follower.get_by_text("you were right").wait_for(timeout=FOLLOW_S * 1000)
        explorer.get_by_text("you were not right").wait_for(timeout=FOLLOW_S * 1000)
        drawn(lecturer)  # the reveal's text shows before its run has finished (seen: faded buttons, low contrast)
        assert blocking(axe_violations(lecturer)) == []
        screenshot(lecturer, "lecture_lecturer", whole_page=False)
        screenshot(follower, "lecture_student", whole_page=False)

        end = lecturer.get_by_role("button", name="End the lecture")
        if not end.is_visible():
            lecturer.get_by_text("Live lecture").click()
        end.click()
        settle(lecturer)
        follower.wait_for_url(lambda url: "join=" not in url, timeout=FOLLOW_S * 1000)
        assert shows(follower, "N") == "26"  # the page as it was, now their own
        for tab in (lecturer, follower, explorer):
            assert_no_exception(tab)
    finally:
        for tab in (lecturer, follower, explorer):
            tab.context.close()


def is_lecturer(run) -> bool:
    return any(text.startswith("### Join code:") for text in run.texts)


def type_in(session: Session, key: str, text: str) -> None:
    session.states[session.widgets[key].id] = WidgetState(id=session.widgets[key].id, string_value=text)


def lead(url: str) -> tuple[Session, str]:
    """A session over Streamlit's protocol that starts a lecture on flash_attention with the key; its join code."""
    lecturer = Session(url)
    lecturer.open("flash_attention")
    type_in(lecturer, "_lecture_key_text", KEY)
    run = lecturer.press("Start the lecture")
    assert is_lecturer(run), run.texts
    shown = next(t for t in run.texts if t.startswith("### Join code:"))
    return lecturer, re.search(r"`([A-Z0-9]{5})`", shown).group(1)


def test_followers_with_the_same_screen_share_one_run_and_stay_in_step(lecture_url):
    """ui/replay.py: one follower's run of a change is sent to the others whose screens matched (one run id), and
    leaves each of them as its own run would: the lecturer's settings in their URL and on the server, so that
    answering keeps them following and the end leaves them the lecturer's settings. At the reveal, one run for those
    who were right and one for those who were not."""
    lecturer, code = lead(lecture_url)
    followers = [Session(lecture_url) for _ in range(4)]
    for follower in followers:
        follower.open("flash_attention", {"join": code})
    lecturer.idle(2)  # the lecturer's bar, pushed again as followers arrived
    moved = pushed(followers, lambda: lecturer.change("seed", 3))
    assert len({run.run_id for run in moved}) == 1 and len({tuple(run.texts) for run in moved}) == 1
    for follower in followers:
        assert list(follower.widgets["seed"].proto.value) == [3] and follower.query["seed"] == "3"

    asked = pushed(followers, lambda: lecturer.press("_lecture_ask"))
    assert len({run.run_id for run in asked}) == 1
    # the first question: the tiles the causal loop skips at the page's defaults (N = 24, B_r = 8, B_c = 4)
    skipped = str(sum(kind == "skipped" for row in tile_kinds(24, 8, 4, True) for kind in row))
    typed_in = (skipped, skipped, "98", "99")
    for follower, typed in zip(followers, typed_in, strict=True):
        type_in(follower, "_lecture_number_1", typed)
        run = follower.press("Answer")
        card = next(t for t in asked[0].texts if t.startswith("**Question 1.**"))
        said = f"Your answer: {typed}. You can change it until the lecturer reveals the answers."
        assert run.texts == [card, said], run.texts  # the question's card reran alone
        assert any(t.startswith("Following lecture") for t in follower._rerun().texts)  # answering is not stepping away
    lecturer.idle(2)
    revealed = pushed(followers, lambda: lecturer.press("_lecture_reveal"))
    assert revealed[0].run_id == revealed[1].run_id != revealed[2].run_id == revealed[3].run_id
    answer = re.search(r"\*\*Answer: (\S+)\*\*", " ".join(revealed[0].texts)).group(1)
    assert answer == skipped
    for run, typed in zip(revealed, typed_in, strict=True):
        told = "you were right" if typed == answer else "you were not right"
        assert any(told in t for t in run.texts), (told, run.texts)

    ended = pushed(followers, lambda: lecturer.press("_lecture_end"))
    for follower, run in zip(followers, ended, strict=True):
        assert not any(t.startswith("Following lecture") for t in run.texts)
        assert list(follower.widgets["seed"].proto.value) == [3]  # the page as the lecture left it
    for session in (lecturer, *followers):
        session.close()


def test_a_follower_shown_a_shared_run_can_use_the_pages_fragments(lecture_url):
    """A follower sent another's run of a page it never ran itself must still hold that page's fragments (here the
    scaling page's single draw), or a control inside one reruns nothing (Streamlit skips an unknown fragment)."""
    lecturer, code = lead(lecture_url)
    followers = [Session(lecture_url, timeout_s=30) for _ in range(2)]  # a skipped fragment's run never finishes
    for follower in followers:
        follower.open("flash_attention", {"join": code})
    lecturer.idle(2)
    lecturer.open("scaling")
    moved = [follower.pushed(30) for follower in followers]  # read one after the other: each socket holds its run
    assert None not in moved and len({run.run_id for run in moved}) == 1  # one ran, one was sent the run
    assert followers[0].pushed(1) is None  # and nothing more comes
    for follower in followers:
        sizes = follower.widgets["sample"].proto.options
        run = follower.change("sample", sizes[0])
        assert "One query, raw against scaled" in run.texts, run.texts
    for session in (lecturer, *followers):
        session.close()


def test_students_joining_together_share_one_first_run(lecture_url):
    """ui/replay.py's Groups.join: students opening the link at once (a class, or a killed replica's followers
    reconnecting here) make one run of the lecturer's view between them, not one each; each ends up following at
    the lecturer's settings, and answers as its own session. Some have had the page open before (a reconnecting
    browser keeps its messages): the shared run must not send them by reference to the others."""
    lecturer, code = lead(lecture_url)
    lecturer.change("seed", 7)
    students = [Session(lecture_url, timeout_s=30) for _ in range(6)]
    for returning in students[::2]:  # these browsers hold the view's large messages: a run of theirs names them
        returning.open("flash_attention", {"seed": "7"})
    joined = [None] * len(students)
    threads = [threading.Thread(target=lambda i=i: joined.__setitem__(i, join(students[i], code)))
               for i in range(len(students))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert None not in joined, "a student never saw the lecture"
    assert [run.exceptions for run in joined] == [[]] * len(students)  # none sent what only another browser holds
    assert len({run.run_id for run in joined}) < len(students), [run.run_id for run in joined]
    for student in students:
        assert list(student.widgets["seed"].proto.value) == [7] and student.query["seed"] == "7"
    lecturer.idle(2)
    pushed(students, lambda: lecturer.press("_lecture_ask"))
    for i, student in enumerate(students):
        type_in(student, "_lecture_number_1", str(i))
        assert any(text.startswith(f"Your answer: {i}.") for text in student.press("Answer").texts)
    lecturer.idle(2)
    assert f"**{len(students)}** answered" in " ".join(lecturer._rerun().texts)
    for session in (lecturer, *students):
        session.close()


def test_nothing_but_the_key_makes_a_session_the_lecturer(lecture_url):
    lecturer, code = lead(lecture_url)
    buttons = [lecturer.widgets[key].id for key in ("_lecture_reveal", "_lecture_end", "_lecture_ask")
               if key in lecturer.widgets]
    lecturer.press("_lecture_ask")  # a question open, for the replays below
    lecturer_states = list(lecturer.states.values())
    buttons += [lecturer.widgets[key].id for key in ("_lecture_reveal", "_lecture_end") if key in lecturer.widgets]

    attacker = Session(lecture_url)
    # a URL: the lecture's own link, and parameters named as the session's secret
    run = attacker.open("flash_attention", {"join": code, "_lecture_token": code, "lecturer": "true"})
    assert not is_lecturer(run) and any("Following lecture" in t for t in run.texts)
    key_box = attacker.widgets["_lecture_key_text"].id
    # forged widget state: values for the ids of the secret and of the lecturer's buttons, and a wrong key
    forged = [WidgetState(id="_lecture_token", string_value=code),
              WidgetState(id=key_box, string_value="not-the-key"),
              *[WidgetState(id=button, trigger_value=True) for button in buttons]]
    run = attacker._rerun(extra=forged, keep=False)
    assert not is_lecturer(run)
    # the lecturer's own messages replayed: every widget state its session sent, the button presses included
    run = attacker._rerun(extra=lecturer_states, keep=False)
    assert not is_lecturer(run)
    # five wrong keys: the sixth try, even the right key, is refused for a minute
    attacker.open("flash_attention", {"join": code})
    for typed in ["wrong"] * 5 + [KEY]:
        attacker.states[key_box] = WidgetState(id=key_box, string_value=typed)
        run = attacker.press("Start the lecture")
        assert typed == KEY or "That is not the lecturer key." in run.texts, run.texts
    assert not is_lecturer(run) and any(t.startswith("Too many wrong keys") for t in run.texts)

    run = lecturer._rerun()  # the lecturer's question is still open, nothing was revealed or ended
    assert is_lecturer(run) and any("answered" in t for t in run.texts)
    for session in (lecturer, attacker):
        session.close()


@pytest.mark.skipif(not REDIS_SERVER.exists(), reason=f"{REDIS_SERVER} is missing (apt-get install -y redis-server)")
def test_a_follower_on_one_replica_follows_a_lecturer_on_another(browser):
    """Two replicas sharing the lecture's store in Redis, as `python -m serve` runs them: the lecturer's change,
    announced on one, moves a follower served by the other, and the lecturer there counts them."""
    store = Store()
    replicas = []
    try:
        replicas = [Server(ROOT / "app.py", ROOT, env={"HOW_LMS_LECTURE_KEY": KEY, "HOW_LMS_REDIS": store.url})
                    for _ in range(2)]
        lecturer, student = new_tab(browser, replicas[0].url), new_tab(browser, replicas[1].url)
        open_url(lecturer, "/kernel_regression")
        code = start_lecture(lecturer)
        open_url(student, f"/?join={code}")
        student.wait_for_url(re.compile(r"/kernel_regression\?"), timeout=FOLLOW_S * 1000)
        lecturer.get_by_text("1 following").wait_for(timeout=FOLLOW_S * 1000)
        step(lecturer, "seed")
        comes_to(student, "seed", "1")
        for tab in (lecturer, student):
            assert_no_exception(tab)
            tab.context.close()
    finally:
        for process in (*replicas, store):
            process.stop()
