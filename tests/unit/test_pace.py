"""A session rerunning without pause waits between its runs (ui/pace.py); a student changing a control every few
seconds never does. The share is the app's default, 0.2, whatever the suite's environment lifts it to."""
import threading
import time

import pytest

from ui import pace
from ui.settings import Settings

SHARE = Settings().pace_share


def waits(runs: list[tuple[float, ...]], share: float = SHARE) -> list[float]:
    """The wait before each run, given (gap since the last run ended, seconds the run takes[, of them CPU seconds
    of its thread]: all of them unless said)."""
    level, found = pace.BURST_S, []
    for gap, seconds, *cpu in runs:
        level = pace.refilled(level, gap, share)
        wait = pace.wait_for(level, share)
        found.append(wait)
        level = pace.refilled(level + wait * share - (cpu[0] if cpu else seconds), seconds, share)
    return found


def test_a_student_thinking_between_changes_never_waits():
    assert waits([(2.0, 0.5)] * 200) == [0.0] * 200  # a change every 2.5 s, each run 0.5 s: 20% of the time
    assert waits([(0.0, 0.25)] * 20) == [0.0] * 20  # twenty quick changes: 5 s of running, within the burst


def test_a_session_rerunning_without_pause_gets_its_share_and_no_more():
    found = waits([(0.0, 0.3)] * 100)  # flat out, 0.3 s a run
    assert found[:17] == [0.0] * 17 and found[17] > 0  # 4 s of burst at 0.3 × (1 - 0.2) s a run
    later = found[20:]
    busy = 0.3 * len(later)
    assert busy / (busy + sum(later)) == pytest.approx(SHARE)  # after the burst, runs take SHARE of the time


def test_a_run_that_waited_in_line_costs_its_student_nothing_afterwards():
    # 30 s waiting for a training in the server's line, 0.2 s of it the page's own Python; then quick changes
    assert waits([(0.0, 30.0, 0.2)] + [(0.5, 0.3)] * 10) == [0.0] * 11


def test_a_share_of_one_never_waits():
    # the suite's setting: its sessions rerun without pause on purpose
    assert waits([(0.0, 6.0)] * 5 + [(0.0, 0.3)] * 50, share=1.0) == [0.0] * 55  # runs longer than the burst included


def test_a_long_debt_waits_at_most_the_longest_wait():
    assert pace.wait_for(-100.0, SHARE) == pace.LONGEST_WAIT_S


def test_paced_counts_the_runs_own_processor_time_not_its_waiting(monkeypatch):
    state, slept = {}, []
    monkeypatch.setattr(pace, "st", type("FakeStreamlit", (), {"session_state": state, "toast": lambda *a, **k: None}))
    # the pacing's own waits, recorded instead of slept; time.sleep is the process's, so another thread's sleep (a
    # live lecture's ticker, started by an earlier test in this worker) is slept for real and not recorded
    this_thread, real_sleep = threading.get_ident(), time.sleep
    monkeypatch.setattr(pace.time, "sleep",
                        lambda s: slept.append(s) if threading.get_ident() == this_thread else real_sleep(s))
    monkeypatch.setattr(pace, "BURST_S", 0.2)
    # a busy machine's longer runs refill next to nothing
    monkeypatch.setattr(pace.settings, "current", lambda: Settings(pace_share=0.01))

    def run(body) -> None:
        with pace.paced():
            body()

    def burn(seconds: float) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    for _ in range(3):
        run(lambda: threading.Event().wait(0.3))  # waiting for a job: no processor time
    assert slept == []
    for _ in range(3):
        run(lambda: burn(0.15))  # the page's own Python, flat out
    assert slept and all(wait > 0 for wait in slept)
