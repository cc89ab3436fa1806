"""The recorded results of `python -m benchmarks.flash`: checked against their schema before a page draws them."""
from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from engine.checkpoint_files import ModelFileError, git_restore
from engine.efficiency.compiled import TARGETS
from engine.efficiency.launches import (
    HOPPER_KERNELS,
    gpu_backward_launch,
    gpu_forward_launch,
    kernel_launch_of,
    kernel_launches,
)
from engine.efficiency.sweep import FORWARD, FORWARD_BACKWARD, Point

HEADER = {"date": str, "device": str, "versions": dict, "rows": list}
NUMBER = (int, float)
ROW = {"method": str, "N": int, "d": int, "causal": bool, "dtype": str, "batch": int, "heads": int,
       "ms": NUMBER, "ms_min": NUMBER, "ms_max": NUMBER, "tflops": NUMBER, "peak_mib": NUMBER, "note": str,
       "mode": str, "error": NUMBER}
# null for a refused method; `error` also in files recorded before every method was checked against SDPA
OPTIONAL = {"ms", "ms_min", "ms_max", "tflops", "peak_mib", "error"}
DEFAULTS = {"mode": FORWARD}  # files recorded before the backward was timed hold forward passes only
assert set(ROW) == {f.name for f in fields(Point)}, "the schema must follow the rows sweep.measure writes"


def _fits(value: object, kind: type | tuple[type, ...]) -> bool:
    """Whether a field's value has its schema's type; a bool is no int here, though Python says it is."""
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _check_header(data: object, header: dict, what: str) -> None:
    """A ValueError unless data is an object with each of header's fields of its type, naming what it is."""
    if not isinstance(data, dict):
        raise ValueError(f"the {what} is not a JSON object")
    for key, kind in header.items():
        if not isinstance(data.get(key), kind):
            raise ValueError(f"the {what} has no valid `{key}`")


def validate(data: object) -> dict:
    """The results as loaded, or a ValueError naming the first field that does not fit the schema."""
    _check_header(data, HEADER, "results file")
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
            if not _fits(value, kind):
                raise ValueError(f"row {i}: `{key}` is {value!r}")
    return data


def _load(path: Path, check: Callable[[object], dict], benchmark: str) -> dict | None:
    """None when nothing is recorded yet; ModelFileError, saying how to restore it or which benchmark writes it,
    when the file is there but broken."""
    if not path.exists():
        return None
    restore = f"restore it with `{git_restore(path)}` or rerun `python -m {benchmark}`"
    try:
        return check(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError, ValueError) as error:
        raise ModelFileError(f"{path.name} cannot be read ({error}): {restore}.") from None


PROBE_HEADER = {"date": str, "device": str, "versions": dict, "rows": list}
FP8_ROW = {"d": int, "causal": bool, "N": int, "tflops": dict, "ms": dict, "error_against_ours_bf16": dict,
           "fp8_over_ours_bf16": NUMBER}
TMA_ROW = {"d": int, "causal": bool, "N": int, "tflops": dict, "refused": dict, "best_tma": str,
           "best_tma_over_pointer": NUMBER}
DIP_ROW = {"d": int, "causal": bool, "dtype": str, "tiled_in_round": bool, "cover_launch": bool,
           "ours_over_sdpa_flash": NUMBER}


def _validator(header: dict, row_schema: dict, what: str) -> Callable[[object], dict]:
    """A check of one GPU probe's record (benchmarks.flash_fp8, flash_tma, flash_dip): the record as loaded, or a
    ValueError naming the first field that does not fit."""
    def validate_probe(data: object) -> dict:
        _check_header(data, header, what)
        for i, row in enumerate(data["rows"]):
            for key, kind in row_schema.items():
                value = row.get(key) if isinstance(row, dict) else None
                if not _fits(value, kind):
                    raise ValueError(f"row {i}: `{key}` is {value!r}")
        return data
    return validate_probe


validate_fp8 = _validator(PROBE_HEADER | {"bound": NUMBER}, FP8_ROW, "FP8 record")
validate_tma = _validator(PROBE_HEADER, TMA_ROW, "TMA record")
validate_dip = _validator(PROBE_HEADER | {"N": int}, DIP_ROW, "dip record")


