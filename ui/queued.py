"""A heavy action on a page, through the server's one line of jobs (ui/jobs.py): the session's place and an
estimate while it waits, then a progress bar, then the result.

The waiting happens in the page's own script run, which redraws the bar about twice a second. Each redraw is
where Streamlit ends a run that a student's rerun (another control, Stop) or their leaving has cancelled, so the
session leaves the job there: a job nobody waits for any more is dropped from the line, or stopped. Pages that
run no job never wait: the line holds jobs, not sessions' reruns.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, NoReturn

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from engine.checkpoint_files import ModelFileError
from engine.errors import InputError
from engine.waiting_line import State
from ui import settings
from ui.jobs import Job, JobQueue, Report, place_text

TICK = 0.5  # seconds between redraws of the place or the progress


class JobFailed(RuntimeError):
    """A job raised something other than bad input: its waiters are told, no one else."""


@st.cache_resource(show_spinner=False)
def server_queue() -> JobQueue:
    """The one line of heavy jobs of this server process, its bounds from the server's settings."""
    return JobQueue(settings.current().jobs, settings.current().queue)


def this_session() -> str:
    """The id the line knows this session by: one per browser tab (AppTest gives each the same)."""
    return get_script_run_ctx().session_id


def run(kind: str, key: Hashable, work: Callable[[Report], Any], what: str, estimate: float | None = None,
        show: Callable[[Any], None] | None = None) -> Any:
    """work(report) run by the server's line of jobs, shared with every session asking for the same (kind, key);
    its result, once done. `what` names it in messages ("Training"). While it waits the bar shows its place;
    while it runs the fraction and text of its last report, and show(partial) draws the partial result (a loss
    curve, the tokens so far) each time it changes. Bad input the work refuses (InputError) and a missing or
    damaged file (ModelFileError) are raised again here for page.guard and app.py; a full line raises LineFull,
    an InputError too; any other failure raises JobFailed."""
    session, queue = this_session(), server_queue()
    job = queue.submit(session, kind, key, work, estimate)
    bar, drawn, first = st.empty(), None, True
    try:
        while not job.done.wait(0 if first else TICK):
            first = False
            position, seconds = queue.place(job)
            progress = job.progress
            if position:
                bar.progress(0.0, text=f"{what}: {place_text(position, seconds)}. Changing a control leaves the line.")
            else:
                bar.progress(min(max(progress.fraction, 0.0), 1.0), text=progress.text or f"{what}…")
            if show is not None and progress.partial is not None and progress is not drawn:
                show(progress.partial)  # each report is a new Progress, even when its partial is the same object
            drawn = progress
    finally:
        queue.leave(session, job)
    bar.empty()
    return outcome(job, what)


class Kept:
    """Jobs' results kept for every session of the server, the latest `limit` (the oldest dropped first). Stores
    are one at a time: iterating the results while another session's thread adds to them would raise."""

    def __init__(self, limit: int):
        self.limit = limit
        self._results: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The result kept for key, or None. Look once and hold on to it: another session may drop it."""
        return self._results.get(key)

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._results[key] = value
            while len(self._results) > self.limit:
                self._results.pop(next(iter(self._results)))

    def run(self, kind: str, key: Hashable, work: Callable[[Report], Any], what: str,
            estimate: float | None = None) -> Any:
        """The result kept for key, or work run as run() runs it and kept."""
        if (value := self.get(key)) is None:
            value = run(kind, key, work, what, estimate)
            self.put(key, value)
        return value


def outside_a_page(kind: str, key: Hashable, work: Callable[[Report], Any], owner: str = "start-up") -> Any:
    """work as a job of the server's line, for a thread that is no session (ui/defaults.py's start-up thread):
    a session asking for the same job meanwhile joins it. Its result, once done."""
    queue = server_queue()
    job = queue.submit(owner, kind, key, work)
    try:
        job.done.wait()
    finally:
        queue.leave(owner, job)
    return outcome(job, kind)


def outcome(job: Job, what: str) -> Any:
    """The finished job's result, or its failure raised in this session alone."""
    if job.state is State.FAILED:
        raise_failure(job.error, what)
    if job.state is State.DROPPED:
        raise InputError(f"{what} was taken out of the line as the server shut it down: press the button again.")
    return job.result


def raise_failure(error: BaseException, what: str) -> NoReturn:
    """Raise a failure of shared work in this session alone: bad input and a missing or damaged file as messages
    for the page (page.guard, app.py), anything else as JobFailed."""
    if isinstance(error, InputError | ModelFileError):
        raise type(error)(*error.args)  # a fresh copy: each waiter's thread raises its own
    raise JobFailed(f"{what} failed on the server ({type(error).__name__}: {error}). Other students' work goes on; "
                    "press the button again to retry.") from error
