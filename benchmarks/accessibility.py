"""axe-core's WCAG 2.0 and 2.1 A and AA rules (harness.accessibility, shared with the browser tests) on every
page at its defaults in four states (desktop 1400 x 900, lecture mode at 1280 x 720, a phone 320 CSS px wide, and
with a tour's bar), every violation counted by rule and impact, written to
benchmarks/results/accessibility.json. Goal (issue 30): none serious or critical. About 4 minutes on two cores.
Usage: python -m benchmarks.accessibility
"""
from __future__ import annotations

import platform
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

from harness.accessibility import BLOCKING, WCAG_AA, axe_violations

ROOT = Path(__file__).resolve().parents[1]


STATES = {  # name: (viewport, query string added to each page)
    "desktop": ({"width": 1400, "height": 900}, ""),
    "lecture": ({"width": 1280, "height": 720}, "lecture=true"),
    "phone": ({"width": 320, "height": 720}, ""),  # the narrowest phones, and WCAG 1.4.10's reflow width
}
TOUR = "/permutation?tour=positions&stop=1"  # a page with a tour's bar shown (ui/tours.py)


def count(by_state: dict[str, dict[str, list[dict]]]) -> dict:
    """Violations by state, rule and impact, with the pages each was found on."""
    summary = {}
    for state, pages in by_state.items():
        rules: Counter = Counter()
        where: dict[str, list[str]] = {}
        for slug, violations in pages.items():
            for violation in violations:
                key = f"{violation['id']} ({violation['impact']})"
                rules[key] += len(violation["nodes"])
                where.setdefault(key, []).append(slug or "home")
        summary[state] = {"pages": len(pages), "nodes_by_rule": dict(rules.most_common()), "pages_by_rule": where,
                          "blocking_nodes": sum(n for rule, n in rules.items()
                                                if rule.split("(")[1].rstrip(")") in BLOCKING)}
    return summary


def main() -> int:
    from benchmarks import finish
    from harness.browser import chromium, go, new_tab, open_url, wait_for_plots
    from serve.process import Server
    from ui.catalog import BY_SLUG, PAGES

    slugs = ["", "sources", "accessibility"] + [info.slug for info in PAGES]
    found: dict[str, dict[str, list[dict]]] = {}
    started = time.monotonic()
    server = Server(ROOT / "app.py", ROOT)
    try:
        with chromium() as browser:
            for state, (viewport, query) in STATES.items():
                tab = new_tab(browser, server.url, viewport=viewport)
                found[state] = {}
                for i, slug in enumerate(slugs):
                    (open_url if i == 0 else go)(tab, f"/{slug}" + (f"?{query}" if query else ""))
                    if slug in BY_SLUG:  # a built page draws charts
                        wait_for_plots(tab)
                    found[state][slug] = axe_violations(tab)
                print(f"{state}: {len(slugs)} pages, {time.monotonic() - started:.0f} s", flush=True)
                tab.context.close()
            tab = new_tab(browser, server.url)
            open_url(tab, TOUR)
            wait_for_plots(tab)
            found["tour bar"] = {TOUR: axe_violations(tab)}
    finally:
        server.stop()
    summary = count(found)
    for state, seen in summary.items():
        print(f"{state}: {seen['blocking_nodes']} serious or critical nodes; all: {seen['nodes_by_rule'] or 'none'}")
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": platform.platform(),
              "axe_core": "4.12 (axe-playwright-python " + version("axe-playwright-python") + ")",
              "rules": WCAG_AA, "states": {state: {"viewport": STATES.get(state, ({"width": 1400, "height": 900},))[0]}
                                           | seen for state, seen in summary.items()}}
    failures = [f"{state}: {seen['blocking_nodes']} serious or critical nodes"
                for state, seen in summary.items() if seen["blocking_nodes"]]
    return finish("accessibility", result, failures)


if __name__ == "__main__":
    sys.exit(main())