def load_results(path: Path) -> dict | None:
    """benchmarks.flash's timings (see _load)."""
    return _load(path, validate, "benchmarks.flash")


def kernel_source_hash() -> str:
    """sha256 of our Triton kernels' source (every jitted function of triton_flash, triton_fp8 and triton_tma, in
    order), so that a compile record can say whether it was made from the kernels as they are."""
    from engine.efficiency import triton_flash, triton_fp8, triton_tma

    jitted = [value.fn for module in (triton_flash, triton_fp8, triton_tma) for value in vars(module).values()
              if getattr(getattr(value, "fn", None), "__module__", None) == module.__name__]
    return hashlib.sha256("\n".join(inspect.getsource(fn) for fn in jitted).encode()).hexdigest()


COMPILE_HEADER = {"date": str, "triton": str, "kernel_source_sha256": str, "targets": dict, "rows": list}
COMPILE_ROW = {"kernel": str, "head_dim": int, "dtype": str, "causal": bool, "even": bool, "block_m": int,
               "block_n": int, "num_warps": int, "num_stages": int, "target": str, "error": str, "fits": bool,
               "blocks_per_sm": int}
COMPILE_MEASURED = {"registers": int, "spill_bytes": int, "shared_bytes": int, "tensor_cores": bool}  # null if failed


def validate_compiled(data: object) -> dict:
    """`python -m benchmarks.flash_compile`'s record as loaded, or a ValueError naming the first field that does
    not fit."""
    _check_header(data, COMPILE_HEADER, "compile record")
    for i, row in enumerate(data["rows"]):
        if not isinstance(row, dict):
            raise ValueError(f"row {i} is not an object")
        for key, kind in (COMPILE_ROW | COMPILE_MEASURED).items():
            value = row.get(key)
            if value is None and key in COMPILE_MEASURED and row.get("error"):
                continue
            if not _fits(value, kind):
                raise ValueError(f"row {i}: `{key}` is {value!r}")
        if row["target"] not in TARGETS:
            raise ValueError(f"row {i}: unknown target {row['target']!r}")
    return data


PROBES = {"fp8": validate_fp8, "tma": validate_tma, "dip": validate_dip}


def dip_ratios(record: dict, tiled_in_round: bool, cover_launch: bool) -> list[float]:
    """benchmarks.flash_dip's ours / SDPA flash over every setting and dtype timed with the torch tiled loop in the
    round or not, and the launch covered or not."""
    return [r["ours_over_sdpa_flash"] for r in record["rows"]
            if r["tiled_in_round"] == tiled_in_round and r["cover_launch"] == cover_launch]


def load_probe(path: Path, probe: str) -> dict | None:
    """The record of a GPU probe, benchmarks.flash_<probe> for probe "fp8", "tma" or "dip" (see _load)."""
    return _load(path, PROBES[probe], f"benchmarks.flash_{probe}")


def load_compiled(path: Path) -> dict | None:
    """benchmarks.flash_compile's record (see _load)."""
    return _load(path, validate_compiled, "benchmarks.flash_compile")


def default_launch_rows(record: dict, head_dim: int, causal: bool, dtype: str = "bf16") -> list[dict]:
    """The recorded rows of the launches a GPU run takes when none is asked for, at this head dim and mask, N a
    multiple of the blocks: per target, the forward, then the backward's dK, dV and dQ kernels."""
    wanted = [kernel for launch in (gpu_forward_launch(head_dim), gpu_backward_launch(head_dim))
              for kernel in kernel_launches(launch, head_dim, dtype, causal, True)]
    found = {(r["target"], kernel_launch_of(r)): r for r in record["rows"]}
    return [found[target, launch] for target in TARGETS for launch in wanted if (target, launch) in found]


def hopper_rows(record: dict, head_dim: int, causal: bool, target: str = "H100") -> list[dict]:
    """The recorded rows of the Hopper forwards the GPU probes time (launches.HOPPER_KERNELS) at this head dim and
    mask on `target`, bf16, in the order they were compiled."""
    return [r for r in record["rows"] if r["kernel"] in HOPPER_KERNELS and r["target"] == target
            and r["head_dim"] == head_dim and r["causal"] == causal and r["dtype"] == "bf16"]
