"""The Efficiency pages, read back against the engine run here and torch."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from engine.efficiency import records, sweep, traffic
from engine.efficiency.flash import tile_kind
from engine.efficiency.online_softmax import online_attention, online_softmax
from tests.app.conftest import assert_clean, metric, open_page
from ui import loaders

DEFAULT_LOGITS = torch.tensor([3.0, 1, 4, 1000, 5, 1004, 2, 998])


def animated(at) -> dict:
    """The page's playable figure: the one plotly chart that has frames."""
    return next(spec for spec in (json.loads(c.proto.spec) for c in at.get("plotly_chart")) if spec.get("frames"))


def test_online_softmax_page_steps_through_the_default_logits():
    at = open_page("online_softmax", step="4")
    assert_clean(at)
    trace = online_softmax(DEFAULT_LOGITS)
    table = at.dataframe[0].value
    assert table["i"].tolist() == [1, 2, 3, 4]
    assert table["m_i"].tolist() == trace.m[:4].tolist()
    assert table["d_i online (eq. 130)"].tolist() == pytest.approx(trace.d[:4].tolist())
    assert float(metric(at, "max |online − torch.softmax|")) < 1e-6
    assert float(metric(at, "max |o_N − SDPA|")) < 1e-6
    assert any("gets 3 of 8 weights wrong (3 NaN)" in i.value for i in at.info)  # e^1000 overflows
    spec = animated(at)
    assert len(spec["frames"]) == 8 and spec["layout"]["sliders"][0]["active"] == 3
    # the frame of step 4 draws e^{x_j - m_4} / d_4 over the first four logits: the softmax of that prefix
    estimate = spec["frames"][3]["data"][2]["y"]
    assert estimate[:4] == pytest.approx(torch.softmax(DEFAULT_LOGITS[:4], 0).tolist(), abs=1e-6)
    assert estimate[4:] == [0.0] * 4



@pytest.mark.parametrize("typed, settled", [(None, 6), ("9, 1, 2", 1), ("1, 2, 3, 7", 4)])
def test_the_caption_says_from_which_step_the_two_d_columns_agree(typed, settled):
    at = open_page("online_softmax", step="8") if typed is None else open_page("online_softmax", x=typed, step="4")
    assert_clean(at)
    table = at.dataframe[0].value
    online, three = table["d_i online (eq. 130)"], table["d_i against m_N (eq. 123)"]
    agree = [bool(np.isclose(a, b, rtol=1e-6, atol=0)) for a, b in zip(online, three)]
    assert agree == [i + 1 >= settled for i in range(len(table))]  # the table itself shows it
    caption = next(c.value for c in at.caption if c.value.startswith("d_i online and d_i against"))
    assert f"agree from step {settled} on" in caption
    assert ("Before it" in caption) == (settled > 1)

def test_the_printed_rescaling_is_shown_to_fail_where_the_maximum_rises():
    at = open_page("online_softmax", printed="True")
    assert_clean(at)
    assert "m rises at 3 of 7 steps" in at.warning[0].value
    gap = metric(at, "max |o_N − SDPA|")
    assert gap in ("nan", "inf") or float(gap) > 1.0
    V = torch.randn(8, 2, generator=torch.Generator().manual_seed(1))
    printed = online_attention(torch.ones(1), DEFAULT_LOGITS[:, None], V, 1.0, as_printed=True).o
    shown = at.dataframe[0].value["o_i (eq. 137)"].tolist()
    assert shown[-1] == ", ".join(f"{v:.4g}" for v in printed[3].tolist())


@pytest.mark.parametrize("typed,message", [("", "at least one"), ("1, two, 3", "'two' is not a number"),
                                           (", ".join(["1"] * 65), "at most 64")])
def test_online_softmax_explains_bad_typed_logits(typed, message):
    at = open_page("online_softmax")
    at.text_input(key="x").set_value(typed).run()
    assert_clean(at)
    assert message in at.warning[0].value
    assert at.title[0].value == "Online softmax"


