"""The README's memory figures for a hosted server are the ones the benchmarks recorded (issue 44: they had gone
stale), read from benchmarks/results as the README cites them."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = " ".join((ROOT / "README.md").read_text().split())  # its lines joined, as it reads
RESULTS = ROOT / "benchmarks" / "results"


def test_the_servers_resident_set_is_quoted_from_the_results_files():
    load = json.loads((RESULTS / "load.json").read_text())
    classes = json.loads((RESULTS / "class_size.json").read_text())["classes"]
    peak, after = load["arrival"]["peak_rss_mb"], load["summary"]["rss_mb_after"]
    assert load["smollm_present"] and f"peaked at {peak:,.0f} MiB with {load['arrival']['sessions']} sessions" in README
    assert f"was {after:,.0f} MiB after every page had been visited" in README
    smallest, largest = classes[0], classes[-1]
    assert (f"{smallest['server']['rss_mb_max']:,.0f} MiB with {smallest['students']} students and "
            f"{largest['server']['rss_mb_max']:,.0f} MiB with {largest['students']}") in README
