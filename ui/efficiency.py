"""Figures the Efficiency pages share: the online softmax step by step and FlashAttention's tile grid, both
playable in the browser, and recorded timing results drawn against N."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch

from engine.efficiency import compiled, published, records
from engine.efficiency.flash import TileStep
from engine.efficiency.online_softmax import SoftmaxTrace, prefix_softmax
from engine.efficiency.sweep import format_bytes
from ui import alt_text, figures, tables
from ui.loaders import compile_record

SEEN, CURRENT, UNSEEN = "#1f4fbf", "#e8590c", "#b4bfcf"
BAR_SCALE = dict(colorscale=[[0, SEEN], [0.5, CURRENT], [1, UNSEEN]], cmin=0, cmax=2)  # 0 seen, 1 current, 2 not yet


class TileState(NamedTuple):
    name: str
    colour: str
    colour_name: str  # as the legend under the grid says it
    mark: str  # written in every tile of the state: the second channel beside colour (WCAG 1.4.1)


# The tile grid's states, valued 0 to 3 in this order. Every two of them touch somewhere (the diagonal's tiles meet
# skipped ones), and steps of 3:1 (WCAG 1.4.11) leave room for three levels of lightness, white's included: in
# SRAM now and done are each 3:1 or more from every other state, and not yet, 3:1 from those two, shares the
# light level with skipped, which is the white of the background. Those two are told apart by their marks, and
# skipped tiles lie only past the diagonal. Each mark is 4.5:1 or more against its tile in the colour plotly.js
# writes it in, and the colours stay apart under simulated colour-vision deficiencies: tests/unit/test_palettes.py
# measures all of it.
TILE_STATES = (
    TileState("skipped, every key in the future", "#ffffff", "white", "×"),
    TileState("not yet", "#cad5e6", "light grey", "○"),
    TileState("done", "#000f76", "dark blue", "✓"),
    TileState("in SRAM now", "#c74900", "orange", "●"),
)
TILE_MARKS = np.array([state.mark for state in TILE_STATES])
TILE_LEGEND = "; ".join(f"{s.mark} {s.colour_name}: {s.name}" for s in reversed(TILE_STATES))


@figures.shared
def online_softmax_figure(trace: SoftmaxTrace, step: int, height: int = 400) -> go.Figure:
    """Left: the logits with the running maximum m_i; right: the online estimate e^{x_j − m_i}/d_i over the
    logits seen so far, against the final softmax. One frame per step."""
    n = len(trace.x)
    labels = [str(j + 1) for j in range(n)]
    x, final = trace.x.tolist(), trace.a.tolist()
    layout = figures.side_by_side(("x_j, max m_i dashed", "e^(x_j − m_i)/d_i, ○ softmax"), 0.1)
    for axis in ("xaxis", "xaxis2"):
        layout[axis] |= dict(type="category", title=dict(text="j"))
    layout["yaxis"]["title"] = dict(text="x_j")
    layout["yaxis2"] |= dict(title=dict(text="weight"), range=[0, 1.05])
    layout["showlegend"] = False
    traces = [
        dict(type="bar", x=labels, y=x, name="x_j", showlegend=False, marker=dict(color=[2] * n, **BAR_SCALE),
             xaxis="x", yaxis="y"),
        dict(type="scatter", x=[labels[0], labels[-1]], y=[0.0, 0.0], mode="lines", name="m_i",
             line=dict(color=CURRENT, dash="dash"), xaxis="x", yaxis="y"),
        dict(type="bar", x=labels, y=[0.0] * n, name="online estimate", marker=dict(color=[2] * n, **BAR_SCALE),
             xaxis="x2", yaxis="y2"),
        dict(type="scatter", x=labels, y=final, mode="markers", name="softmax (torch)",
             marker=dict(symbol="circle-open", size=11, color="#111111", line=dict(width=2)), xaxis="x2", yaxis="y2"),
    ]
    frames = []
    for i in range(1, n + 1):
        estimate = prefix_softmax(trace, i).tolist() + [0.0] * (n - i)
        states = [0 if j < i - 1 else 1 if j == i - 1 else 2 for j in range(n)]  # see BAR_SCALE
        frames.append([dict(marker=dict(color=states, **BAR_SCALE)), dict(y=[float(trace.m[i - 1])] * 2),
                       dict(y=estimate, marker=dict(color=states, **BAR_SCALE))])
    return figures.animated(traces, figures.styled(layout, "", height), frames, labels, step - 1,
                            prefix="step i = ")


def output_figure(steps: Sequence[int], o: torch.Tensor, reference: torch.Tensor | None, height: int = 320) -> go.Figure:
    """Each coordinate of the running output o_i over the steps; dashed, the correctly rescaled o_i if given."""
    series = {f"o_i[{k}]": o[:, k].tolist() for k in range(o.shape[1])}
    dashed = {} if reference is None else {f"o_i[{k}], e^(m_(i−1) − m_i)": reference[:, k].tolist()
                                           for k in range(reference.shape[1])}
    return figures.lines(list(steps), series | dashed, title="Running output o_i (eq. 137)", x_title="step i",
                         y_title="o_i", dashed=list(dashed), height=height)


@figures.shared
def tile_figure(kinds: list[list[str]], steps: Sequence[TileStep], step: int, B_r: int, N: int,
                height: int = 440) -> go.Figure:
    """Left: the grid of S tiles (query blocks down, key blocks across), coloured and marked by state after each
    step (TILE_STATES); right: the running maximum m and normaliser l of the rows of the query block in flight."""
    T_r, T_c = len(kinds), len(kinds[0])
    layout = figures.side_by_side(("Tiles of S = QKᵀ", "m (blue), l (green, hatched)"), 0.12, (0.55, 0.45))
    layout["yaxis"]["autorange"] = "reversed"
    layout["xaxis2"] |= dict(type="category", title=dict(text="query row"))
    layout |= dict(barmode="group", showlegend=False)
    colourscale = [[k / 3, state.colour] for k, state in enumerate(TILE_STATES)]
    traces = [
        # each tile's mark: text left at its automatic size fits the tiles, in plotly's colour for the tile, ringed
        dict(type="heatmap", z=np.zeros((T_r, T_c)), x=[f"K{j}" for j in range(T_c)],
             y=[f"Q{i}" for i in range(T_r)], zmin=0, zmax=3, colorscale=colourscale, showscale=False, xgap=2, ygap=2,
             texttemplate="%{text}", textfont=dict(shadow="auto"), hovertemplate="tile %{y} × %{x}<extra></extra>",
             xaxis="x", yaxis="y"),
        dict(type="bar", x=[], y=[], name="m (running max)", marker=dict(color=SEEN), xaxis="x2", yaxis="y2"),
        dict(type="bar", x=[], y=[], name="l (running sum)", marker=dict(color="#2b8a3e", pattern=dict(shape="/")),
             xaxis="x2", yaxis="y2"),
    ]
    done: set[tuple[int, int]] = set()
    frames = []
    for s in steps:
        state = np.array([[0 if kinds[i][j] == "skipped" else 2 if (i, j) in done else 1 for j in range(T_c)]
                          for i in range(T_r)])
        state[s.i, s.j] = 3
        rows = [str(s.i * B_r + r) for r in range(len(s.m))]
        # a mark a tile in every frame: one character each, no colour for plotly to parse (see figures.animate)
        frames.append([dict(z=state.tolist(), text=TILE_MARKS[state].tolist()), dict(x=rows, y=s.m.tolist()),
                       dict(x=rows, y=s.l.tolist())])
        done.add((s.i, s.j))
    fig = figures.animated(traces, figures.styled(layout, "", height), frames,
                           [str(k + 1) for k in range(len(steps))], step - 1, prefix="tile step ")
    # the values 0 to 3 mean nothing to a screen reader without the states they stand for
    states = ", ".join(f"{k} {s.name} ({s.mark})" for k, s in enumerate(TILE_STATES))
    return fig.update_layout(meta={figures.ALT: f"{alt_text.describe(fig)} Tile states: {states}."})


def recorded_label(recorded: dict) -> str:
    """Where and when the benchmark recorded a CPU results file, and what it ran."""
    return (f"Recorded by the benchmark on {recorded['device']}, torch {recorded['versions']['torch']}, "
            f"{recorded['date'][:10]}: fp32, one head, d = 64, {recorded.get('tiles', '?')} × "
            f"{recorded.get('tiles', '?')} tiles for the tiled loop.")


def by_method(rows: Sequence[dict], key: str) -> tuple[list[int], dict[str, list[float | None]]]:
    """Rows of a timing sweep as one series per method over the sorted lengths; None where refused."""
    lengths = sorted({r["N"] for r in rows})
    series: dict[str, list[float | None]] = {}
    for r in rows:
        series.setdefault(r["method"], [None] * len(lengths))[lengths.index(r["N"])] = r[key]
    return lengths, series


def sweep_figures(rows: Sequence[dict], speed: str = "ms", references: Mapping[str, float] | None = None) -> None:
    """Time (or TFLOP/s) and peak memory against N, side by side, one line per method; `references` adds each
    published TFLOP/s at engine.efficiency.published.N as a dashed point of its own."""
    left, right = st.columns(2)
    lengths, values = by_method(rows, speed)
    dashed = list(references or {}) if published.N in lengths else []
    for name in dashed:
        values[name] = [references[name] if n == published.N else None for n in lengths]
    y_title = "median ms per call" if speed == "ms" else "TFLOP/s"
    with left:
        figures.show(figures.lines(lengths, values, title="Time" if speed == "ms" else "Throughput", x_title="N",
                                   y_title=y_title, log_x=True, log_y=speed == "ms", dashed=dashed))
    with right:
        lengths, peaks = by_method(rows, "peak_mib")
        figures.show(figures.lines(lengths, peaks, title="Peak memory", x_title="N", y_title="MiB",
                                   log_x=True, log_y=True))


def sweep_table(rows: Sequence[dict]) -> None:
    """Every measurement with its spread; refused methods with the reason."""
    tables.dataframe({
        "method": [r["method"] for r in rows], "N": [r["N"] for r in rows],
        "median ms": [r["ms"] for r in rows],
        "fastest-slowest ms": [f"{r['ms_min']:.3g}-{r['ms_max']:.3g}" if r["ms"] is not None else "" for r in rows],
        "TFLOP/s": [r["tflops"] for r in rows], "peak MiB": [r["peak_mib"] for r in rows],
        "note": [r["note"] for r in rows],
    }, hide_index=True, column_config={name: st.column_config.NumberColumn(format=printf) for name, printf in
                                       {"median ms": "%.3f", "TFLOP/s": "%.3f", "peak MiB": "%.2f"}.items()})


def probe_table(record: dict, head_dim: int, causal: bool, columns: Callable[[dict], dict[str, Any]],
                formats: Mapping[str, str]) -> None:
    """A GPU probe's bf16 rows (benchmarks.flash_fp8, flash_tma) at this head dim and mask, one per N, in the
    columns `columns` makes of a row; numbers in `formats` (printf style) by column, TFLOP/s elsewhere. Rows without
    a dtype are bf16 (the FP8 probe's compare with bf16; the TMA probe's before it timed fp16)."""
    rows = [r for r in record["rows"]
            if r["d"] == head_dim and r["causal"] == causal and r.get("dtype", "bf16") == "bf16"]
    if not rows:
        st.warning(f"No recorded rows for d = {head_dim}, causal = {causal}.", icon=":material/warning:")
        return
    table = [{"N": r["N"]} | columns(r) for r in rows]
    tables.dataframe({name: [t[name] for t in table] for name in table[0]}, hide_index=True, column_config={
        name: st.column_config.NumberColumn(format=formats.get(name, "%.0f")) for name in table[0]
        if name != "N" and isinstance(table[0][name], int | float)})


def fp8_columns(row: dict) -> dict[str, Any]:
    """Each method's TFLOP/s, FP8's over our bf16 and its error against our bf16."""
    fp8 = next(m for m in row["tflops"] if "fp8" in m)
    return row["tflops"] | {"FP8 / our bf16": row["fp8_over_ours_bf16"],
                            "FP8 error": row["error_against_ours_bf16"][fp8]}


def tma_columns(row: dict) -> dict[str, Any]:
    """Our pointer-load forward, the fastest TMA launch and cuDNN in TFLOP/s, that launch, and the ratios."""
    tflops, best = row["tflops"], row["best_tma"]
    return {"ours, pointer loads": tflops["ours, pointer loads"], "ours, TMA (fastest)": tflops[best],
            "SDPA cuDNN": tflops.get("SDPA cuDNN"), "fastest TMA launch": best.removeprefix("ours, TMA "),
            "TMA / pointer loads": row["best_tma_over_pointer"], "TMA / cuDNN": row.get("best_tma_over_cudnn")}


def dip_note(record: dict) -> str:
    """What benchmarks.flash_dip found, in a sentence with its numbers."""
    def span(tiled: bool, cover: bool) -> str:
        ratios = records.dip_ratios(record, tiled, cover)
        return f"{min(ratios):.2f}-{max(ratios):.2f}x"
    return (f"Records before {record['date'][:10]} showed our bf16 forward at N = {record['N']:,} below SDPA flash: "
            f"the timing, not the kernel. Timed right after a host-bound call (the torch tiled loop), CUDA events "
            f"counted our kernel's Python launch path: {span(True, False)} SDPA flash then, {span(False, False)} "
            f"without that call, {span(True, True)} with a GPU spin covering the launch, as every timing here now "
            f"has ({record['device']}, benchmarks/results/flash_dip.json).")


@st.cache_data(show_spinner=False)
def default_launches(recorded: str, head_dim: int, causal: bool, _record: dict) -> list[dict]:
    """records.default_launch_rows of the compile record written at `recorded`, once per server for each setting:
    picked from its hundreds of rows on every run of the FlashAttention page, they were a sixth of a warm change's
    run (issue 47)."""
    return records.default_launch_rows(_record, head_dim, causal)


@st.cache_data(show_spinner=False)
def hopper_launches(recorded: str, head_dim: int, causal: bool, _record: dict) -> list[dict]:
    """records.hopper_rows of the compile record written at `recorded`, once per server for each setting."""
    return records.hopper_rows(_record, head_dim, causal)


def fits_note(row: dict, target: dict) -> str:
    """Whether a compiled launch can run well on its target, and if not why: a block's shared memory or spill."""
    if row["error"]:
        return "does not compile"
    if row["shared_bytes"] > target["shared_per_block"]:
        return "no: shared memory"  # the amount is the next column's
    return f"spills {row['spill_bytes']} B" if row["spill_bytes"] else "yes"


