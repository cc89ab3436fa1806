"""The one waiting line (engine/waiting_line.py) that the server's heavy jobs (ui/jobs.py, tests/unit/test_jobs.py)
and SmolLM2's batch (engine/llm/serving.py, tests/unit/test_batching.py) are both built on: merging, watchers,
dropping what nobody watches, places, and the cap."""
from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.waiting_line import Entry, LineFull, State, WaitingLine


@pytest.fixture
def line() -> WaitingLine[Entry]:
    return WaitingLine(3, lambda n: f"{n} already wait")


def join(line: WaitingLine[Entry], watcher: str, key: str) -> Entry:
    return line.join(watcher, key, lambda: Entry(key))


def test_identical_requests_share_one_entry_and_each_has_its_place(line):
    a, b = join(line, "s1", "a"), join(line, "s2", "b")
    assert join(line, "s3", "a") is a and a.watchers == {"s1", "s3"}
    assert [line.place(e) for e in (a, b)] == [1, 2] and len(line) == 2
    assert line.take() is a and a.state is State.RUNNING
    assert [line.place(e) for e in (a, b)] == [0, 1]
    assert join(line, "s4", "a") is a  # a running entry is still joined, not run twice


def test_an_entry_nobody_watches_leaves_the_line_and_a_running_one_goes_to_its_owner(line):
    a, b = join(line, "s1", "a"), join(line, "s2", "b")
    join(line, "s3", "b")
    assert line.leave("s2", b) is False and b.state is State.WAITING  # s3 still waits on it
    assert line.leave("s3", b) is False and b.state is State.DROPPED and b.done.is_set()
    assert list(line) == [a]
    line.take()
    assert line.leave("s1", a) is True and a.state is State.RUNNING  # running, alone: its owner stops it
    assert join(line, "s5", "a") is not a  # asked again, it starts afresh


def test_a_full_line_refuses_new_entries_but_not_joining_one(line):
    for key in "abc":
        join(line, "s", key)
    with pytest.raises(LineFull, match="3 already wait") as refused:
        join(line, "t", "d")
    assert isinstance(refused.value, InputError)  # a page shows it as a notice
    assert join(line, "t", "a").watchers == {"s", "t"}


def test_an_ended_entry_wakes_its_watchers_and_is_joined_no_more(line):
    a = join(line, "s1", "a")
    line.take()
    error = RuntimeError("boom")
    line.end(a, State.FAILED, error)
    assert a.done.is_set() and a.state is State.FAILED and a.error is error
    assert line.leave("s1", a) is False  # ended: nothing left to stop
    assert join(line, "s2", "a") is not a


def test_emptying_the_line_ends_every_waiting_entry(line):
    a, b = join(line, "s", "a"), join(line, "s", "b")
    assert line.end_all(State.DROPPED) == [a, b] and len(line) == 0
    assert {a.state, b.state} == {State.DROPPED} and a.done.is_set() and b.done.is_set() and a.ended <= b.ended
    assert join(line, "s", "a") is not a
    c = join(line, "s", "c")
    error = RuntimeError("the batch's loop could not start")
    line.end_all(State.FAILED, error)
    assert c.state is State.FAILED and c.error is error
