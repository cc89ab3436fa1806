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
- The line has a length bound: past it a new request is refused with a message (QueueFull); joining a job
  that already exists is never refused, since it adds no work.

Pure Python, no Streamlit: ui/queued.py shows a job on a page, tests/unit/test_jobs.py drives this with fake
jobs. One lock guards the line; no job runs while it is held.
"""
from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from engine.errors import InputError

NICENESS = 10  # workers' threads yield the CPU to sessions' script threads (Linux sets niceness per thread)
SMOOTHING = 0.3  # weight of the newest duration in a kind's running mean: a few runs move the estimate


def default_workers() -> int:
    """HOW_LMS_JOBS, else one core in reserve for the sessions' own reruns: one job on a 2-core server, at most 4.

    A heavy job keeps a core busy (the compiled training loops and torch release the GIL), and every session's
    script shares the other; more jobs at once would only slow each other and the students moving controls."""
    return int(os.environ.get("HOW_LMS_JOBS", str(min(4, max(1, (os.cpu_count() or 1) - 1)))))


def default_waiting() -> int:
    """HOW_LMS_QUEUE, else 64 jobs in line: at 10 s a job on one worker, the last would wait about 10 minutes."""
    return int(os.environ.get("HOW_LMS_QUEUE", "64"))


class QueueFull(InputError):
    """Too many jobs already wait: the message says so and what to do (a page shows it as a notice)."""


@dataclass(frozen=True)
class Progress:
    fraction: float = 0.0  # of the job done, 0 to 1
    text: str = ""  # what the job is doing, for the progress bar
    partial: Any = None  # the result so far (a model being trained, the tokens generated), for the page to draw


Report = Callable[..., bool]  # report(fraction, text="", partial=None): False once nobody waits any more


@dataclass(eq=False)
class Job:
    kind: str  # what sort of work ("word2vec", "generate"): durations are averaged per kind
    key: Hashable  # the request: identical keys share one job
    work: Callable[[Report], Any]
    estimate: float | None = None  # seconds, guessed by the page until a job of this kind has finished
    averaged: bool = True  # False: its duration says nothing of the next one's (the batch's loop), its estimate does
    waiters: set[Hashable] = field(default_factory=set)  # sessions waiting on it
    state: str = "queued"  # queued, running, done, failed, dropped
    progress: Progress = Progress()
    result: Any = None
    error: BaseException | None = None
    started: float | None = None
    done: threading.Event = field(default_factory=threading.Event)  # set when finished, failed or dropped
    stop: threading.Event = field(default_factory=threading.Event)  # set when every waiter has left

    def report(self, fraction: float, text: str = "", partial: Any = None) -> bool:
        """Called by the work as it goes; returns False when it should stop (nobody is waiting for it)."""
        self.progress = Progress(fraction, text, partial)  # one assignment: readers see all three or none
        return not self.stop.is_set()


class JobQueue:
    """Jobs in order, at most `workers` running at once, at most `waiting` in line."""

    def __init__(self, workers: int | None = None, waiting: int | None = None, name: str = "heavy-job"):
        self.workers, self.waiting = workers or default_workers(), waiting or default_waiting()
        self._lock = threading.Condition()
        self._line: deque[Job] = deque()  # queued jobs, first in front
        self._running: set[Job] = set()
        self._by_key: dict[Hashable, Job] = {}  # queued and running jobs that can still be joined
        self._of_session: dict[Hashable, Job] = {}
        self._mean: dict[str, float] = {}  # running mean of finished jobs' seconds, per kind
        self._closed = False
        for i in range(self.workers):
            threading.Thread(target=self._serve, name=f"{name}-{i}", daemon=True).start()

    def submit(self, session: Hashable, kind: str, key: Hashable, work: Callable[[Report], Any],
               estimate: float | None = None, averaged: bool = True) -> Job:
        """The job for (kind, key), joined if it is queued or running, else put at the end of the line. The
        session leaves any other job it waited on. Raises QueueFull when a new job would not fit."""
        with self._lock:
            job = self._by_key.get((kind, key))
            earlier = self._of_session.get(session)
            if earlier is not None and earlier is not job:
                self._leave(session, earlier)
            if job is None:
                if len(self._line) >= self.waiting:
                    raise QueueFull(f"The server already has {len(self._line)} heavy jobs waiting, its limit: try "
                                    "again in a minute. Settings someone else is running now share their run.")
                job = Job(kind, key, work, estimate, averaged)
                self._line.append(job)
                self._by_key[(kind, key)] = job
                self._lock.notify()
            job.waiters.add(session)
            self._of_session[session] = job
            return job

    def leave(self, session: Hashable, job: Job) -> None:
        """The session no longer waits on the job (its page moved on, or it left): drop or stop a job left alone."""
        with self._lock:
            self._leave(session, job)

    def _leave(self, session: Hashable, job: Job) -> None:
        job.waiters.discard(session)
        if self._of_session.get(session) is job:
            del self._of_session[session]
        if job.waiters or job.done.is_set():
            return
        if self._by_key.get((job.kind, job.key)) is job:
            del self._by_key[(job.kind, job.key)]  # a new identical request starts afresh
        if job.state == "queued":
            self._line.remove(job)
            job.state = "dropped"
            job.done.set()
        else:
            job.stop.set()

    def place(self, job: Job) -> tuple[int, float | None]:
        """(position, seconds until it starts): 1 for the next job to start, 0 once running; the seconds are
        None until every job ahead has an estimate."""
        with self._lock:
            if job.state != "queued":
                return 0, 0.0
            position = self._line.index(job) + 1
            return position, self._start_in(position - 1)

    def has_waiting(self) -> bool:
        """Whether any job waits in line (a long-running job can then step aside: ui/batching.py)."""
        with self._lock:
            return bool(self._line)

    def _start_in(self, ahead: int) -> float | None:
        """Each free worker takes the next job in line: when does the worker for the (ahead+1)th become free?"""
        now = time.monotonic()
        free = [self._remaining(job, now) for job in self._running]
        free += [0.0] * max(0, self.workers - len(free))
        if None in free:
            return None
        heapq.heapify(free)
        for job in itertools.islice(self._line, ahead):
            expected = self._expected(job)
            if expected is None:
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
                while not self._line and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                job = self._line.popleft()
                job.state, job.started = "running", time.monotonic()
                self._running.add(job)
            self._run(job)

    def _run(self, job: Job) -> None:
        try:
            result, error = job.work(job.report), None
        except Exception as raised:  # noqa: BLE001  (handed to the job's waiters; the worker goes on)
            result, error = None, raised
        with self._lock:
            self._running.discard(job)
            if self._by_key.get((job.kind, job.key)) is job:
                del self._by_key[(job.kind, job.key)]
            if error is None and not job.stop.is_set() and job.averaged:  # a stopped run says nothing of a whole one
                seconds, mean = time.monotonic() - job.started, self._mean.get(job.kind)
                self._mean[job.kind] = seconds if mean is None else (1 - SMOOTHING) * mean + SMOOTHING * seconds
            job.result, job.error, job.state = result, error, "done" if error is None else "failed"
            for waiter in job.waiters:  # a finished job is nobody's any more: its waiters may never call leave
                if self._of_session.get(waiter) is job:
                    del self._of_session[waiter]
        job.done.set()

    def close(self) -> None:
        """Let the workers end after the jobs they are running (for tests); jobs still in line are dropped."""
        with self._lock:
            self._closed = True
            for job in self._line:
                job.state = "dropped"
                job.done.set()
            self._line.clear()
            self._lock.notify_all()


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def place_text(position: int, seconds: float | None) -> str:
    """ "2nd in line, starts in about 8 s"; the estimate left out while there is none."""
    text = f"{ordinal(position)} in line"
    if seconds is None:
        return text
    if seconds >= 90:
        return f"{text}, starts in about {seconds / 60:.0f} min"
    return f"{text}, starts in about {max(1, round(seconds))} s"
