"""One session may not take the server's Python from the class: a session that reruns without pause (a
held-down key, a script, a stuck client) waits between its runs.

Every session's script runs in a thread of one process, and Python work takes turns on one core (the GIL), so a
session rerunning flat out takes a share of it from everyone (one such session among 50 students raised their
p95 from 0.42 to 1.1 s). What is limited is the share of the processor a session's runs take, not their count: a
bucket of BURST_S seconds of its script thread's CPU time, refilled at SHARE seconds per second. CPU time, not
the run's length: a run that waits (for its job in the server's line, for a cold server's start-up) costs the
others nothing and must not make its student wait afterwards. A student who changes a control every few seconds
never empties the bucket; past it, a run first sleeps (a sleep holds no lock and no core) and the tab says why.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

# of the wall time, a session's runs may take once its burst is spent; 1 lifts the limit (the test suite's
# sessions rerun without pause on purpose, tests/conftest.py)
SHARE = float(os.environ.get("HOW_LMS_PACE_SHARE", "0.2"))
BURST_S = 4.0  # CPU seconds of runs in a row before any wait: a quick series of changes never waits
LONGEST_WAIT_S = 5.0
BUCKET = "_pace_bucket"
TOLD = "_pace_told"


def refilled(level: float, since: float) -> float:
    """The bucket's level (CPU seconds it allows) `since` seconds later, before what was spent meanwhile."""
    return min(BURST_S, level + since * SHARE)


def wait_for(level: float) -> float:
    """Seconds to wait before the next run when the bucket holds `level` (negative: a debt)."""
    return min(LONGEST_WAIT_S, max(0.0, -level / SHARE))


@contextmanager
def paced() -> Iterator[None]:
    """Around every full run of the app: wait if this session's earlier runs spent its share, then count this
    one's time against it, however it ends."""
    level, ended = st.session_state.get(BUCKET, (BURST_S, time.monotonic()))
    level = refilled(level, time.monotonic() - ended)
    if (wait := wait_for(level)) > 0:
        if not st.session_state.get(TOLD):
            st.session_state[TOLD] = True
            st.toast("Many runs in a row: this tab now waits a moment between them, so the rest of the class is "
                     "not slowed down.", icon=":material/speed:")
        time.sleep(wait)
        level += wait * SHARE
    start, cpu = time.monotonic(), time.thread_time()  # the script runs in this thread, start to end
    try:
        yield
    finally:
        now = time.monotonic()
        # spent, then refilled over the run's length: with SHARE = 1 no run can leave a debt
        st.session_state[BUCKET] = (refilled(level - (time.thread_time() - cpu), now - start), now)
