import threading

import streamlit as st
import torch

from engine.efficiency import published, sweep
from ui import boundary, queued
from ui.efficiency import (compiler_panel, dip_note, fp8_columns, hopper_compile_panel, probe_table, recorded_label,
                           sweep_figures, sweep_table, tma_columns)
from ui.loaders import flash_results, probe_results
from ui.page import Page, equations

NAIVE_BUDGET = 256 * 2**20  # S and P together; a hosted server has about 2.5 GB for every visitor
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
page = Page("attention_timing")
page.intro(
    "The same attention four ways: naive (S and P held whole), our tiled loop in torch, torch's own fused "
    "scaled_dot_product_attention, and, on a GPU, our Triton kernel. Each is timed on this server, interleaved "
    "with the others and repeated, and its peak memory measured on its own. Throughput counts 4·B·H·N²·d "
    "FLOPs for QKᵀ and PV, halved when causal."
)


@st.cache_resource
def timing_lock() -> threading.Lock:
    """One timing at a time per server: two sweeps at once would each measure the other."""
    return threading.Lock()


def recorded_cpu() -> None:
    """Until this session times anything: what the benchmark recorded on a CPU, labelled as such."""
    if (recorded := flash_results("cpu")) is None:
        st.info("Nothing is timed in this session yet and no CPU results are recorded: press the button.",
                icon=":material/timer:")
        return
    st.caption(f"Not timed in this session yet. {recorded_label(recorded)} Press the button to time on this server.")
    sweep_figures([r for r in recorded["rows"] if r["causal"] == causal])
    if ratios := recorded.get("ratios"):
        m1, m2, m3 = st.columns(3)
        m1.metric("Peak memory at N = 4096, naive / tiled", f"{ratios['naive_peak_over_tiled_peak']:.0f}×")
        m2.metric("Time, tiled / naive", f"{ratios['tiled_time_over_naive']:.2f}×")
        m3.metric("Time, tiled / torch SDPA", f"{ratios['tiled_time_over_sdpa']:.2f}×")


c1, c2, c3, c4, c5 = st.columns(5)
d = int(page.select("Head dim d", "d", ["64", "128"], where=c1))
causal = page.toggle("Causal", "causal", where=c2)
largest = int(page.select("Largest N", "upto", [str(n) for n in sweep.LENGTHS], "2048", where=c3))
block = int(page.select("Tile of the torch loop", "block", ["64", "128", "256"], "256", where=c4,
                        help="B_r = B_c for the tiled torch method: on a CPU larger tiles mean fewer Python steps"))
repeats = page.slider("Repeats", "repeats", 1, 10, 5, where=c5)
# one lambda per choice, so that the Code view writes `torch.float32`, not a getattr of its name
DTYPES = {"bfloat16": lambda: torch.bfloat16, "float16": lambda: torch.float16, "float32": lambda: torch.float32}
dtype_name = page.select("dtype", "dtype", list(DTYPES)) if DEVICE == "cuda" else "float32"
code = page.code
dtype = code.let("dtype", DTYPES[dtype_name])
chosen = list(sweep.methods(DEVICE, block, dtype=dtype))
lengths = [n for n in sweep.LENGTHS if n <= largest]
settings = (d, causal, largest, block, repeats, str(dtype))
code.later("rows", sweep.measure_lengths, lengths, d, causal, chosen, DEVICE, dtype, block=block,
           naive_budget=NAIVE_BUDGET, repeats=repeats,
           note="each method timed at every N, interleaved; FLOPs = 4·B·H·N²·d, halved when causal")
# per N: every method runs repeats + 2 times (a warm-up, the repeats, one for peak memory), in time ∝ N² d; the
# constant is naive, tiled and SDPA together at N = 2048, d = 64 on one core of a laptop CPU
seconds = (repeats + 2) * 0.35 * (d / 64) * sum((n / 2048) ** 2 for n in lengths)
code.slow(f"Takes about {max(seconds, 1):.0f} s on one core of a laptop CPU: {len(lengths)} lengths, "
          f"{len(chosen)} methods, {repeats} repeats")
code.figure('px.line(rows, x="N", y="ms", color="method", log_x=True, log_y=True, markers=True, '
            'title="Median ms per call")')


def sweep_rows(report, lock: threading.Lock) -> list[dict] | None:
    """The job behind the button (ui/queued.py), at the settings above: every N up to the largest, the methods
    interleaved; None if every student waiting for it left."""
    def before(k: int, n: int) -> bool:
        return report(k / len(lengths), f"N = {n:,}: {len(chosen)} methods, {repeats} repeats each "
                                        "(changing a control or leaving the page stops the timing)")

    with lock:
        return sweep.measure_lengths(lengths, d, causal, chosen, DEVICE, dtype, block=block,
                                     naive_budget=NAIVE_BUDGET, repeats=repeats, before=before)


left, right = st.columns([3, 2])
with right:  # the button beside the figures, so the recorded figure opens on a projector's first screen
    st.markdown(f"**On this server ({DEVICE}{', ' + torch.cuda.get_device_name() if DEVICE == 'cuda' else ''}):** "
                f"{', '.join(chosen)}, N from {sweep.LENGTHS[0]:,} to {largest:,}.")
    timing_requested = st.button("Time attention here", type="primary", icon=":material/timer:")
    equations(
        ("Work of one attention call", r"\text{FLOPs} = 4 \cdot B H N^2 d \quad (\div 2 \text{ causal})"),
        ("Naive memory", r"S, P \in \mathbb{R}^{N \times N}:\; \Theta(N^2)"),
        ("Tiled and fused memory", r"O, L \text{ and a few tiles}:\; \Theta(N d)"),
    )
