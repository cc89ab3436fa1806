"""A class opening the lecturer's link: N browser sessions at once against a cold server, then what one warm
visit of each page costs the server's CPU next to a bare two-page Streamlit app served the same way.

Both servers listen on loopback only and are killed at the end; every wait is bounded. Needs Debian's
chromium and the dev requirements (playwright). Targets (issue 15): zero exceptions and failed visits with
10 sessions, server RSS <= 1.5 GB (2 GB with SmolLM2 loaded, issue 13), CPU per warm visit <= 2x the bare
page (median over pages), no page over 4x.
Usage: python -m benchmarks.load [--sessions 10] [--visits 3] [--pages rope,kv_cache]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

from benchmarks import finish, memory_targets, smollm_present
from harness.arrival import HEAVY, class_arrives, visit
from harness.browser import CHROMIUM, CHROMIUM_ARGS
from serve.process import Server
from ui.catalog import PAGES

ROOT = Path(__file__).resolve().parents[1]

TARGETS = {"exceptions": 0, "failed_visits": 0, "rss_mb": 1536, "cpu_ratio_median": 2.0, "cpu_ratio_max": 4.0}
BARE_APP = '''import streamlit as st
def first():
    st.title("A bare page")
    st.write("Served by the same Streamlit, for comparison.")
def second():
    st.title("Another page")
st.navigation([st.Page(first, title="First", url_path="first", default=True),
               st.Page(second, title="Second", url_path="second")]).run()
'''


async def cpu_per_visit(browser, server: Server, path: str, visits: int) -> dict:
    """Server CPU of one visit, median of `visits` after a first one that fills the page's caches."""
    await visit(browser, f"{server.url}/{path}")
    costs, problems = [], 0
    for _ in range(visits):
        await asyncio.sleep(0.5)  # let the last visit's closed session wind down on the server
        before = server.cpu_s()
        result = await visit(browser, f"{server.url}/{path}")
        await asyncio.sleep(0.5)
        costs.append(server.cpu_s() - before)
        problems += len(result["exceptions"]) + bool(result["failed"])
    return {"cpu_ms": round(1000 * statistics.median(costs), 1), "cpu_ms_max": round(1000 * max(costs), 1),
            "problems": problems}


async def measure(sessions: int, visits: int, slugs: list[str]) -> tuple[dict, list[dict], float]:
    from playwright.async_api import async_playwright

    app = Server(ROOT / "app.py", ROOT)
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            arrival = await class_arrives(browser, app.url, [HEAVY[i % len(HEAVY)] for i in range(sessions)],
                                          app.rss_mb)
            print(f"{sessions} sessions at once on a cold server: {arrival['exceptions']} exceptions, "
                  f"{arrival['failed_visits']} failed visits, time to idle p50 {arrival['p50_s']} s, "
                  f"p95 {arrival['p95_s']} s, peak RSS {arrival['peak_rss_mb']:.0f} MiB")
            for v in arrival["visits"]:
                if v["exceptions"] or v["failed"]:
                    print(f"  {v['page']}: {v['failed'] or v['exceptions'][0][:300]}")
            with tempfile.TemporaryDirectory() as bare_dir:
                (Path(bare_dir) / "bare.py").write_text(BARE_APP)
                bare = Server(Path(bare_dir) / "bare.py", Path(bare_dir))
                try:
                    rows = []
                    for slug in slugs:
                        # the bare page beside each of ours, so drift in the machine's load touches both alike
                        base = await cpu_per_visit(browser, bare, "first", visits)
                        ours = await cpu_per_visit(browser, app, slug, visits)
                        rows.append({"page": slug, **ours, "bare_cpu_ms": base["cpu_ms"],
                                     "ratio": round(ours["cpu_ms"] / max(base["cpu_ms"], 1.0), 2)})
                        print(f"{slug:<22} {ours['cpu_ms']:>7.0f} ms CPU per warm visit, bare page "
                              f"{base['cpu_ms']:>5.0f} ms, ratio {rows[-1]['ratio']:>5.2f}"
                              + (f"  ({ours['problems']} problems)" if ours["problems"] else ""))
                finally:
                    bare.stop()
            await browser.close()
        return arrival, rows, app.rss_mb()
    finally:
        app.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10, help="browser sessions at once (at most 16)")
    parser.add_argument("--visits", type=int, default=3, help="measured warm visits per page (at most 10)")
    parser.add_argument("--pages", default="", help="comma-separated slugs for the CPU phase (default: all)")
    args = parser.parse_args()
    sessions, visits = min(max(args.sessions, 1), 16), min(max(args.visits, 1), 10)
    slugs = [s for s in args.pages.split(",") if s] or [info.slug for info in PAGES]
    arrival, rows, rss = asyncio.run(measure(sessions, visits, slugs))
    ratios = [r["ratio"] for r in rows]
    summary = {"cpu_ratio_median": round(statistics.median(ratios), 2), "cpu_ratio_max": max(ratios),
               "rss_mb_after": round(rss, 1)}
    print(f"CPU per warm visit against the bare page: median ratio {summary['cpu_ratio_median']}, "
          f"max {summary['cpu_ratio_max']} ({rows[ratios.index(max(ratios))]['page']}); RSS after {rss:.0f} MiB")
    with_smollm = smollm_present()
    targets = memory_targets(TARGETS, with_smollm)
    failures = [name for name, value, limit in [
        ("exceptions", arrival["exceptions"], TARGETS["exceptions"]),
        ("failed visits", arrival["failed_visits"], TARGETS["failed_visits"]),
        ("peak RSS MiB", arrival["peak_rss_mb"], targets["rss_mb"]),
        ("median CPU ratio", summary["cpu_ratio_median"], TARGETS["cpu_ratio_median"]),
        ("max CPU ratio", summary["cpu_ratio_max"], TARGETS["cpu_ratio_max"])] if value > limit]
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "versions": {"python": platform.python_version(), "streamlit": version("streamlit"),
                     "torch": version("torch"), "chromium": CHROMIUM},
        "method": f"{sessions} sessions (contexts of one headless chromium) open at once on a cold "
                  "`streamlit run app.py` (loopback), "
                  "one page each from the heaviest; then, per page, server CPU (utime+stime of its process) per "
                  f"visit in a fresh browser context until the script is idle, median of {visits} after one "
                  "warm-up visit, beside a bare two-page Streamlit app measured the same way in turn",
        "targets": targets, "smollm_present": with_smollm, "arrival": arrival, "summary": summary, "pages": rows,
        "within_targets": not failures,
    }
    return finish("load", result, failures)


if __name__ == "__main__":
    sys.exit(main())
