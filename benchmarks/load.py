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
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import finish, memory_targets, smollm_present  # noqa: E402
from ui.boundary import NOTICE  # noqa: E402
from ui.catalog import PAGES  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
# no sandbox as root, no background traffic to a closed network
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"  # as Streamlit's own e2e tests wait
# Streamlit loads most elements' code on first use (React.lazy) and shows a skeleton meanwhile: a run can have
# finished while a tab's first button is still a skeleton (under load, 3 first visits in 12 of a tour's page)
DRAWN = "() => !document.querySelector(\"[data-testid='stSkeleton']\")"
BOOT_S = 60
VISIT_S = 180  # the most one visit may take before it counts as failed
CLK_TCK = os.sysconf("SC_CLK_TCK")
TARGETS = {"exceptions": 0, "failed_visits": 0, "rss_mb": 1536, "cpu_ratio_median": 2.0, "cpu_ratio_max": 4.0}
# pages with the most figures first: a class opens these at once in the concurrency phase
HEAVY = ["rope", "smollm", "transformer_lm", "kv_cache", "attention_variants", "decoding_lab", "multi_head",
         "coverage", "sinusoidal", "flash_attention", "word2vec_training"]
BARE_APP = '''import streamlit as st
def first():
    st.title("A bare page")
    st.write("Served by the same Streamlit, for comparison.")
def second():
    st.title("Another page")
st.navigation([st.Page(first, title="First", url_path="first", default=True),
               st.Page(second, title="Second", url_path="second")]).run()
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`streamlit run <script>` on a loopback port in its own process group, its log in a file; `launcher` is the
    module run as `python -m` (benchmarks.stamped_server adds the server's clock on each run)."""

    def __init__(self, script: Path, cwd: Path, launcher: str = "streamlit"):
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", launcher, "run", str(script), "--server.port", str(self.port),
             "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + BOOT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    output = self.output()[-3000:]
                    self.stop()
                    raise RuntimeError(f"streamlit did not open port {self.port} within {BOOT_S} s:\n{output}")
                time.sleep(0.3)
        self.url = f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def cpu_s(self) -> float:
        """User plus system CPU of the server process, all its threads, in seconds."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def wait_idle(self, cores: float = 0.05, window_s: float = 3.0, limit_s: float = 600.0) -> float:
        """Wait until the server uses under `cores` over a whole window (its start-up thread has computed the
        default views, ui/defaults.py); the seconds waited."""
        start = time.monotonic()
        while time.monotonic() - start < limit_s:
            before = self.cpu_s()
            time.sleep(window_s)
            if (self.cpu_s() - before) / window_s < cores:
                break
        return time.monotonic() - start

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.log.close()


async def visit(browser, url: str) -> dict:
    """Open url in a fresh context (its own Streamlit session, no cached assets) and wait until the script
    has finished; report the seconds to idle and the exceptions on the page."""
    context = await browser.new_context(viewport={"width": 1280, "height": 720})
    tab = await context.new_page()
    start = time.perf_counter()
    try:
        await tab.goto(url, timeout=VISIT_S * 1000)
        await tab.locator("[data-testid='stMainBlockContainer'] [data-testid='stHeading']").first.wait_for(
            timeout=VISIT_S * 1000)
        await tab.wait_for_selector(IDLE, timeout=VISIT_S * 1000)
        await tab.wait_for_timeout(300)  # the state can flip back briefly once the page asks for a rerun
        await tab.wait_for_selector(IDLE, timeout=VISIT_S * 1000)
        await tab.wait_for_function(DRAWN, timeout=VISIT_S * 1000)
        seconds = time.perf_counter() - start
        exceptions = (await tab.locator("[data-testid='stException']").all_inner_texts()
                      + await tab.get_by_text(NOTICE).all_inner_texts())  # the ones the page's boundary caught
        return {"seconds": seconds, "exceptions": exceptions, "failed": None}
    except Exception as error:  # a timeout or a closed page: the visit failed, the run goes on
        return {"seconds": time.perf_counter() - start, "exceptions": [], "failed": str(error).splitlines()[0]}
    finally:
        await context.close()


async def class_arrives(browser, url: str, slugs: list[str], rss_mb: Callable[[], float] = lambda: 0.0) -> dict:
    """One browser session per slug, all at once, on the server at url; its peak RSS meanwhile, by rss_mb."""
    peak = {"rss_mb": 0.0}

    async def sample_memory() -> None:
        while True:
            peak["rss_mb"] = max(peak["rss_mb"], rss_mb())
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(sample_memory())
    results = await asyncio.gather(*(visit(browser, f"{url}/{slug}") for slug in slugs))
    sampler.cancel()
    visits = [{"page": slug, **result} for slug, result in zip(slugs, results)]
    times = sorted(v["seconds"] for v in visits if not v["failed"])
    return {
        "sessions": len(slugs), "visits": visits,
        "exceptions": sum(len(v["exceptions"]) for v in visits),
        "failed_visits": sum(1 for v in visits if v["failed"]),
        "p50_s": round(statistics.median(times), 2) if times else None,
        "p95_s": round(times[min(len(times) - 1, round(0.95 * (len(times) - 1)))], 2) if times else None,
        "peak_rss_mb": round(peak["rss_mb"], 1),
    }


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
