"""One server-wide line for heavy work: a fixed number of worker threads run jobs in the order they were asked
for, as Gradio's queue does (concurrency limit, position and an estimate shown), which Streamlit lacks.

Streamlit runs every session's script in a thread of one process. Thirty students pressing Train at once would
otherwise start thirty trainings in their own threads, and every other student's rerun would wait behind them
for the two cores. Here a heavy action becomes a Job: at most `workers` run at once; the rest wait in line,
first come first served, and their sessions show their place ("2nd in line, starts in about 8 s").

- Identical requests (the same key: kind and arguments) share one job, and every session waiting on it gets its
  progress and its result.
- A session holds at most one job: asking for another leaves the first, as pressing Train again does.
- A job whose every waiter has left is dropped while it waits, or told to stop (report returns False) while it
  runs; the training loops already stop on that and return the model so far.
- A job that raises hands its exception to its own waiters only; the worker goes on with the next job.
- The line has a length bound: past it a new request is refused with a message (LineFull); joining a job
  that already exists is never refused, since it adds no work.

The line itself (merging, watchers, dropping, places, its bound) is engine/waiting_line.py's, which SmolLM2's
batch shares; this module keeps the workers, a session's one job, and the estimates. Pure Python, no Streamlit:
ui/queued.py shows a job on a page, tests/unit/test_jobs.py drives this with fake jobs. One lock guards the line;
no job runs while it is held.
"""
from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from engine.waiting_line import Entry, State, WaitingLine

NICENESS = 10  # workers' threads yield the CPU to sessions' script threads (Linux sets niceness per thread)
SMOOTHING = 0.3  # weight of the newest duration in a kind's running mean: a few runs move the estimate


@dataclass(frozen=True)
class Progress:
    fraction: float = 0.0  # of the job done, 0 to 1
    text: str = ""  # what the job is doing, for the progress bar
    partial: Any = None  # the result so far (a model being trained, the tokens generated), for the page to draw


Report = Callable[..., bool]  # report(fraction, text="", partial=None): False once nobody waits any more


@dataclass(eq=False, kw_only=True)
class Job(Entry):
    """A heavy job in the line: its key is (kind, the request), its watchers the sessions waiting on it."""
    kind: str  # what sort of work ("word2vec", "generate"): durations are averaged per kind
    work: Callable[[Report], Any]
    estimate: float | None = None  # seconds, guessed by the page until a job of this kind has finished
    averaged: bool = True  # False: its duration says nothing of the next one's (the batch's loop), its estimate does
    progress: Progress = Progress()
    result: Any = None
    started: float | None = None
    stop: threading.Event = field(default_factory=threading.Event)  # set when every waiter has left

    def report(self, fraction: float, text: str = "", partial: Any = None) -> bool:
        """Called by the work as it goes; returns False when it should stop (nobody is waiting for it)."""
        self.progress = Progress(fraction, text, partial)  # one assignment: readers see all three or none
        return not self.stop.is_set()


