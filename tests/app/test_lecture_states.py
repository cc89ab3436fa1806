"""The live lecture's states in AppTest (ui/lecture.py), each tab an AppTest of this process sharing its lectures:
off without a key; the lecturer's key, wrong and then rate-limited; a join code unknown, then right; a question
asked, a bad answer refused, a good one counted, the reveal; the end. AppTest has no server to push a change, so each
tab runs again where a browser's is pushed; and its reruns send the tab's own widget values, which a pushed run does
not, so a follower's moves, stepping away and coming back are checked over the protocol and in the browser
(tests/e2e/test_lecture_browser.py), not here."""
from __future__ import annotations

import dataclasses
import re

import pytest

from tests.app.conftest import assert_clean, open_page
from ui import lecture, settings

KEY = "a-lecturer-key-for-app-tests"


@pytest.fixture
def lectures_on(monkeypatch):
    """This process's settings with a lecturer key, and its lectures made afresh (and again after: off)."""
    monkeypatch.setattr(settings, "_read", [dataclasses.replace(settings.current(), lecture_key=KEY)])
    lecture._sessions.clear()
    yield
    lecture._sessions.clear()


def press(at, label: str):
    return next(b for b in at.button if b.label == label).click().run()


def texts(at) -> str:
    return " ".join(str(e.value) for kind in (at.markdown, at.warning, at.error, at.caption) for e in kind)


def start(at, key: str):
    at.text_input(key="_lecture_key_text").input(key)
    return press(at, "Start the lecture")


def test_without_a_key_nothing_of_the_lecture_is_drawn():
    at = open_page("flash_attention")
    assert "Live lecture" not in [e.label for e in at.expander]
    assert_clean(at)


def test_without_a_key_a_lectures_link_says_its_code_is_ignored():
    at = open_page("online_softmax", join="")  # hypothesis's URL test found this link silent
    assert_clean(at)
    assert [t.value for t in at.toast] == ["Ignored URL parameter `join`: this server runs no live lectures."]
    assert "join" not in at.query_params


def test_a_lecture_from_the_key_to_the_end(lectures_on):
    guesser = open_page("flash_attention")
    for _ in range(5):
        assert "That is not the lecturer key." in texts(start(guesser, "not-the-key"))
    assert "Too many wrong keys" in texts(start(guesser, KEY))  # the sixth try in a minute, even the right key

    lecturer = start(open_page("flash_attention"), KEY)
    code = re.search(r"Join code: `([A-Z0-9]{5})`", texts(lecturer)).group(1)
    student = open_page("flash_attention")
    student.text_input(key="_lecture_code").input("ZZZZZ")
    assert "No lecture is going with the code 'ZZZZZ'." in texts(press(student, "Join"))
    student = open_page("flash_attention", join=code.lower())
    assert f"Following lecture **{code}**" in texts(student)

    assert "**1** following" in texts(lecturer.run())

    press(lecturer, "Ask")
    student.run().text_input(key="_lecture_number_1").input("many")
    assert "not a number" in texts(press(student, "Answer")).lower()
    student.text_input(key="_lecture_number_1").input("9")
    assert "Your answer: 9." in texts(press(student, "Answer"))
    assert "**1** answered" in texts(lecturer.run())
    press(lecturer, "Reveal the answers")
    revealed = texts(student.run())
    right = re.search(r"Answer: (\d+)\*\* · ([01]) of 1 right", revealed)
    assert right, revealed
    assert right.group(2) == str(int(right.group(1) == "9"))
    assert ("you were right" if right.group(1) == "9" else "you were not right") in revealed

    press(lecturer, "End the lecture")
    student.run()
    assert "Following lecture" not in texts(student) and "join" not in student.query_params
    for at in (guesser, lecturer, student):
        assert_clean(at)
