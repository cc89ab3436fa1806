"""Our Triton kernels compiled for the H100 (sm_90) and the A100 (sm_80) without a GPU, and the record of it.

Compiling every launch the GPU benchmark and its Hopper probes can make takes about 750 compiles of 1-4 s each, too
long for the suite: `python -m benchmarks.flash_compile` does it and records the results with the kernels' source hash.
Here the record is checked to be current and complete (every launch compiled, for both targets), a sample is
compiled again and must give the recorded numbers, and occupancy is checked by hand.
"""
import json
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version

import pytest

import torch

from benchmarks import RESULTS, flash, flash_fp8, flash_tma
from engine.efficiency import compiled, records
from engine.efficiency.compiled import Compiled
from engine.efficiency.launches import (
    HOPPER_KERNELS,
    KERNELS,
    BackwardLaunch,
    ForwardLaunch,
    KernelLaunch,
    gpu_backward_launch,
    gpu_forward_launch,
    kernel_launch_of,
    kernel_launches,
)

RECORD = RESULTS / "flash_compile.json"


def installed_triton() -> str | None:
    try:
        return version("triton")
    except PackageNotFoundError:
        return None


needs_triton = pytest.mark.skipif(installed_triton() is None, reason="triton is not installed (requirements-dev)")


@pytest.fixture(scope="module")
def record() -> dict:
    return records.load_compiled(RECORD)


def test_occupancy_by_hand():
    launch = KernelLaunch("forward", 64, "bf16", False, True, 128, 64, 4, 3)
    # 128 registers × 32 lanes = 4096 per warp; 4 warps: 16 Ki registers, so 4 blocks by registers, 3 by shared
    # memory (228 KiB / (64 + 1) KiB) and 16 by threads (2048 / 128)
    assert Compiled(launch, "H100", 128, 0, 64 * 1024, True).blocks_per_sm() == 3
    assert Compiled(launch, "H100", 128, 0, 16 * 1024, True).blocks_per_sm() == 4
    # 255 registers round up to 256 per lane, 8 Ki per warp: one block of 8 warps fills the register file
    wide = KernelLaunch("forward", 128, "bf16", False, True, 128, 64, 8, 3)
    assert Compiled(wide, "A100", 255, 0, 16 * 1024, True).blocks_per_sm() == 1
    spilling, too_big = Compiled(launch, "H100", 255, 8, 1024, True), Compiled(launch, "A100", 64, 0, 164 * 1024, True)
    assert not spilling.fits and spilling.blocks_per_sm() == 2, "it runs, with registers spilled to local memory"
    assert not too_big.fits and too_big.blocks_per_sm() == 0, "more than the A100's 163 KiB a block may have"
    failed = Compiled(launch, "H100", error="does not compile")
    assert not failed.fits and failed.blocks_per_sm() == 0


@needs_triton
def test_the_record_is_of_these_kernels_and_this_triton(record):
    assert record is not None, "run python -m benchmarks.flash_compile"
    assert record["kernel_source_sha256"] == records.kernel_source_hash(), (
        "the kernels changed since they were compiled: rerun python -m benchmarks.flash_compile")
    assert record["triton"] == installed_triton()
    assert record["targets"] == {key: vars(target) for key, target in compiled.TARGETS.items()}


def test_every_launch_the_gpu_benchmark_can_make_compiled_for_both_targets(record):
    recorded = {(kernel_launch_of(r), r["target"]): r for r in record["rows"]}
    wanted = {(launch, target) for launch in flash.launches() for target in compiled.TARGETS}
    assert len(wanted) == 2 * 2 * 2 * 2 * 2 * (len(flash.KERNEL_CONFIGS) + 2 * len(flash.BACKWARD_CONFIGS))
    assert wanted <= set(recorded)
    failed = [key for key in wanted if recorded[key]["error"]]
    assert not failed, failed[:3]
    assert all(recorded[key]["tensor_cores"] for key in wanted), "wgmma on sm_90 and mma.sync on sm_80 everywhere"


