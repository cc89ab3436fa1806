import math

import streamlit as st

from engine.efficiency import traffic
from engine.efficiency.compiled import SHARED_MEMORY
from engine.efficiency.flash import EXAMPLE_HEAD_DIM, TiledExample, tile_kinds, tiled_example
from engine.efficiency.sweep import LENGTHS, NAIVE, TILED, format_bytes, peak_memory_by_length
from engine.errors import InputError
from ui import boundary, figures
from ui.efficiency import TILE_LEGEND, by_method, compiler_panel, recorded_label, tile_figure
from ui.loaders import flash_results
from ui.page import Page, equations, gaps

MAX_TILES = 256  # every frame of the playable grid carries the whole grid
MEASURED_LENGTHS = [128, 256, 512]
# each GPU by the most shared memory one SM can have (the URL's values), the model held to what one block may have
GPUS = {f"{name} ({shared.per_sm // 1024} KiB per SM)": name for name, shared in SHARED_MEMORY.items()}
SHARED_MEMORY_HELP = ("The largest share of each SM's on-chip SRAM that shared memory can take. A tile step of the "
                      "model must fit in what one block may have: " + ", ".join(
                          f"{name} {format_bytes(shared.per_block)}" for name, shared in SHARED_MEMORY.items()))
page = Page("flash_attention")
page.intro(
    "FlashAttention never writes the N × N scores to the GPU's main memory (HBM). In FlashAttention-2's loop "
    "order, drawn here, each block of B_r queries stays in fast on-chip SRAM while blocks of B_c keys and values "
    "stream past; the online softmax of eq. 137, applied to a block of rows, keeps a running maximum m, a running "
    "sum l and an unnormalised output, rescaled whenever m grows. Only O and the log-sum-exp L = m + log l are "
    "written out; the backward pass recomputes each tile of P from L instead of storing it. (The first "
    "FlashAttention loops the other way round: it keeps K_j and V_j on chip while the query blocks stream past, "
    "and writes each block's O, l and m back to HBM at every step.)"
)
c1, c2, c3, c4, c5 = st.columns(5)
N = page.slider("Sequence length N", "N", 4, 64, 24, where=c1)
B_r = page.slider("Query block B_r", "Br", 1, N, min(8, N), where=c2)
B_c = page.slider("Key block B_c", "Bc", 1, N, min(4, N), where=c3)
causal = page.toggle("Causal", "causal", True, where=c4)
seed = page.slider("Seed", "seed", 0, 99, 0, where=c5)
code = page.code  # the traffic fragment records into the full run's recipe


@st.cache_resource(max_entries=64, show_spinner=False)
def example(N: int, B_r: int, B_c: int, causal: bool, seed: int) -> TiledExample:
    """Shared, as the page only reads it: st.cache_data unpickled its tensors at every run, a quarter of a cached
    run of the page."""
    return tiled_example(N, B_r, B_c, causal, seed)


with page.guard():
    T_r, T_c = math.ceil(N / B_r), math.ceil(N / B_c)
    if T_r * T_c > MAX_TILES:
        raise InputError(f"{T_r} × {T_c} = {T_r * T_c} tiles: the grid is drawn for at most {MAX_TILES}; take "
                         "larger blocks")
    run = code.call("run", tiled_example, N, B_r, B_c, causal, seed, via=example,
                    note=f"000 eq. 137 on blocks of rows: one head of width {EXAMPLE_HEAD_DIM}, tile by tile")
    record = run.steps
    code.let("errors",
             lambda: {what: (tiled - reference).abs().max().item() for what, tiled, reference in run.checks},
             note="O, L, dQ, dK, dV against naive attention and autograd, in float64")
    kinds = code.call("kinds", tile_kinds, N, B_r, B_c, causal, note="full, diagonal (masked) or skipped")
    code.figure('px.imshow([[{"skipped": 0, "diagonal": 1, "full": 2}[kind] for kind in row] for row in kinds], '
                'labels=dict(x="key block j", y="query block i"), '
                'title="Tiles of S = QKᵀ: 0 skipped, 1 masked, 2 full")')
    step = page.slider("Tile step", "step", 1, len(record), min(3, len(record)))
    now = record[step - 1]
    left, right = st.columns([3, 2])
    with left:
        figures.show(tile_figure(kinds, record, step, B_r, N))
        st.caption(f"{TILE_LEGEND}. Play runs the steps in the browser; the slider above sets the step described "
                   "below.")
        skipped = sum(k == "skipped" for row in kinds for k in row)
        m1, m2 = st.columns(2)
        m1.metric("Tiles computed", f"{len(record)} of {T_r * T_c}")
        m2.metric("Skipped (causal)", skipped)
    with right:
        equations(
            ("One tile S_ij = Q_i K_jᵀ/√d, as 000 eq. 137 on a block of rows",
             r"\begin{aligned} m' &= \max(m, \operatorname{rowmax} S_{ij}) \\ P &= e^{S_{ij} - m'} \\ "
             r"l &\leftarrow e^{m - m'} l + \operatorname{rowsum} P \\ O &\leftarrow e^{m - m'} O + P V_j "
             r"\end{aligned}"),
            ("After the last key block", r"O_i = O / l, \qquad L_i = m + \log l"),
            (("Backward, tile by tile from L; on a GPU, our Triton kernels _flash_backward_dk_dv (one program "
              "per key block) and _flash_backward_dq (one per query block)"),
             r"\begin{aligned} P &= e^{S_{ij} - L_i} \\ "
             r"D_i &= \operatorname{rowsum}(dO_i \circ O_i) \\ dS &= P \circ (dO_i V_j^\top - D_i) \\ "
             r"dV_j &\mathrel{+}= P^\top dO_i \\ dQ_i &\mathrel{+}= dS\, K_j / \sqrt d \\ "
             r"dK_j &\mathrel{+}= dS^\top Q_i / \sqrt d \end{aligned}"),
        )
    rows, keys = (now.i * B_r, min((now.i + 1) * B_r, N) - 1), (now.j * B_c, min((now.j + 1) * B_c, N) - 1)
    st.markdown(f"**Tile step {step} of {len(record)}:** queries {rows[0]}-{rows[1]} (Q_{now.i}) and keys and values "
                f"{keys[0]}-{keys[1]} (K_{now.j}, V_{now.j}) are in SRAM; the tile "
                f"{'crosses the diagonal, so it is masked' if now.kind == 'diagonal' else 'needs no mask'}. "
                f"Largest running maximum in the block: {float(now.m.max()):.4f}.")
    st.caption(f"One head, d = {EXAMPLE_HEAD_DIM}, float64, so the checks below are limited by rounding only.")
    gaps(*[(f"max |{what}|", a, b) for what, a, b in run.checks])