class JobQueue:
    """Jobs in order, at most `workers` running at once, at most `waiting` in line (the server's are its settings,
    ui/settings.py)."""

    def __init__(self, workers: int, waiting: int, name: str = "heavy-job"):
        self.workers = workers
        self.line: WaitingLine[Job] = WaitingLine(waiting, lambda n: (
            f"The server already has {n} heavy jobs waiting, its limit: try again in a minute. Settings someone "
            "else is running now share their run."))
        self._lock = threading.Condition()
        self._running: set[Job] = set()
        self._of_session: dict[Hashable, Job] = {}
        self._mean: dict[str, float] = {}  # running mean of finished jobs' seconds, per kind
        self._closed = False
        for i in range(self.workers):
            threading.Thread(target=self._serve, name=f"{name}-{i}", daemon=True).start()

    def submit(self, session: Hashable, kind: str, key: Hashable, work: Callable[[Report], Any],
               estimate: float | None = None, averaged: bool = True) -> Job:
        """The job for (kind, key), joined if it is queued or running, else put at the end of the line. The
        session leaves any other job it waited on. Raises LineFull when a new job would not fit."""
        with self._lock:
            if (earlier := self._of_session.get(session)) is not None and earlier.key != (kind, key):
                self._leave(session, earlier)  # first: a job of its own left in line frees its place
            queued = len(self.line)
            job = self.line.join(session, (kind, key), lambda: Job(key=(kind, key), kind=kind, work=work,
                                                                   estimate=estimate, averaged=averaged))
            if len(self.line) > queued:
                self._lock.notify()
            self._of_session[session] = job
            return job

    def leave(self, session: Hashable, job: Job) -> None:
        """The session no longer waits on the job (its page moved on, or it left): drop or stop a job left alone."""
        with self._lock:
            self._leave(session, job)

    def _leave(self, session: Hashable, job: Job) -> None:
        if self._of_session.get(session) is job:
            del self._of_session[session]
        if self.line.leave(session, job):  # running, and nobody waits for it any more
            job.stop.set()

    def place(self, job: Job) -> tuple[int, float | None]:
        """(position, seconds until it starts): 1 for the next job to start, 0 once running; the seconds are
        None until every job ahead has an estimate."""
        with self._lock:
            position = self.line.place(job)
            return (position, self._start_in(position - 1)) if position else (0, 0.0)

    def has_waiting(self) -> bool:
        """Whether any job waits in line (a long-running job can then step aside: ui/batching.py)."""
        with self._lock:
            return len(self.line) > 0

    def _start_in(self, ahead: int) -> float | None:
        """Each free worker takes the next job in line: when does the worker for the (ahead+1)th become free?"""
        now = time.monotonic()
        free = [self._remaining(job, now) for job in self._running]
        free += [0.0] * max(0, self.workers - len(free))
        if None in free:
            return None
        heapq.heapify(free)
        for job in itertools.islice(self.line, ahead):
            if (expected := self._expected(job)) is None:
                return None
            heapq.heapreplace(free, free[0] + expected)
        return free[0]

    def _expected(self, job: Job) -> float | None:
        return self._mean.get(job.kind, job.estimate) if job.averaged else job.estimate

    def _remaining(self, job: Job, now: float) -> float | None:
        elapsed, fraction = now - job.started, job.progress.fraction
        if fraction > 0.05:  # the job's own pace, once it has shown one
            return elapsed * (1 - fraction) / fraction
        expected = self._expected(job)
        return None if expected is None else max(expected - elapsed, 0.0)

    def _serve(self) -> None:
        if hasattr(os, "setpriority"):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
        while True:
            with self._lock:
                while not len(self.line) and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                job = self.line.take()
                job.started = time.monotonic()
                self._running.add(job)
            self._run(job)

    def _run(self, job: Job) -> None:
        try:
            result, error = job.work(job.report), None
        except Exception as raised:  # noqa: BLE001  (handed to the job's waiters; the worker goes on)
            result, error = None, raised
        with self._lock:
            self._running.discard(job)
            if error is None and not job.stop.is_set() and job.averaged:  # a stopped run says nothing of a whole one
                seconds, mean = time.monotonic() - job.started, self._mean.get(job.kind)
                self._mean[job.kind] = seconds if mean is None else (1 - SMOOTHING) * mean + SMOOTHING * seconds
            for waiter in job.watchers:  # a finished job is nobody's any more: its waiters may never call leave
                if self._of_session.get(waiter) is job:
                    del self._of_session[waiter]
            job.result = result
            self.line.end(job, State.DONE if error is None else State.FAILED, error)

    def close(self) -> None:
        """Let the workers end after the jobs they are running (for tests); jobs still in line are dropped."""
        with self._lock:
            self._closed = True
            self.line.end_all(State.DROPPED)
            self._lock.notify_all()


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def place_text(position: int, seconds: float | None) -> str:
    """ "2nd in line, starts in about 8 s"; the estimate left out while there is none."""
    if seconds is None:
        return f"{ordinal(position)} in line"
    wait = f"{seconds / 60:.0f} min" if seconds >= 90 else f"{max(1, round(seconds))} s"
    return f"{ordinal(position)} in line, starts in about {wait}"
