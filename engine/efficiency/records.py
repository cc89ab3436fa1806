"""The recorded results of `python -m benchmarks.flash`: checked against their schema before a page draws them."""
from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from engine.checkpoint_files import ModelFileError, git_restore
from engine.efficiency.sweep import FORWARD, FORWARD_BACKWARD, Point

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"  # written by benchmarks.flash
HEADER = {"date": str, "device": str, "versions": dict, "rows": list}
NUMBER = (int, float)
ROW = {"method": str, "N": int, "d": int, "causal": bool, "dtype": str, "batch": int, "heads": int,
       "ms": NUMBER, "ms_min": NUMBER, "ms_max": NUMBER, "tflops": NUMBER, "peak_mib": NUMBER, "note": str,
       "mode": str}
OPTIONAL = {"ms", "ms_min", "ms_max", "tflops", "peak_mib"}  # null for a refused method
DEFAULTS = {"mode": FORWARD}  # files recorded before the backward was timed hold forward passes only
assert set(ROW) == {f.name for f in fields(Point)}, "the schema must follow the rows sweep.measure writes"


def validate(data: object) -> dict:
    """The results as loaded, or a ValueError naming the first field that does not fit the schema."""
    if not isinstance(data, dict):
        raise ValueError("the results file is not a JSON object")
    for key, kind in HEADER.items():
        if not isinstance(data.get(key), kind):
            raise ValueError(f"the results file has no valid `{key}`")
    if "torch" not in data["versions"]:
        raise ValueError("the results file does not say which torch it ran")
    for i, row in enumerate(data["rows"]):
        if not isinstance(row, dict):
            raise ValueError(f"row {i} is not an object")
        for key, value in DEFAULTS.items():
            row.setdefault(key, value)
        if row["mode"] not in (FORWARD, FORWARD_BACKWARD):
            raise ValueError(f"row {i}: `mode` is {row['mode']!r}")
        for key, kind in ROW.items():
            value = row.get(key)
            if value is None and key in OPTIONAL:
                continue
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(f"row {i}: `{key}` is {value!r}")
    return data


def load_results(path: Path) -> dict | None:
    """None when nothing is recorded yet; ModelFileError, saying how to restore it, when the file is there but
    broken."""
    if not path.exists():
        return None
    restore = f"restore it with `{git_restore(path)}` or rerun `python -m benchmarks.flash`"
    try:
        return validate(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError, ValueError) as error:
        raise ModelFileError(f"{path.name} cannot be read ({error}): {restore}.") from None