@boundary.fragment
def traffic_model() -> None:
    """Only this section reruns when its controls move."""
    st.subheader("Memory traffic: HBM bytes against N")
    k1, k2, k3, k4, k5 = st.columns(5)
    d = int(page.select("Head dim d", "d", ["64", "128"], where=k1))
    gpu = GPUS[page.select("Shared memory", "sram", list(GPUS), where=k2, help=SHARED_MEMORY_HELP)]
    per_block = SHARED_MEMORY[gpu].per_block
    model_B_r = int(page.select("Model B_r", "mBr", ["16", "32", "64", "128", "256"], "128", where=k3))
    model_B_c = int(page.select("Model B_c", "mBc", ["16", "32", "64", "128", "256"], "64", where=k4))
    element_bytes = {"bf16": 2, "fp32": 4}[page.select("dtype", "dtype", ["bf16", "fp32"], where=k5)]
    left, right = st.columns(2)
    # recorded before the toggle below: the Code view writes a True or False argument as the last toggle holding it
    naive_mib, tiled_mib = code.call("naive_mib, tiled_mib", traffic.traffic_by_length, LENGTHS, d, B_r=model_B_r,
                                     B_c=model_B_c, causal=causal, element_bytes=element_bytes,
                                     note="MiB of HBM traffic for one head: Algorithm 0 against the tiled loop")
    at = LENGTHS.index(4096)
    code.let("ratio_at_4096", lambda: naive_mib[at] / tiled_mib[at])
    sram = code.call("sram_per_step", traffic.sram_bytes, model_B_r, model_B_c, d, element_bytes=element_bytes,
                     note="bytes on chip per tile step: Q_i, K_j, V_j, the S tile, the output, m and l")
    measure = page.toggle("Measure here at these blocks", "measure", where=right,
                          help="Up to a second, once per setting: naive and tiled attention at N = 128, 256 and "
                               "512 on this server")
    with page.guard():
        traffic.check_fits(model_B_r, model_B_c, d, per_block, element_bytes)
        with left:
            figures.show(figures.lines(LENGTHS, {"naive (Algorithm 0)": naive_mib, "tiled": tiled_mib},
                                       title="Counted HBM traffic, one head", x_title="N", y_title="MiB moved",
                                       log_x=True, log_y=True))
        with right:
            if measure:
                with st.spinner("Measuring the peak memory of naive and tiled attention at N = 128, 256 and 512…"):
                    lengths = MEASURED_LENGTHS
                    peaks = code.call("peaks", peak_memory_by_length, lengths, d, causal=causal, B_r=model_B_r,
                                      B_c=model_B_c, via=measured_peaks,
                                      note="MiB held in tensors at the peak, fp32, one head")
                title = "Peak memory, measured here"
                source = f"CPU, fp32, one head, d = {d}, {model_B_r} × {model_B_c} tiles."
            else:
                lengths, peaks, source = recorded_peaks(causal)
                title = "Peak memory, recorded"
            figures.show(figures.lines(lengths, {"naive": peaks[NAIVE], "tiled": peaks[TILED]}, title=title,
                                       x_title="N", y_title="MiB in tensors at the peak", log_x=True, log_y=True))
            st.caption(source)
        m1, m2 = st.columns(2)
        m1.metric("Traffic at N = 4096, naive / tiled", f"{naive_mib[at] / tiled_mib[at]:.1f}×")
        m2.metric("SRAM per tile step", format_bytes(sram),
                  help=f"against the {format_bytes(per_block)} of shared memory one block may have on the {gpu}")
        st.caption("Naive attention writes S and P to HBM and reads them back: Θ(N²) bytes. The tiled loop reads "
                   "K and V once per query block, 2N²d/B_r elements, and writes only O and L: larger query blocks, "
                   "which a larger SRAM allows, mean less traffic. Measured memory counts tensors alive at the peak.")
    st.subheader("What the compiler made of our Triton kernels")
    with page.guard():
        compiler_panel(d, causal, sram)


def recorded_peaks(causal: bool) -> tuple[list[int], dict[str, list[float | None]], str]:
    """Peak memory from the recorded CPU benchmark, so the first paint measures nothing."""
    if (recorded := flash_results("cpu")) is None:
        raise InputError("no CPU benchmark is recorded yet: switch on “Measure here”")
    lengths, peaks = by_method([r for r in recorded["rows"] if r["causal"] == causal], "peak_mib")
    return lengths, peaks, recorded_label(recorded)


@st.cache_data(max_entries=16, show_spinner=False)
def measured_peaks(lengths: list[int], d: int, causal: bool, B_r: int, B_c: int) -> dict[str, list[float]]:
    return peak_memory_by_length(lengths, d, causal, B_r, B_c)


traffic_model()
