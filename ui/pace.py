"""One session may not take the server's Python from the class: a session that reruns without pause (a
held-down key, a script, a stuck client) waits between its runs.

Every session's script runs in a thread of one process, and Python work takes turns on one core (the GIL), so a
session rerunning flat out takes a share of it from everyone (one such session among 50 students raised their
p95 from 0.42 to 1.1 s). What is limited is the share of the processor a session's runs take, not their count: a
bucket of BURST_S seconds of its script thread's CPU time, refilled at the server's pace_share (ui/settings.py)
seconds per second. CPU time, not the run's length: a run that waits (for its job in the server's line, for a cold
server's start-up) costs the others nothing and must not make its student wait afterwards. A student who changes a
control every few seconds never empties the bucket; past it, a run first sleeps (a sleep holds no lock and no core)
and the tab says why.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from ui import settings

BURST_S = 4.0  # CPU seconds of runs in a row before any wait: a quick series of changes never waits
LONGEST_WAIT_S = 5.0
BUCKET = "_pace_bucket"
TOLD = "_pace_told"


def refilled(level: float, since: float, share: float) -> float:
    """The bucket's level (CPU seconds it allows) `since` seconds later, before what was spent meanwhile, refilled
    at `share` seconds per second (the server's pace_share setting)."""
    return min(BURST_S, level + since * share)


def wait_for(level: float, share: float) -> float:
    """Seconds to wait before the next run when the bucket holds `level` (negative: a debt)."""
    return min(LONGEST_WAIT_S, max(0.0, -level / share))


@contextmanager
def paced() -> Iterator[None]:
    """Around every full run of the app: wait if this session's earlier runs spent its share, then count this
    one's time against it, however it ends."""
    share = settings.current().pace_share
    level, ended = st.session_state.get(BUCKET, (BURST_S, time.monotonic()))
    level = refilled(level, time.monotonic() - ended, share)
    if (wait := wait_for(level, share)) > 0:
        if not st.session_state.get(TOLD):
            st.session_state[TOLD] = True
            st.toast("Many runs in a row: this tab now waits a moment between them, so the rest of the class is "
                     "not slowed down.", icon=":material/speed:")
        time.sleep(wait)
        level += wait * share
    start, cpu = time.monotonic(), time.thread_time()  # the script runs in this thread, start to end
    try:
        yield
    finally:
        now = time.monotonic()
        # spent, then refilled over the run's length: with a share of 1 no run can leave a debt
        st.session_state[BUCKET] = (refilled(level - (time.thread_time() - cpu), now - start, share), now)
