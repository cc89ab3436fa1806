"""Timings measured on this server: one per setting, kept for every visitor, replaced on demand, labelled."""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import streamlit as st

from engine.efficiency.measure import Timing
from ui import figures, queued

KEPT = 64  # measurements kept per server; the oldest setting is dropped first


@dataclass(frozen=True)
class Measured:
    value: Any  # what the measuring function returned
    label: str  # when and where: "measured 2026-11-23 19:52 UTC on this server (CPU, 1 thread), ..."


@st.cache_resource
def _shelf() -> tuple[threading.Lock, queued.Kept]:
    """One lock and one store per server process: two timings at once would each measure the other. Timings
    run as jobs of the server's line (ui/queued.py); the lock still holds when it runs several jobs at once."""
    return threading.Lock(), queued.Kept(KEPT)


def shared_timing(key: Hashable, measure: Callable[[Callable[[float], None]], Any], where: str, runs: str,
                  automatic: bool) -> Measured | None:
    """The measurement stored for `key`, after a button that measures afresh and replaces it for everyone.

    measure(progress) does the timing and calls progress(fraction done). automatic: measure when nothing is
    stored yet (for timings of about a second); otherwise the page waits for the button."""
    pressed = st.button("Measure on this server", key="measure", icon=":material/timer:",
                        help="A fresh timing that replaces the one every visitor sees")
    kept = _shelf()[1].get(key)  # one look: another session may drop it from the store meanwhile
    if pressed or (automatic and kept is None):  # students pressing together share one timing
        return queued.run("timing", key, _timing_job(key, measure, where, runs), "Timing", estimate=5.0)
    return kept


def measure_at_start(key: Hashable, measure: Callable[[Callable[[float], None]], Any], where: str, runs: str) -> None:
    """The timing shared_timing(key, ...) would make, made by the server's start-up thread (ui/defaults.py) as
    the same job, so that a page's first visitor finds it, or joins it."""
    if _shelf()[1].get(key) is None:
        queued.outside_a_page("timing", key, _timing_job(key, measure, where, runs))


def _timing_job(key: Hashable, measure: Callable[[Callable[[float], None]], Any], where: str,
                runs: str) -> Callable[[queued.Report], Measured]:
    """The job that times, keeps the timing for every visitor, and hands it to those waiting on it."""
    lock, store = _shelf()

    def work(report: queued.Report) -> Measured:
        with lock:  # a server running several jobs at once still times one thing at a time
            value = measure(lambda done: report(done, f"Timing on this server… {done:.0%}"))
            when = datetime.now(UTC)
        measured = Measured(value, f"measured {when:%Y-%m-%d %H:%M} UTC on this server ({where}), {runs}")
        store.put(key, measured)
        return measured
    return work


def timing_lines(x: Sequence[float], timings: Mapping[str, Sequence[Timing]], **lines_args: Any) -> figures.go.Figure:
    """figures.lines of each series' median in ms at every x, with a bar from its fastest to its slowest run."""
    runs = {name: np.array([t.seconds for t in series]) * 1e3 for name, series in timings.items()}  # (len(x), repeats)
    medians = {name: np.median(ms, axis=1) for name, ms in runs.items()}
    spreads = {name: ((medians[name] - ms.min(axis=1)).tolist(), (ms.max(axis=1) - medians[name]).tolist())
               for name, ms in runs.items()}
    return figures.lines(x, {name: m.tolist() for name, m in medians.items()}, spreads=spreads, **lines_args)