with left:
    if timing_requested:
        with page.guard():  # a full line of heavy jobs says so here
            lock = timing_lock()
            rows = queued.run("attention_timing", settings, lambda report: sweep_rows(report, lock),
                              "Timing attention", estimate=15.0)
            if rows is not None:
                st.session_state["timing"] = (settings, rows)
    if (measured := st.session_state.get("timing")) is not None:
        if measured[0] != settings:
            st.caption("These results are from other settings than the controls show; press the button to re-time.")
        sweep_figures(measured[1])
        sweep_table(measured[1])
    else:
        with page.guard():
            recorded_cpu()


@boundary.fragment  # its selects rerun this section alone: the timings above stay as drawn
def recorded_gpu(recorded: dict, d: int, causal: bool) -> None:
    """The GPU benchmark's recorded rows at this head dim and mask, for the pass and dtype chosen here."""
    g1, g2 = st.columns(2)
    mode = page.select("Recorded pass", "gpass", list(sweep.MODES), where=g1,
                       help="forward+backward counts 3.5 times the forward's FLOPs, as FlashAttention does; "
                            "our Triton kernels run 4.5 times, their dQ kernel forming S and dP again")
    recorded_dtype = page.select("Recorded dtype", "gdtype", ["bfloat16", "float16"], where=g2)
    versions = ", ".join(f"{k} {v}" for k, v in recorded["versions"].items())
    st.caption(f"{recorded['device']} · {versions} · {recorded['date'][:10]} · {mode}, {recorded_dtype}, "
               f"batch × N = 16k tokens, H = 2048/d heads")
    rows = [r for r in recorded["rows"] if r["d"] == d and r["causal"] == causal and r["mode"] == mode
            and r["dtype"] == recorded_dtype]
    if not rows:
        st.warning(f"No recorded GPU rows for d = {d}, causal = {causal}, {mode}, {recorded_dtype}.",
                   icon=":material/warning:")
        return
    # FlashAttention-3's paper publishes the bf16 forward
    references = published.forward_references(d, causal) if (
        mode == sweep.FORWARD and recorded_dtype == "bfloat16") else {}
    # the masked lengths (N = 1000, 1030) sit beside 1024 on a log axis: they are in the table
    sweep_figures([r for r in rows if r["N"] & (r["N"] - 1) == 0], speed="tflops", references=references)
    st.caption("On Hopper the bar is SDPA's cuDNN backend, faster than its flash backend (FlashAttention-2). "
               + (f"Grey dashed points at N = {published.N:,}: {published.SOURCE}, published, not measured "
                  "here. " if references else "The FlashAttention-3 paper's published points are drawn for "
                  "the bf16 forward pass. ")
               + "N = 1000 and 1030, not multiples of the blocks, run the kernels' masked paths: in the table.")
    sweep_table(rows)
    if (dip := probe_results("dip")) is not None:
        st.caption(dip_note(dip))


st.subheader("Recorded on a GPU")
with page.guard():
    if (recorded := flash_results("gpu")) is None:
        st.info("No GPU results are recorded yet. The project's benchmark writes them on any CUDA machine with "
                "torch, and Triton for our kernel; this page then shows them here.", icon=":material/memory:")
    else:
        recorded_gpu(recorded, d, causal)

st.subheader("Faster forwards recorded on a GPU: TMA and FP8")
with page.guard():
    tma, fp8 = probe_results("tma"), probe_results("fp8")
    if tma is None and fp8 is None:
        st.info("No TMA or FP8 results are recorded yet: `python -m benchmarks.flash_tma` and "
                "`python -m benchmarks.flash_fp8` write them on a Hopper GPU.", icon=":material/memory:")
    if tma is not None:
        st.caption(f"{tma['device']} · {tma['date'][:10]} · d = {d}, causal = {causal}, bf16 forward, TFLOP/s by N: "
                   "our kernel with its tiles moved by Hopper's TMA engine through tensor descriptors "
                   "(engine/efficiency/triton_tma.py), its fastest launch, beside the same loop with pointer loads "
                   "and SDPA's cuDNN.")
        probe_table(tma, d, causal, tma_columns, {"TMA / pointer loads": "%.2fx", "TMA / cuDNN": "%.2fx"})
    if fp8 is not None:
        st.caption(f"{fp8['device']} · {fp8['date'][:10]} · d = {d}, causal = {causal}: our e4m3 forward "
                   "(per-block scales) beside our bf16 forward and SDPA's backends, forward pass, TFLOP/s by N. FP8 is "
                   "timed on inputs already in e4m3, as FlashAttention-3 reports it, and again with quantizing Q, "
                   "K, V included (\"with quantizing\": torch's passes, in records before our quantizing kernel); "
                   f"its error ‖O_fp8 − O_bf16‖ / ‖O_bf16‖ is bounded by {fp8['bound']:.0e} in the tests.")
        probe_table(fp8, d, causal, fp8_columns, {"FP8 / our bf16": "%.2fx", "FP8 error": "%.1e"})

st.subheader("What the compiler made of our Triton kernels")
with page.guard():
    compiler_panel(d, causal)
    hopper_compile_panel(d, causal)