def hopper_compile_panel(head_dim: int, causal: bool) -> None:
    """What triton made of the Hopper forwards the GPU probes time (TMA, persistent, FP8) for the H100, from the
    compile record; compiler_panel says when there is none."""
    if (record := compile_record()) is None or not (rows := hopper_launches(record["date"], head_dim, causal, record)):
        return
    target = record["targets"]["H100"]
    tables.dataframe({
        "kernel": [r["kernel"] for r in rows],
        "blocks": [f"{r['block_m']} × {r['block_n']}" for r in rows],
        "warps · stages": [f"{r['num_warps']} · {r['num_stages']}" for r in rows],
        "runs well": [fits_note(r, target) for r in rows],
        "shared used / block": [format_bytes(r["shared_bytes"]) for r in rows],
        "registers / thread": [r["registers"] for r in rows],
        "spill B / thread": [r["spill_bytes"] for r in rows],
        "blocks / SM": [r["blocks_per_sm"] for r in rows],
    }, hide_index=True, column_config={"runs well": st.column_config.TextColumn(width="medium")})
    st.caption(f"The Hopper forwards the GPU probes time at d = {head_dim}{', causal' if causal else ''} (bf16 out; "
               "FP8 ones take e4m3 inputs), compiled for the H100 (sm_90) by triton "
               f"{record['triton']}: one program per tile or persistent (as many per SM as fit, each walking tiles), "
               "with and without warp specialization. Runs well: a block fits an SM (its shared memory within the "
               f"{format_bytes(target['shared_per_block'])} one may have) and spills no registers. A persistent "
               "program keeps its output tile in shared memory beside Q and the stages of K and V. A launch no block "
               "of which fits is dropped before any GPU time is spent; one that spills runs, slower, and is still "
               "timed. For the A100 the FP8 ones do not compile: Ampere has no FP8 tensor cores.")


