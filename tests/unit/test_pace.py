"""A session rerunning without pause waits between its runs (ui/pace.py); a student changing a control every few
seconds never does. SHARE is the app's default, 0.2, whatever the suite's environment lifts it to."""
import pytest

from ui import pace


@pytest.fixture(autouse=True)
def default_share(monkeypatch):
    monkeypatch.setattr(pace, "SHARE", 0.2)


def waits(runs: list[tuple[float, float]]) -> list[float]:
    """The wait before each run, given (gap since the last run ended, seconds the run takes)."""
    level, found = pace.BURST_S, []
    for gap, seconds in runs:
        level = pace.refilled(level, gap)
        wait = pace.wait_for(level)
        found.append(wait)
        level += wait * pace.SHARE - pace.spent(seconds)
    return found


def test_a_student_thinking_between_changes_never_waits():
    assert waits([(2.0, 0.5)] * 200) == [0.0] * 200  # a change every 2.5 s, each run 0.5 s: 20% of the time
    assert waits([(0.0, 0.25)] * 20) == [0.0] * 20  # twenty quick changes: 5 s of running, within the burst


def test_a_session_rerunning_without_pause_gets_its_share_and_no_more():
    found = waits([(0.0, 0.3)] * 100)  # flat out, 0.3 s a run
    assert found[:17] == [0.0] * 17 and found[17] > 0  # 4 s of burst at 0.3 × (1 - 0.2) s a run
    later = found[20:]
    busy = 0.3 * len(later)
    assert busy / (busy + sum(later)) == pytest.approx(pace.SHARE)  # after the burst, runs take SHARE of the time


def test_a_long_debt_waits_at_most_the_longest_wait():
    assert pace.wait_for(-100.0) == pace.LONGEST_WAIT_S
