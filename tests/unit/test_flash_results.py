"""The timing sweep's rows, its refusals, and the schema of the recorded results files."""
import functools
import json

import pytest
import torch

from benchmarks import RESULTS, flash
from engine.checkpoint_files import ModelFileError
from engine.efficiency import records, sweep
from engine.efficiency.flash import naive_attention
from engine.efficiency.measure import peak_memory


def test_sweep_measures_every_method_and_refuses_naive_past_its_budget():
    chosen = [sweep.NAIVE, sweep.TILED, sweep.SDPA, sweep.TRITON]
    points = {p.method: p for p in sweep.measure(256, 16, True, chosen, block=64, repeats=2)}
    assert set(points) == set(chosen)
    for name in (sweep.NAIVE, sweep.TILED, sweep.SDPA):
        p = points[name]
        assert p.ms_min <= p.ms <= p.ms_max and p.peak_mib > 0
        assert p.tflops == pytest.approx(sweep.attention_flops(1, 1, 256, 16, True) / (p.ms / 1e3) / 1e12)
    assert points[sweep.TRITON].ms is None and "not available" in points[sweep.TRITON].note  # no GPU here
    assert points[sweep.NAIVE].peak_mib > points[sweep.TILED].peak_mib
    budget = sweep.naive_bytes(1, 1, 256) - 1
    refused = {p.method: p for p in sweep.measure(256, 16, False, [sweep.NAIVE, sweep.TILED], naive_budget=budget)}
    assert refused[sweep.NAIVE].ms is None and "needs 512.0 KiB" in refused[sweep.NAIVE].note
    assert "more than the" in refused[sweep.NAIVE].note and refused[sweep.TILED].ms is not None


def test_a_forward_and_backward_pass_is_timed_with_its_gradients():
    chosen = [sweep.NAIVE, sweep.TILED, sweep.SDPA]
    forward = {p.method: p for p in sweep.measure(128, 16, True, chosen, block=32, repeats=1)}
    both = {p.method: p for p in sweep.measure(128, 16, True, chosen, block=32, repeats=1, mode=sweep.FORWARD_BACKWARD)}
    flops = 3.5 * sweep.attention_flops(1, 1, 128, 16, True)
    for name in chosen:
        p = both[name]
        assert p.mode == sweep.FORWARD_BACKWARD and forward[name].mode == sweep.FORWARD
        assert p.tflops == pytest.approx(flops / (p.ms / 1e3) / 1e12)
        assert p.peak_mib > forward[name].peak_mib, name  # dQ, dK, dV and what autograd keeps for them


def test_a_kernel_that_disagrees_with_sdpa_is_refused_before_it_is_timed(monkeypatch):
    real = sweep.methods
    monkeypatch.setattr(sweep, "methods", lambda *args: real(*args) | {
        sweep.TRITON: lambda Q, K, V, causal: 1.05 * naive_attention(Q, K, V, causal)})
    for mode in (sweep.FORWARD, sweep.FORWARD_BACKWARD):
        refused = {p.method: p for p in sweep.measure(64, 16, False, [sweep.TRITON, sweep.TILED], block=32,
                                                       repeats=1, mode=mode)}
        assert refused[sweep.TRITON].ms is None and "disagrees with torch SDPA" in refused[sweep.TRITON].note
        assert refused[sweep.TILED].ms is not None
    monkeypatch.setattr(sweep, "methods", lambda *args: real(*args) | {
        sweep.TRITON: lambda Q, K, V, causal: 1.001 * naive_attention(Q, K, V, causal)})
    assert sweep.measure(64, 16, False, [sweep.TRITON], block=32, repeats=1)[0].ms is not None


@pytest.mark.parametrize("device_name,peak", [
    ("NVIDIA H100 80GB HBM3", 989.4), ("NVIDIA H200", 989.4), ("NVIDIA H100 PCIe", 756.0),
    ("NVIDIA H100 NVL", 835.5), ("NVIDIA H200 NVL", 835.5), ("NVIDIA A100-SXM4-80GB", None),
])
def test_each_gpu_gets_its_own_dense_bf16_peak(device_name, peak):
    """The NVL cards contain the SXM parts' names: each is found before them (issue 44)."""
    assert flash.dense_bf16_peak(device_name) == peak


def test_flops_and_naive_memory_by_hand():
    assert sweep.attention_flops(2, 3, 10, 4, False) == 4 * 2 * 3 * 100 * 4
    assert sweep.attention_flops(2, 3, 10, 4, True) == 2 * 2 * 3 * 100 * 4
    assert sweep.naive_bytes(1, 2, 100) == 2 * 100 * 100 * 8  # float32 S and P
    assert sweep.naive_bytes(1, 1, 100, torch.bfloat16) == 100 * 100 * (4 + 4 + 2)  # S, P in float32, P cast
    assert sweep.naive_bytes(1, 2, 100, causal=True) == 2 * 100 * 100 * 8 + 100 * 100  # and one (N, N) bool mask


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("causal", [False, True])
def test_the_naive_estimate_is_the_measured_peak_up_to_the_output(dtype, causal):
    B, H, d = 1, 3, 16
    for N in (128, 384):  # the estimate's N² terms must match at both sizes; only O(N) terms may differ
        Q, K, V = (torch.randn(B, H, N, d, dtype=dtype) for _ in range(3))
        measured = peak_memory(lambda: naive_attention(Q, K, V, causal))
        output = B * H * N * d * torch.promote_types(dtype, torch.float32).itemsize  # O, alive at the end
        assert 0 <= measured - sweep.naive_bytes(B, H, N, dtype, causal) <= output, N


