"""The server's line of heavy jobs (ui/jobs.py) with fake jobs: order, identical requests sharing one run, a
session's job dropped or stopped when it leaves, the bound on running jobs, a failure reaching only its own
waiters, the place and estimate shown, a full line, one job per session."""
from __future__ import annotations

import threading
import time

import pytest

from engine.errors import InputError
from engine.waiting_line import LineFull, State
from ui.jobs import JobQueue, ordinal, place_text

WAIT = 5  # seconds any fake job may take to be seen started or finished: far more than it needs


class Gate:
    """Fake work: records that it started, reports once, then blocks until released; returns its name."""

    def __init__(self, name: str, log: list[str] | None = None, fail: Exception | None = None):
        self.name, self.log, self.fail = name, log if log is not None else [], fail
        self.started, self.release, self.told_to_stop = threading.Event(), threading.Event(), threading.Event()

    def __call__(self, report) -> str:
        self.log.append(self.name)
        self.started.set()
        report(0.5, f"{self.name} half done", self.name)
        while not self.release.wait(0.01):
            if not report(0.5, f"{self.name} half done", self.name):
                self.told_to_stop.set()
                return f"{self.name} (stopped)"
        if self.fail is not None:
            raise self.fail
        return self.name


@pytest.fixture
def line():
    queues = []

    def make(workers=1, waiting=8):
        queues.append(JobQueue(workers, waiting))
        return queues[-1]

    yield make
    for queue in queues:
        queue.close()


def finished(job):
    assert job.done.wait(WAIT), f"{job.key} did not finish"
    return job


def test_jobs_run_in_the_order_they_were_asked_for(line):
    queue, log = line(workers=1), []
    gates = [Gate(name, log) for name in "abcd"]
    jobs = [queue.submit(f"s{i}", "fake", gate.name, gate) for i, gate in enumerate(gates)]
    for gate in gates:
        gate.release.set()
    assert [finished(job).result for job in jobs] == list("abcd")
    assert log == list("abcd")


def test_identical_requests_share_one_run(line):
    queue, log = line(workers=1), []
    gate = Gate("train", log)
    first, second = queue.submit("s1", "fake", ("w2v", 50), gate), queue.submit("s2", "fake", ("w2v", 50), gate)
    assert first is second and first.watchers == {"s1", "s2"}
    gate.release.set()
    assert finished(first).result == "train" and log == ["train"]
    other = queue.submit("s3", "fake", ("w2v", 50), Gate("again", log))  # after it finished: a new run
    assert other is not first


def test_the_bound_on_running_jobs_holds(line):
    queue = line(workers=2)
    gates = [Gate(str(i)) for i in range(5)]
    jobs = [queue.submit(f"s{i}", "fake", i, gate) for i, gate in enumerate(gates)]
    assert gates[0].started.wait(WAIT) and gates[1].started.wait(WAIT)
    time.sleep(0.1)  # room for a third worker, were there one
    assert [job.state for job in jobs] == [State.RUNNING] * 2 + [State.WAITING] * 3
    gates[0].release.set()
    assert gates[2].started.wait(WAIT)
    assert sum(job.state is State.RUNNING for job in jobs) == 2
    for gate in gates:
        gate.release.set()
    assert all(finished(job).state is State.DONE for job in jobs)


def test_a_session_that_leaves_drops_its_queued_job(line):
    queue, log = line(workers=1), []
    blocker, waiting = Gate("blocker", log), Gate("waiting", log)
    queue.submit("s1", "fake", "blocker", blocker)
    job = queue.submit("s2", "fake", "waiting", waiting)
    queue.leave("s2", job)
    assert job.done.is_set() and job.state is State.DROPPED
    blocker.release.set()
    time.sleep(0.1)
    assert log == ["blocker"]  # the dropped job never ran