def test_every_hopper_forward_the_probes_time_is_recorded_and_compiles_for_the_h100(record):
    """The TMA, persistent and FP8 forwards of benchmarks.flash_tma and flash_fp8: all compile for sm_90 with wgmma;
    on the A100 the e4m3 ones cannot (Ampere has no FP8 tensor cores), and the record says so."""
    recorded = {(kernel_launch_of(r), r["target"]): r for r in record["rows"]}
    hopper = flash_tma.hopper_launches() + flash_fp8.hopper_launches()
    assert set(recorded) == {(launch, target) for launch in flash.launches() + hopper for target in compiled.TARGETS}
    assert {launch.kernel for launch in hopper} == set(HOPPER_KERNELS)
    for launch in hopper:
        h100, a100 = recorded[launch, "H100"], recorded[launch, "A100"]
        assert not h100["error"] and h100["tensor_cores"], (launch, h100["error"])
        if launch.kernel.startswith("FP8"):
            assert "fp8e4nv not supported" in a100["error"] and not a100["fits"]


def test_the_probes_drop_what_the_record_says_does_not_fit_before_timing():
    """A persistent (128, 128) TMA forward on 3 stages at d = 128 keeps an output tile beside Q and three stages of K
    and V: over the 227 KiB a block may have on the H100, so no block fits an SM and the TMA probe refuses it
    untimed; on 2 stages it fits, one block an SM; at d = 64 a persistent launch starts as many as an SM holds."""
    record = records.load_compiled(RECORD)
    unfit = {flash.unfit_key(kernel_launch_of(r)): "does not fit" for r in record["rows"]
             if r["target"] == "H100" and not r["blocks_per_sm"]}
    resident = {flash.unfit_key(kernel_launch_of(r)): r["blocks_per_sm"] for r in record["rows"]
                if r["target"] == "H100"}
    Q = torch.zeros(1, 1, 128, 128)
    calls, launches, dropped = flash_tma.tma_calls(Q, Q, Q, False, unfit, resident)
    three, two = ForwardLaunch(128, 128, 8, 3), ForwardLaunch(128, 128, 8, 2)
    assert dropped[flash_tma.tma_name(three, ", persistent")] == "dropped before timing: does not fit"
    assert flash_tma.tma_name(three, ", persistent") not in calls
    assert flash_tma.tma_name(two, ", persistent") in calls
    assert launches[flash_tma.tma_name(two, ", persistent")] == vars(two) | {"programs_per_sm": 1}, \
        "one block of 192 KiB a SM"
    assert launches[flash_tma.tma_name(three, "")] == vars(three) and flash_tma.tma_name(three, "") in calls
    _, d64, _ = flash_tma.tma_calls(Q[..., :64], Q[..., :64], Q[..., :64], True, unfit, resident)
    assert d64[flash_tma.tma_name(ForwardLaunch(128, 64, 4, 3), ", persistent")]["programs_per_sm"] >= 2, \
        "80 KiB of shared memory a block: two or more an SM"


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", flash.HEAD_DIMS)
def test_the_default_launches_spill_nothing_on_the_h100(record, head_dim, causal):
    rows = records.default_launch_rows(record, head_dim, causal)
    assert [r["kernel"] for r in rows if r["target"] == "H100"] == list(KERNELS)
    for r in rows:
        if r["target"] == "H100":
            assert r["spill_bytes"] == 0 and r["fits"] and r["blocks_per_sm"] >= 1, r


@needs_triton
def test_a_sample_compiles_again_to_the_recorded_numbers(record):
    sample = [launch for d in flash.HEAD_DIMS for launch in kernel_launches(
        gpu_forward_launch(d), d, "bf16", False, True)]
    sample += kernel_launches(gpu_backward_launch(128), 128, "fp16", True, False)
    sample += [flash_tma.hopper_launches()[-1], flash_fp8.hopper_launches()[-1]]  # persistent: TMA and FP8
    recorded = {(kernel_launch_of(r), r["target"]): r for r in record["rows"]}
    for result in compiled.compile_launches(sample, list(compiled.TARGETS), workers=1):
        row = recorded[result.launch, result.target]
        assert result.as_row() == row, result.launch