def compiler_panel(head_dim: int, causal: bool, model_sram: int | None = None) -> None:
    """What triton made of our kernels for the H100 and the A100 at their default launches (bf16, N a multiple of
    the blocks), read from benchmarks/results/flash_compile.json; beside the page's model when it gives one."""
    if (record := compile_record()) is None:
        st.info("No compile results are recorded yet: `python -m benchmarks.flash_compile` writes them, on any "
                "machine with triton, GPU or not.", icon=":material/memory:")
        return
    if not (rows := default_launches(record["date"], head_dim, causal, record)):
        st.warning(f"The compile record holds no default launch at d = {head_dim}.", icon=":material/warning:")
        return
    targets = record["targets"]
    tables.dataframe({
        "GPU": [compiled.TARGETS[r["target"]].name for r in rows],
        "kernel": [r["kernel"] for r in rows],
        "blocks": [f"{r['block_m']} × {r['block_n']}" for r in rows],
        "warps · stages": [f"{r['num_warps']} · {r['num_stages']}" for r in rows],
        "shared used / block": [format_bytes(r["shared_bytes"]) if r["shared_bytes"] is not None else ""
                                for r in rows],
        "shared memory per SM · per block": [f"{format_bytes(targets[r['target']]['shared_per_sm'])} · "
                                             f"{format_bytes(targets[r['target']]['shared_per_block'])}" for r in rows],
        "registers / thread": [r["registers"] for r in rows],
        "spill B / thread": [r["spill_bytes"] for r in rows],
        "blocks / SM": [r["blocks_per_sm"] for r in rows],
        "tensor cores": [targets[r["target"]]["tensor_core_op"].split(".")[0] if r["tensor_cores"] else "no"
                         for r in rows],
    }, hide_index=True)
    forward = next(r for r in rows if r["kernel"] == "forward")
    said = (f"Our kernels' default launches at d = {head_dim}{', causal' if causal else ''}, bf16, N a multiple of "
            f"the blocks. Compiled by triton {record['triton']} on {record['date'][:10]} for each GPU by name, on a machine "
            "without one; registers and spill read from the cubin with cuobjdump. Blocks per SM: programs resident "
            "at once, limited by registers, shared memory and threads. Tensor cores: the PTX holds Hopper's "
            "wgmma.mma_async or Ampere's mma.sync.")
    if model_sram is not None:
        tiles = 2 * head_dim * (forward["block_m"] + 2 * forward["num_stages"] * forward["block_n"])  # bf16 bytes
        said += (f" The model above counts {format_bytes(model_sram)} per tile step, S included. The compiled "
                 f"forward keeps S, m, l and O in registers; its {format_bytes(forward['shared_bytes'])} of shared "
                 f"memory per block on the {compiled.TARGETS[forward['target']].name} hold Q's "
                 f"{forward['block_m']} × {head_dim} tile and {forward['num_stages']} stages of K's and V's "
                 f"{forward['block_n']} × {head_dim} tiles ({format_bytes(tiles)} in bf16), the next ones loading "
                 "while the current ones are used.")
    st.caption(said)