def test_sweep_rows_fit_the_schema_and_round_trip_through_json(tmp_path):
    rows = sweep.as_rows(sweep.measure(128, 16, False, [sweep.TILED, sweep.TRITON], block=32, repeats=1))
    data = {"date": "2026-11-23T00:00:00+00:00", "device": "test", "versions": {"torch": "x"}, "rows": rows}
    path = tmp_path / "flash_gpu.json"
    path.write_text(json.dumps(data))
    assert records.load_results(path) == data
    assert records.load_results(tmp_path / "missing.json") is None
    for row in data["rows"]:
        del row["mode"]  # as recorded before the backward was timed
    path.write_text(json.dumps(data))
    assert {row["mode"] for row in records.load_results(path)["rows"]} == {sweep.FORWARD}


def test_the_recorded_results_files_fit_the_schema():
    for path in (RESULTS / "flash_cpu.json", RESULTS / "flash_gpu.json"):
        data = records.load_results(path)
        assert data["rows"], path
        assert {row["method"] for row in data["rows"]} >= {sweep.TILED}
    for probe in records.PROBES:
        assert records.load_probe(RESULTS / f"flash_{probe}.json", probe)["rows"], probe


COMPILE_HEADER = '"date": "x", "triton": "3.9.0", "kernel_source_sha256": "y", "targets": {}'


@pytest.mark.parametrize("load,writer,broken,field", [
    (records.load_results, "flash", "[1, 2]", "not a JSON object"),
    (records.load_results, "flash", '{"date": "x", "device": "d", "versions": {"torch": "1"}}', "`rows`"),
    (records.load_results, "flash", '{"date": "x", "device": "d", "versions": {}, "rows": []}', "which torch"),
    (records.load_results, "flash",
     '{"date": "x", "device": "d", "versions": {"torch": "1"}, "rows": [{"method": "m", "N": "4096"}]}', "`N`"),
    (records.load_results, "flash", '{"date": 1', "cannot be read"),
    (records.load_results, "flash",
     '{"date": "x", "device": "d", "versions": {"torch": "1"}, "rows": [{"mode": "sideways"}]}', "`mode`"),
    (records.load_compiled, "flash_compile", "[1]", "not a JSON object"),
    (records.load_compiled, "flash_compile", "{" + COMPILE_HEADER + "}", "`rows`"),
    (records.load_compiled, "flash_compile", "{" + COMPILE_HEADER + ', "rows": [{"kernel": 1}]}', "`kernel`"),
    (records.load_compiled, "flash_compile", '{"date": 1', "cannot be read"),
    (functools.partial(records.load_probe, probe="fp8"), "flash_fp8", "[]", "not a JSON object"),
    (functools.partial(records.load_probe, probe="fp8"), "flash_fp8",
     '{"date": "x", "device": "d", "versions": {}, "rows": []}', "`bound`"),
    (functools.partial(records.load_probe, probe="tma"), "flash_tma",
     '{"date": "x", "device": "d", "versions": {}, "rows": [{"d": 64}]}', "`causal`"),
    (functools.partial(records.load_probe, probe="dip"), "flash_dip",
     '{"date": "x", "device": "d", "versions": {}, "rows": []}', "`N`"),
])
def test_a_broken_results_file_is_named(tmp_path, load, writer, broken, field):
    path = tmp_path / "results.json"
    path.write_text(broken)
    with pytest.raises(ModelFileError, match=field) as refused:
        load(path)
    assert f"python -m benchmarks.{writer}`" in str(refused.value)


def test_the_tma_probe_defaults_to_the_fastest_forward_over_every_length_it_timed():
    """Geometric mean over N: a forward fastest at one length but slower overall loses, and one refused at a length
    is not chosen however fast it ran at the others."""
    from benchmarks.flash_tma import CUDNN, OURS, defaults

    fast_once, steady, refused_once = "ours, TMA (a)", "ours, TMA (b, persistent, warp-specialized)", "ours, TMA (c)"
    launches = {OURS: {"block_m": 128}, fast_once: {"block_m": 64}, steady: {"block_m": 32, "programs_per_sm": 2},
                refused_once: {}}
    rows = [{"d": 64, "causal": True, "dtype": "fp16", "N": N, "launches": launches, "tflops": tflops}
            for N, tflops in ((2048, {OURS: 100, CUDNN: 500, fast_once: 400, steady: 200, refused_once: 900}),
                              (4096, {OURS: 100, CUDNN: 500, fast_once: 50, steady: 200}))]
    chosen = defaults(rows)["d64_causal_fp16"]
    assert chosen["method"] == steady and chosen["launch"] == {"block_m": 32}
    assert chosen["tma"] and chosen["persistent"] == 2 and chosen["warp_specialize"]
    assert chosen["mean_tflops"] == pytest.approx(200) and chosen["over_pointer"] == pytest.approx(2.0)
    rows[1]["tflops"][steady] = 10  # now sqrt(200 · 10) ≈ 45 < the pointer kernel's 100 < sqrt(400 · 50) ≈ 141
    assert defaults(rows)["d64_causal_fp16"]["method"] == fast_once
    assert defaults(rows)["d64_causal_fp16"]["persistent"] == 0 and launches[steady]["programs_per_sm"] == 2
