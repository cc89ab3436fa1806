"""Per page: first render, warm rerun after moving its main control, and resident memory.

Runs every page of ui.catalog through app.py's navigation with Streamlit's AppTest, in one
process as a server would. Targets (issue 3): warm rerun median <= 250 ms, first render
<= 1 s, memory after visiting every page <= 1.5 GB; with SmolLM2's file present, and so its 135M float32
weights loaded, <= 2 GB (issue 13). Usage: python -m benchmarks.pages
"""
from __future__ import annotations

import logging
import os
import platform
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from benchmarks import finish, memory_targets, smollm_present
from ui.boundary import NOTICE
from ui.catalog import PAGES

ROOT = Path(__file__).resolve().parents[1]

RERUNS = 20
TARGETS = {"first_render_ms": 1000, "warm_rerun_median_ms": 250, "rss_mb": 1536}


def rss_mb() -> float:
    """Resident set size of this process from /proc (Linux), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def timed_run(at: AppTest) -> float:
    start = time.perf_counter()
    at.run()
    elapsed = (time.perf_counter() - start) * 1000
    if at.exception or [e for e in at.error if e.value == NOTICE]:  # raised, or caught by the page's boundary
        raise RuntimeError(f"page raised: {[e.value for e in at.exception]} (else see the log)")
    return elapsed


def control_values(at: AppTest, key: str) -> tuple[str, list]:
    """RERUNS settings of the control (a slider sweeps its range; a selectbox cycles; text alternates case)."""
    slider = next((s for s in at.slider if s.key == key), None)
    if slider is not None:
        values = np.linspace(slider.min, slider.max, RERUNS)
        values = [type(slider.value)(round(v / slider.step) * slider.step) for v in values]
        return "slider", values
    for kind in ("text_input", "text_area"):
        text = next((t for t in getattr(at, kind) if t.key == key), None)
        if text is not None:  # typed words: alternate the default and its upper case (pages lower-case input)
            return kind, [text.value.upper() if i % 2 else text.value for i in range(1, RERUNS + 1)]
    box = at.selectbox(key=key)
    return "selectbox", [box.options[i % len(box.options)] for i in range(1, RERUNS + 1)]


def measure(info) -> dict:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()  # the home page: a session exists before the page is opened
    at.switch_page(info.path)
    first = timed_run(at)
    kind, values = control_values(at, info.main_control)
    reruns = []
    for value in values:
        getattr(at, kind)(key=info.main_control).set_value(value)
        reruns.append(timed_run(at))
    return {"page": info.slug, "control": info.main_control, "first_render_ms": round(first, 1),
            "warm_rerun_median_ms": round(statistics.median(reruns), 1), "warm_rerun_max_ms": round(max(reruns), 1)}


def main() -> int:
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    # The first page a fresh server process renders also imports torch and the engine, once per process.
    start = time.perf_counter()
    cold = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    cold.run()
    cold.switch_page(PAGES[0].path).run()
    cold_ms = (time.perf_counter() - start) * 1000
    # A class arrives at a server that has been up a while: its default views (ui/defaults.py), begun at
    # start-up in a background thread, are ready. How long they take from a cold start is recorded too.
    from ui.defaults import THREAD

    for thread in threading.enumerate():
        if thread.name == THREAD:
            thread.join()
    defaults_ms = (time.perf_counter() - start) * 1000
    rows = [measure(info) for info in PAGES]  # each in a new session of the now-warm process
    memory = rss_mb()
    with_smollm = smollm_present()
    targets = memory_targets(TARGETS, with_smollm)
    print(f"cold process, home then {PAGES[0].slug} (imports torch and the engine once): {cold_ms:.0f} ms; "
          f"every default view ready after {defaults_ms:.0f} ms")
    print(f"{'page':<20} {'control':<8} {'first ms':>9} {'rerun median':>13} {'rerun max':>10} {'median/target':>14}")
    for r in rows:
        print(f"{r['page']:<20} {r['control']:<8} {r['first_render_ms']:>9.1f} {r['warm_rerun_median_ms']:>13.1f} "
              f"{r['warm_rerun_max_ms']:>10.1f} {r['warm_rerun_median_ms'] / TARGETS['warm_rerun_median_ms']:>14.2f}")
    print(f"resident memory after every page: {memory:.0f} MiB (target {targets['rss_mb']} MiB"
          f"{' with SmolLM2 loaded' if with_smollm else ', SmolLM2 not loaded'})")
    failures = [f"{r['page']} {k} {r[k]} > {TARGETS[k]}" for r in rows for k in ("first_render_ms", "warm_rerun_median_ms")
                if r[k] > TARGETS[k]] + ([f"memory {memory:.0f} MiB"] if memory > targets["rss_mb"] else [])
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count()},
        "versions": {"python": platform.python_version(), "streamlit": version("streamlit"), "torch": version("torch")},
        "method": "streamlit AppTest in one process; first render = a new session's first run of the page "
                  "after the process has imported its libraries (cold_process_ms covers that import) and "
                  "computed its default views in the background (defaults_ready_ms after the start); "
                  f"rerun = the main control moved to a new value, median of {RERUNS}",
        "targets": targets, "smollm_present": with_smollm, "cold_process_ms": round(cold_ms, 1),
        "defaults_ready_ms": round(defaults_ms, 1), "rss_mb": round(memory, 1), "pages": rows,
        "within_targets": not failures,
    }
    return finish("pages", result, failures)


if __name__ == "__main__":
    sys.exit(main())