@pytest.mark.parametrize("typed,wrong", [("-200, -300", "2 of 2 weights wrong (2 NaN)"),
                                         ("88, 88, 88", "3 of 3 weights wrong (0 NaN)"), ("1, 2, 3", None)])
def test_naive_softmax_is_named_wrong_where_it_over_or_underflows(typed, wrong):
    at = open_page("online_softmax", x=typed)
    assert_clean(at)
    notes = [i.value for i in at.info if "Without the maximum" in i.value]
    assert (wrong in notes[0]) if wrong else not notes


def test_online_softmax_random_logits_of_large_magnitude():
    at = open_page("online_softmax", source="Random", n="40", scale="10000", seed="5", step="40")
    assert_clean(at)
    assert float(metric(at, "max |online − torch.softmax|")) < 1e-6
    assert len(at.dataframe[0].value) == 40


def test_flash_page_checks_and_counts_its_tiles():
    at = open_page("flash_attention", N="30", Br="8", Bc="4", causal="True", step="5")
    assert_clean(at)
    for label in ("max |O tiled − naive|", "max |L − logsumexp(S)|", "max |dQ tiled − autograd|",
                  "max |dK tiled − autograd|", "max |dV tiled − autograd|"):
        assert float(metric(at, label)) < 1e-12, label
    kinds = [tile_kind(i, j, 8, 4, 30, True) for i in range(4) for j in range(8)]
    computed = sum(k != "skipped" for k in kinds)
    assert metric(at, "Tiles computed") == f"{computed} of 32"
    assert metric(at, "Skipped (causal)") == str(32 - computed)
    backward = next(c.value for c in at.caption if c.value.startswith("Backward, tile by tile from L"))
    assert "_flash_backward_dk_dv" in backward and "_flash_backward_dq" in backward, "its GPU form, named"
    grid = np.array(animated(at)["frames"][4]["data"][0]["z"])
    assert (grid == 3).sum() == 1 and (grid == 2).sum() == 4  # step 5: one tile in SRAM, four done
    naive, tiled = traffic.naive_traffic(4096, 64).total, traffic.tiled_traffic(4096, 64, 128, 64, True).total
    assert metric(at, "Traffic at N = 4096") == f"{naive / tiled:.1f}×"


def test_flash_page_refuses_blocks_past_n_too_many_tiles_and_past_the_sram():
    at = open_page("flash_attention", N="10", Br="16")
    assert_clean(at)
    assert any("Br=16" in i.value and "from 1 to 10" in i.value for i in at.info)
    assert metric(at, "Tiles computed")  # the default block is used instead
    at = open_page("flash_attention", N="64", Br="2", Bc="2")
    assert "32 × 32 = 1024 tiles" in at.warning[0].value
    at = open_page("flash_attention", d="128", mBr="256", mBc="256", sram="RTX 4090 (100 KiB per SM)")
    assert_clean(at)
    assert any("KiB of SRAM per tile step" in w.value for w in at.warning)
    assert metric(at, "Tiles computed")  # the tile view above still works


def test_flash_page_measures_peak_memory_on_demand():
    at = open_page("flash_attention", measure="True", mBr="64", mBc="64")
    assert_clean(at)
    charts = {json.loads(c.proto.spec)["layout"].get("title", {}).get("text"): json.loads(c.proto.spec)
              for c in at.get("plotly_chart")}
    naive, tiled = (charts["Peak memory, measured here"]["data"][k]["y"] for k in (0, 1))
    assert naive[-1] > 4 * tiled[-1]  # N = 512: S and P (2 MiB) against O, L and a few 64 × 64 tiles