def test_launches_that_do_not_fit_are_dropped_before_timing(tmp_path, monkeypatch, capsys):
    fits = dict(head_dim=64, dtype="bf16", causal=False, even=True, target="H100", error="", registers=128,
                spill_bytes=0, shared_bytes=1024, tensor_cores=True, fits=True, blocks_per_sm=4)
    rows = [fits | dict(kernel="forward", block_m=128, block_n=64, num_warps=4, num_stages=3),
            fits | dict(kernel="forward", block_m=64, block_n=64, num_warps=4, num_stages=2, dtype="fp16",
                        even=False, spill_bytes=32, fits=False, blocks_per_sm=2),
            fits | dict(kernel="backward dQ", block_m=128, block_n=32, num_warps=8, num_stages=3,
                        shared_bytes=240 * 1024, fits=False, blocks_per_sm=0)]
    data = {"date": "2026-11-26", "triton": "3.9.0", "kernel_source_sha256": "x", "targets": {}, "rows": rows}
    (tmp_path / "flash_compile.json").write_text(json.dumps(data))
    monkeypatch.setattr(flash, "RESULTS", tmp_path)
    unfit = flash.unfit_launches("H100")
    assert unfit == {("forward", 64, False, 64, 64, 4, 2): "spills 32 B per thread",
                     ("backward dQ", 64, False, 128, 32, 8, 3): "needs 240 KiB of shared memory per block"}
    assert flash.unfit_launches("A100") == {}
    assert flash.unfit_launches("H100", spilling=False) == {
        ("backward dQ", 64, False, 128, 32, 8, 3): "needs 240 KiB of shared memory per block"}, "a spill still runs"
    tried = []
    monkeypatch.setattr(flash, "tune", lambda d, causal, dtype, mode, configs, forward=None: tried.append(configs))
    flash.tuned_configs(64, False, unfit)
    forward, backward = tried
    assert ForwardLaunch(block_m=64, block_n=64, num_warps=4, num_stages=2) not in forward
    assert len(forward) == len(flash.KERNEL_CONFIGS) - 1
    assert [c for c in flash.BACKWARD_CONFIGS if c not in backward] == [
        c for c in flash.BACKWARD_CONFIGS if (c.block_m2, c.block_n2, c.num_warps) == (128, 32, 8)]
    assert "dropped before timing" in capsys.readouterr().out
    assert flash.compiler_target("NVIDIA H200") == "H100" and flash.compiler_target("NVIDIA L4") is None


def test_a_recorded_launch_reads_back_as_the_launch_it_was():
    """Launches are data with named fields: the GPU run's tuned configurations (flash_gpu.json, written with asdict)
    read back by name, whatever their order, and a field of 1 is kept, never dropped as falsy or taken by position."""
    for launch in flash.KERNEL_CONFIGS + flash.BACKWARD_CONFIGS:
        assert type(launch)(**json.loads(json.dumps(asdict(launch)))) == launch
    for configs in records.load_results(RESULTS / "flash_gpu.json")["kernel_configs"].values():
        assert ForwardLaunch(**configs["forward"]) in flash.KERNEL_CONFIGS  # the tuning chose among these
        assert BackwardLaunch(**configs["backward"]) in flash.BACKWARD_CONFIGS
    one_stage = ForwardLaunch(**{"num_stages": 1, "num_warps": 4, "block_n": 16, "block_m": 16})
    assert (one_stage.block_m, one_stage.num_stages) == (16, 1)
    assert kernel_launches(one_stage, 64, "bf16", False, True)[0].num_stages == 1
