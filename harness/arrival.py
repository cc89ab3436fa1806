"""A class opening the lecturer's link at once: one fresh chromium context per student, each visit timed until
the page's run has finished and drawn, and the exceptions on it (benchmarks.load, tests/e2e/test_class_load.py)."""
from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable

from harness.browser import DRAWN, IDLE, ONE_CYCLE
from ui.boundary import NOTICE

VISIT_S = 180  # the most one visit may take before it counts as failed
# pages with the most figures first: a class opens these at once
HEAVY = ["rope", "smollm", "transformer_lm", "kv_cache", "attention_variants", "decoding_lab", "multi_head",
         "coverage", "sinusoidal", "flash_attention", "word2vec_training"]


async def visit(browser, url: str) -> dict:
    """Open url in a fresh context (its own Streamlit session, no cached assets) and wait until the script
    has finished; report the seconds to idle and the exceptions on the page."""
    context = await browser.new_context(viewport={"width": 1280, "height": 720})
    await context.add_init_script(ONE_CYCLE)  # the server's machine runs every student's browser here
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