def test_timing_page_times_every_method_here():
    at = open_page("attention_timing", upto="512", repeats="1", block="64")
    assert_clean(at)
    assert any("Not timed in this session yet" in c.value for c in at.caption)
    assert metric(at, "Peak memory at N = 4096, naive / tiled")
    device = records.load_results(loaders.RESULTS / "flash_gpu.json")["device"].split(" (")[0]  # "NVIDIA H200"
    assert any(device in c.value and "triton" in c.value for c in at.caption), "benchmarks/results/flash_gpu.json"
    at.button[0].click().run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert set(table["method"]) == {sweep.NAIVE, sweep.TILED, sweep.SDPA}
    assert sorted(set(table["N"])) == [256, 512]
    flops = sweep.attention_flops(1, 1, 512, 64, False)
    row = table[(table["method"] == sweep.TILED) & (table["N"] == 512)].iloc[0]
    assert row["TFLOP/s"] == pytest.approx(flops / (row["median ms"] / 1e3) / 1e12)


def test_timing_page_refuses_an_unsupported_head_dim_from_the_url():
    at = open_page("attention_timing", d="96")
    assert_clean(at)
    assert any("d=96" in i.value for i in at.info)


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(loaders, "RESULTS", tmp_path)
    for loader in (loaders.flash_results, loaders.compile_record, loaders.probe_results):
        loader.clear()
    yield tmp_path
    for loader in (loaders.flash_results, loaders.compile_record, loaders.probe_results):
        loader.clear()


def test_timing_page_says_when_no_gpu_results_are_recorded(results_dir):
    at = open_page("attention_timing")
    assert_clean(at)
    assert any("No GPU results are recorded yet" in i.value for i in at.info)
    assert any("No TMA or FP8 results are recorded yet" in i.value for i in at.info)


def test_timing_page_names_a_broken_gpu_results_file(results_dir):
    (results_dir / "flash_gpu.json").write_text('{"date": "2026-11-23", "rows": [')
    at = open_page("attention_timing")
    assert_clean(at)
    assert any("flash_gpu.json cannot be read" in e.value and "git checkout" in e.value for e in at.error)
    assert any(i.value.startswith("Nothing is timed") for i in at.info), "the CPU part before it is drawn"


def test_timing_page_draws_recorded_gpu_results(results_dir):
    row = dict(method=sweep.TRITON, N=4096, d=64, causal=False, dtype="bfloat16", batch=4, heads=32, ms=1.0,
               ms_min=0.9, ms_max=1.1, tflops=math.pi, peak_mib=10.0, note="")
    data = {"date": "2026-11-23T00:00:00+00:00", "device": "NVIDIA H100 80GB HBM3 (79 GiB)",
            "versions": {"torch": "2.11.0", "triton": "3.6.0"}, "rows": [row, row | {"N": 8192, "tflops": 2.0}]}
    (results_dir / "flash_gpu.json").write_text(json.dumps(data))
    at = open_page("attention_timing")
    assert_clean(at)
    assert any("NVIDIA H100" in c.value and "triton 3.6.0" in c.value for c in at.caption)
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["layout"].get("title", {}).get("text") == "Throughput")
    assert spec["data"][0]["name"] == sweep.TRITON and spec["data"][0]["y"] == pytest.approx([math.pi, 2.0])
    at = open_page("attention_timing", gpass=sweep.FORWARD_BACKWARD)  # rows without a mode are forward passes
    assert_clean(at)
    assert any("No recorded GPU rows for d = 64, causal = False, forward+backward, bfloat16" in w.value
               for w in at.warning)


def test_timing_page_draws_the_recorded_pass_and_dtype_asked_for():
    at = open_page("attention_timing", d="128", causal="True", gpass=sweep.FORWARD_BACKWARD, gdtype="float16")
    assert_clean(at)
    table = next(t.value for t in at.dataframe if "method" in t.value)  # the recorded GPU rows
    recorded = [r for r in records.load_results(loaders.RESULTS / "flash_gpu.json")["rows"]
                if r["d"] == 128 and r["causal"] and r["mode"] == sweep.FORWARD_BACKWARD and r["dtype"] == "float16"]
    assert len(table) == len(recorded) > 0
    assert sorted(table["median ms"].dropna()) == pytest.approx(sorted(r["ms"] for r in recorded if r["ms"]))
    assert {1000, 1030} <= set(table["N"])
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["layout"].get("title", {}).get("text") == "Throughput")
    assert spec["data"][0]["x"] == [512, 1024, 2048, 4096, 8192, 16384], "the masked lengths are in the table only"