def test_a_running_job_stops_when_its_last_waiter_leaves(line):
    queue = line(workers=1)
    gate = Gate("long")
    job = queue.submit("s1", "fake", "long", gate)
    queue.submit("s2", "fake", "long", gate)
    assert gate.started.wait(WAIT)
    queue.leave("s1", job)
    time.sleep(0.05)
    assert not gate.told_to_stop.is_set()  # s2 still waits on it
    queue.leave("s2", job)
    assert finished(job).result == "long (stopped)" and gate.told_to_stop.is_set()
    fresh = queue.submit("s3", "fake", "long", Gate("long"))  # a new identical request does not join the stopping run
    assert fresh is not job


def test_one_session_holds_one_job_asking_again_replaces_it(line):
    queue, log = line(workers=1), []
    blocker = Gate("blocker", log)
    queue.submit("other", "fake", "blocker", blocker)
    assert blocker.started.wait(WAIT)
    first = queue.submit("s1", "fake", "first", Gate("first", log))
    second = queue.submit("s1", "fake", "second", Gate("second", log))
    assert first.state is State.DROPPED and second.state is State.WAITING
    assert queue.place(second)[0] == 1  # the dropped job left its place
    blocker.release.set()
    second.work.release.set()
    finished(second)
    assert log == ["blocker", "second"]


def test_a_failure_reaches_only_its_own_waiters(line):
    queue = line(workers=1)
    bad, good = Gate("bad", fail=RuntimeError("boom")), Gate("good")
    failing = queue.submit("s1", "fake", "bad", bad)
    queue.submit("s2", "fake", "bad", bad)
    fine = queue.submit("s3", "fake", "good", good)
    bad.release.set()
    good.release.set()
    assert finished(failing).state is State.FAILED and str(failing.error) == "boom"
    assert finished(fine).state is State.DONE and fine.error is None and fine.result == "good"  # the worker went on


def test_a_full_line_refuses_new_jobs_but_not_joining_one(line):
    queue = line(workers=1, waiting=2)
    blocker = Gate("blocker")
    queue.submit("s0", "fake", "blocker", blocker)
    assert blocker.started.wait(WAIT)  # running: no longer in line
    queue.submit("s1", "fake", "a", Gate("a"))
    queue.submit("s2", "fake", "b", Gate("b"))
    with pytest.raises(LineFull, match="2 heavy jobs waiting") as refused:
        queue.submit("s3", "fake", "c", Gate("c"))
    assert isinstance(refused.value, InputError)  # a page shows it as a notice
    assert queue.submit("s4", "fake", "a", Gate("a")).watchers == {"s1", "s4"}


def test_place_and_estimate_shown(line):
    queue = line(workers=1)
    gates = [Gate(str(i)) for i in range(3)]
    jobs = [queue.submit(f"s{i}", "fake", i, gate, estimate=4.0) for i, gate in enumerate(gates)]
    assert gates[0].started.wait(WAIT)
    assert queue.place(jobs[0]) == (0, 0.0)
    # the running job reported half done: its pace, not the estimate, says how long it has left
    position, seconds = queue.place(jobs[2])
    assert position == 2 and seconds == pytest.approx(4.0 + 0.0, abs=1.0)
    assert place_text(position, seconds) == "2nd in line, starts in about 4 s"
    assert place_text(1, None) == "1st in line"
    assert place_text(3, 150) == "3rd in line, starts in about 2 min"
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]
    for gate in gates:
        gate.release.set()


def test_estimates_learn_from_finished_jobs_of_the_kind(line):
    queue = line(workers=1)
    quick = queue.submit("s0", "fake", "quick", lambda report: time.sleep(0.2), estimate=60.0)
    finished(quick)
    blocker = Gate("blocker")
    queue.submit("s1", "other", "blocker", blocker, estimate=1.0)
    assert blocker.started.wait(WAIT)
    jobs = [queue.submit(f"s{i}", "fake", i, Gate(str(i)), estimate=60.0) for i in (2, 3)]
    seconds = queue.place(jobs[1])[1]  # the blocker's pace, then one "fake" job of about 0.2 s, not 60
    assert 0.1 < seconds < 3, seconds
    blocker.release.set()
    for job in jobs:
        job.work.release.set()
