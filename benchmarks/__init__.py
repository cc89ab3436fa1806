"""Scripts that print ratios measured in one run and record them in benchmarks/results/<name>.json."""
from __future__ import annotations

import json
from pathlib import Path

from engine.efficiency.records import RESULTS  # where the app reads recorded results

ROOT = Path(__file__).resolve().parents[1]


def write_result(name: str, result: dict) -> None:
    """benchmarks/results/<name>.json, said on the console."""
    out = RESULTS / f"{name}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


def finish(name: str, result: dict, failures: list[str]) -> int:
    """Record result, name each target it missed, and give the exit status: 1 when any was missed."""
    write_result(name, result)
    for failure in failures:
        print("over target:", failure)
    return 1 if failures else 0