def throughput_chart(at) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["layout"].get("title", {}).get("text") == "Throughput")


def test_timing_page_names_cudnn_the_bar_and_draws_flashattention_3s_published_points_as_such():
    """The FlashAttention-3 paper's H100 SXM5 bf16 forward at N = 16k (fig. 5 and 6), d = 128, not causal: FA3 648,
    cuDNN 595 TFLOP/s; drawn dashed, at N = 16k alone, for the bf16 forward only (issue 48)."""
    at = open_page("attention_timing", d="128")
    assert_clean(at)
    assert any("On Hopper the bar is SDPA's cuDNN backend" in c.value and "published, not measured" in c.value
               for c in at.caption)
    traces = {t["name"]: t for t in throughput_chart(at)["data"]}
    assert {sweep.SDPA_CUDNN, sweep.SDPA_FLASH, sweep.TRITON} <= set(traces), "cuDNN is measured beside ours"
    for name, tflops in (("FlashAttention-3, published", 648), ("cuDNN, published", 595)):
        points = [(x, y) for x, y in zip(traces[name]["x"], traces[name]["y"]) if y is not None]
        assert points == [(16384, tflops)] and traces[name]["line"]["dash"], name
    for other in ({"gpass": sweep.FORWARD_BACKWARD}, {"gdtype": "float16"}):
        at = open_page("attention_timing", d="128", **other)
        assert_clean(at)
        assert not any("published" in t["name"] for t in throughput_chart(at)["data"]), other


def test_timing_page_shows_the_recorded_fp8_rows_for_its_setting():
    at = open_page("attention_timing", d="64", causal="True")
    assert_clean(at)
    recorded = [r for r in records.load_probe(loaders.RESULTS / "flash_fp8.json", "fp8")["rows"] if r["d"] == 64 and r["causal"]]
    table = next(t.value for t in at.dataframe if "FP8 / our bf16" in t.value)
    assert list(table["N"]) == [r["N"] for r in recorded] and len(recorded) == 4
    assert list(table["FP8 / our bf16"]) == pytest.approx([r["fp8_over_ours_bf16"] for r in recorded])
    assert list(table["ours bf16"]) == pytest.approx([r["tflops"]["ours bf16"] for r in recorded])
    assert any("bounded by 7e-02" in c.value and "NVIDIA H200" in c.value for c in at.caption)


def test_timing_page_shows_the_recorded_tma_rows_and_what_the_dip_was():
    at = open_page("attention_timing", d="128", causal="True")
    assert_clean(at)
    recorded = [r for r in records.load_probe(loaders.RESULTS / "flash_tma.json", "tma")["rows"]
                if r["d"] == 128 and r["causal"]]
    table = next(t.value for t in at.dataframe if "TMA / pointer loads" in t.value)
    assert list(table["N"]) == [r["N"] for r in recorded] and len(recorded) == 2
    assert list(table["ours, TMA (fastest)"]) == pytest.approx([r["tflops"][r["best_tma"]] for r in recorded])
    assert list(table["TMA / cuDNN"]) == pytest.approx([r["best_tma_over_cudnn"] for r in recorded])
    dip = records.load_probe(loaders.RESULTS / "flash_dip.json", "dip")
    shown = min(r["ours_over_sdpa_flash"] for r in dip["rows"] if r["tiled_in_round"] and not r["cover_launch"])
    assert any("the timing, not the kernel" in c.value and f"{shown:.2f}-" in c.value for c in at.caption)


def compiler_table(at):
    return next(t.value for t in at.dataframe if "registers / thread" in t.value)


