"""What one control change costs, control by control on every page: the bytes the server sends for it and the
server's CPU for it (issue 47, "send less": measure the bytes per change).

One visitor on a warm, idle `streamlit run app.py`: for each page of ui.catalog it opens the page's default view,
then sets each slider, select box and toggle in turn to another valid value drawn as the class simulator draws
them (benchmarks.class_size.another_value, seeded), as one student would, each change kept. A change the server
has not computed before is what a class's random settings mostly ask for, so these are first-time costs.

Usage: python -m benchmarks.per_change [--pages slug,slug] [--seed 0]
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
from datetime import datetime, timezone
from importlib.metadata import version

from benchmarks import ROOT, write_result
from benchmarks.class_size import SKIPPED_KEYS, another_value
from benchmarks.protocol import RunFailed, Session
from serve.process import Server
from ui.catalog import PAGES

RUN_S = 120  # a change that takes longer never finished
HEAVIEST = 10  # the changes listed by bytes and by CPU


def measure_page(server: Server, slug: str, rng: random.Random) -> list[dict]:
    """Each control of the page's default view changed once, in a shuffled order: its bytes and CPU."""
    session = Session(server.url, timeout_s=RUN_S)
    try:
        session.open(slug)
        keys = [key for key, widget in session.widgets.items() if key not in SKIPPED_KEYS]
        rng.shuffle(keys)
        changes = []
        for key in keys:
            widget = session.widgets.get(key)  # an earlier change may have taken it off the page
            value = another_value(widget, session.query.get(key), rng) if widget is not None else None
            if value is None:
                continue
            before = server.cpu_s()
            try:
                run = session.change(key, value)
            except RunFailed as failure:
                changes.append({"page": slug, "control": key, "kind": widget.kind, "value": str(value),
                                "failed": str(failure)})
                break
            changes.append({"page": slug, "control": key, "kind": widget.kind, "value": str(value),
                            "fragment": bool(widget.fragment_id), "bytes": run.received_bytes,
                            "cpu_ms": round(1000 * (server.cpu_s() - before), 1), "seconds": round(run.seconds, 3),
                            "exceptions": len(run.exceptions)})
        return changes
    finally:
        session.close()


def summary(changes: list[dict]) -> dict:
    done = [c for c in changes if "bytes" in c]
    by_page = {}
    for c in done:
        by_page.setdefault(c["page"], []).append(c)
    return {
        "changes": len(done), "failed": len(changes) - len(done), "exceptions": sum(c["exceptions"] for c in done),
        "median_bytes": statistics.median(c["bytes"] for c in done),
        "mean_bytes": round(statistics.mean(c["bytes"] for c in done)),
        "median_cpu_ms": statistics.median(c["cpu_ms"] for c in done),
        "mean_cpu_ms": round(statistics.mean(c["cpu_ms"] for c in done), 1),
        "pages": {page: {"changes": len(rows), "median_bytes": statistics.median(r["bytes"] for r in rows),
                         "max_bytes": max(r["bytes"] for r in rows),
                         "median_cpu_ms": statistics.median(r["cpu_ms"] for r in rows),
                         "max_cpu_ms": max(r["cpu_ms"] for r in rows)} for page, rows in by_page.items()},
        "most_bytes": sorted(done, key=lambda c: -c["bytes"])[:HEAVIEST],
        "most_cpu": sorted(done, key=lambda c: -c["cpu_ms"])[:HEAVIEST],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default="", help="comma-separated slugs (default: every page)")
    parser.add_argument("--seed", type=int, default=0, help="the values drawn for the controls")
    args = parser.parse_args()
    slugs = args.pages.split(",") if args.pages else [info.slug for info in PAGES]
    rng = random.Random(args.seed)
    server = Server(ROOT / "app.py", ROOT)
    try:
        Session(server.url, timeout_s=600).open("")  # the start-up work begins with the first session
        waited = server.wait_idle()
        print(f"server idle after {waited:.0f} s of start-up work")
        changes = []
        for slug in slugs:
            page_changes = measure_page(server, slug, rng)
            changes += page_changes
            done = [c for c in page_changes if "bytes" in c]
            sent, cpu = [c["bytes"] for c in done], [c["cpu_ms"] for c in done]
            if sent:
                print(f"{slug:22s} {len(sent):2d} changes: bytes median {statistics.median(sent):>10,.0f} max "
                      f"{max(sent):>11,}; CPU ms median {statistics.median(cpu):7.1f} max {max(cpu):7.1f}")
    finally:
        server.stop()
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": "one visitor on a warm, idle `streamlit run app.py` (after its start-up work): every page's "
                  "default view opened, then each slider, select box and toggle set once, in a shuffled order, to "
                  f"another random valid value (seed {args.seed}, as benchmarks.class_size draws them), each change "
                  "kept; per change the bytes of the server's messages until script_finished and the server "
                  "process's CPU (user + system, in clock ticks of 10 ms) from sending the change to its end, and the "
                  "seconds from sending it to script_finished",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "versions": {"python": sys.version.split()[0], "streamlit": version("streamlit"), "torch": version("torch"),
                     "plotly": version("plotly")},
        "summary": summary(changes),
        "changes": changes,
    }
    s = result["summary"]
    print(f"{s['changes']} changes, {s['failed']} failed, {s['exceptions']} with an exception; bytes median "
          f"{s['median_bytes']:,.0f}, mean {s['mean_bytes']:,}; CPU median {s['median_cpu_ms']} ms, "
          f"mean {s['mean_cpu_ms']} ms")
    write_result("per_change", result)
    return 1 if s["failed"] or s["exceptions"] else 0


if __name__ == "__main__":
    sys.exit(main())