@pytest.mark.parametrize("page_name", ["flash_attention", "attention_timing"])
def test_the_pages_show_what_the_compiler_made_of_the_default_launches(page_name):
    at = open_page(page_name, d="128", causal="True")
    assert_clean(at)
    table = compiler_table(at)
    record = records.load_compiled(loaders.RESULTS / "flash_compile.json")
    rows = records.default_launch_rows(record, 128, True)
    assert list(table["GPU"]) == ["H100 (sm_90)"] * 3 + ["A100 (sm_80)"] * 3
    assert list(table["registers / thread"]) == [r["registers"] for r in rows]
    assert list(table["blocks / SM"]) == [r["blocks_per_sm"] for r in rows]
    assert list(table["tensor cores"]) == ["wgmma"] * 3 + ["mma"] * 3
    shared = table["shared memory per SM · per block"]
    assert shared[0] == "228.0 KiB · 227.0 KiB" and shared[3] == "164.0 KiB · 163.0 KiB"
    assert any(f"triton {record['triton']}" in c.value for c in at.caption)
    if page_name == "flash_attention":  # beside the page's own model of a tile step
        said = next(c.value for c in at.caption if "The model above counts" in c.value)
        forward = rows[0]  # H100: Q's 128 × 128 tile and 3 stages of 64 × 128 K and V tiles, bf16, + 1 KiB static
        assert forward["shared_bytes"] == 2 * 128 * (128 + 2 * 3 * 64) + 1024
        assert "129.0 KiB of shared memory" in said and "(128.0 KiB in bf16)" in said


def test_the_timing_page_shows_what_the_compiler_made_of_the_hopper_forwards():
    """At d = 128: the TMA forward's 3 launches in 4 schedules and the FP8 forward's 4 launches in 3 forms; the
    persistent (128, 128) one on 3 stages needs more shared memory than an H100 block may have, and says so."""
    at = open_page("attention_timing", d="128", causal="False")
    assert_clean(at)
    table = next(t.value for t in at.dataframe if "runs well" in t.value)
    rows = records.hopper_rows(records.load_compiled(loaders.RESULTS / "flash_compile.json"), 128, False)
    assert list(table["kernel"]) == [r["kernel"] for r in rows] and len(rows) == 3 * 4 + 4 * 3
    verdict = dict(zip(zip(table["kernel"], table["blocks"], table["warps · stages"]), table["runs well"]))
    persistent = verdict["forward, TMA, persistent", "128 × 128", "8 · 3"]
    assert persistent == "no: shared memory"
    shared = dict(zip(zip(table["kernel"], table["blocks"], table["warps · stages"]), table["shared used / block"]))
    assert shared["forward, TMA, persistent", "128 × 128", "8 · 3"] == "257.0 KiB"
    assert verdict["forward, TMA", "128 × 128", "8 · 3"] == "yes"
    assert verdict["forward, TMA, persistent", "128 × 128", "8 · 2"] == "yes"
    assert any("Ampere has no FP8 tensor cores" in c.value for c in at.caption)


def test_the_compiler_panel_says_when_nothing_or_something_broken_is_recorded(tmp_path, monkeypatch):
    (tmp_path / "flash_cpu.json").write_bytes((loaders.RESULTS / "flash_cpu.json").read_bytes())
    monkeypatch.setattr(loaders, "RESULTS", tmp_path)
    loaders.compile_record.clear()
    try:
        at = open_page("flash_attention")
        assert_clean(at)
        assert any("No compile results are recorded yet" in i.value for i in at.info)
        (tmp_path / "flash_compile.json").write_text('{"rows": 1')
        loaders.compile_record.clear()
        at = open_page("flash_attention")
        assert_clean(at)
        assert any("flash_compile.json cannot be read" in e.value for e in at.error)
        assert metric(at, "Traffic at N = 4096, naive / tiled"), "the traffic model above still works"
    finally:
        loaders.compile_record.clear()


def test_one_logit_or_one_tile_leaves_nothing_to_step_through():
    at = open_page("online_softmax", x="0")
    assert_clean(at)
    assert not [s for s in at.slider if s.key == "step"]
    assert float(metric(at, "max |online − torch.softmax|")) == 0.0
    at = open_page("flash_attention", N="4", Br="4", Bc="4")
    assert_clean(at)
    assert metric(at, "Tiles computed") == "1 of 1"
    assert not [s for s in at.slider if s.key == "step"]
