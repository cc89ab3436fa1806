import streamlit as st
import torch
import torch.nn.functional as F

from engine import errata
from engine.efficiency.online_softmax import (logits_as_attention, naive_softmax, online_attention, online_softmax,
                                              prefix_softmax, random_logits, three_pass_softmax)
from engine.errors import InputError
from ui import boundary, errata_panel, figures, tables
from ui.efficiency import online_softmax_figure, output_figure
from ui.inputs import parse_numbers
from ui.page import Page, equations, gaps

MAX_LOGITS = 64  # one bar and one table row per logit
DEFAULT_LOGITS = "3, 1, 4, 1000, 5, 1004, 2, 998"  # the maximum moves three times; e^1000 overflows float32
page = Page("online_softmax")
page.intro(
    "Softmax needs the largest logit before it can exponentiate safely, so the textbook algorithm reads the "
    "logits three times (eq. 122-124). The online softmax keeps a running maximum m_i and rescales its "
    "running sum d_i by e^(m_(i−1) − m_i) whenever the maximum grows (eq. 130), so one pass gives both. "
    "Carrying the output o_i along with the same rescaling (eq. 137) turns attention for one query into a "
    "single pass over the keys: the loop FlashAttention runs on blocks."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3 = st.columns([1, 3, 1])
    source = page.select("Logits", "source", ["Typed", "Random"], where=c1)
    if source == "Typed":
        typed = page.text("Logits x_1 … x_N, separated by commas", "x", DEFAULT_LOGITS, 1000, where=c2)
    else:
        r1, r2, r3 = c2.columns(3)
        n = page.slider("N", "n", 2, MAX_LOGITS, 12, where=r1)
        magnitude = page.select("Scale", "scale", ["1", "100", "10000"], "100", where=r2)
        seed = page.slider("Seed", "seed", 0, 99, 0, where=r3)
    as_printed = page.toggle("eq. 137 as printed", "printed", where=c3,
                             help="000 eq. 137 and 004 eq. 84 rescale o_(i−1) by e^(m_i − m_(i−1)); eq. 136's "
                                  "derivation needs e^(m_(i−1) − m_i), as d_i has in eq. 130.")

    code = page.code
    with page.guard():
        if source == "Typed":
            values = parse_numbers(typed, MAX_LOGITS)
            if not values:
                raise InputError("type at least one logit, for example `1, 1000, 2`")
            logits = code.let("logits", lambda: torch.tensor(values), note="the logits x_1 … x_N")
        else:
            logits = code.call("logits", random_logits, n, scale=float(magnitude), seed=seed,
                               note="the logits x_1 … x_N")
        N = len(logits)
        three = code.call("three", three_pass_softmax, logits,
                          note="000 eq. 122-124: three passes, the first only for m_N")
        online = code.call("online", online_softmax, logits,
                           note="000 eq. 130: one pass, d_i rescaled by e^(m_(i−1) − m_i) whenever the maximum grows")
        code.let("m, d, a", lambda: (online.m, online.d, online.a))
        rescale = code.call("rescale", online.rescaling, note="e^(m_(i−1) − m_i) at every step, 0 at the first")
        # with d = 1 the default 1/√d is 1: the scores are the logits themselves
        q, K, V = code.call("q, K, V", logits_as_attention, logits,
                            note="000 eq. 137 for one query of width 1 whose scores q k_i^T are the logits")
        attention = code.call("attention", online_attention, q, K, V, as_printed=as_printed)
        code.let("o", lambda: attention.o)
        step = page.slider("Step i", "step", 1, N, min(4, N))
        code.call("estimate", prefix_softmax, online, step,
                  note="after `step` logits: the softmax of the prefix, which later steps only rescale")
        code.figure('go.Figure([go.Bar(x=list(range(1, len(logits) + 1)), y=logits.tolist(), name="x_j"), '
                    'go.Scatter(x=list(range(1, len(logits) + 1)), y=m.tolist(), name="running maximum m_i")], '
                    'layout_title_text="Online softmax: the logits and their running maximum")')

        left, right = st.columns([3, 2])
        with left:
            figures.show(online_softmax_figure(online, step))
            st.caption("Play runs every step in the browser; the slider above sets the step the tables show.")
            corrected = None
            if as_printed:
                corrected = code.call("corrected", online_attention, q, K, V,
                                      note="eq. 137 rescaled by e^(m_(i−1) − m_i), as eq. 136 derives").o
            figures.show(output_figure(range(1, N + 1), attention.o, corrected))
        with right:
            equations(
                ("000 eq. 122-124: three passes", r"\begin{aligned} m_N &= \max_j x_j \\ d_N &= \sum_j e^{x_j - m_N} "
                                                  r"\\ a_i &= e^{x_i - m_N} / d_N \end{aligned}"),
                ("000 eq. 130: one pass for m and d",
                 r"\begin{aligned} m_i &= \max(m_{i-1}, x_i) \\ "
                 r"d_i &= d_{i-1}\, e^{m_{i-1} - m_i} + e^{x_i - m_i} \end{aligned}"),
                ("000 eq. 137, rescaled as eq. 136 derives", r"o_i = o_{i-1} \frac{d_{i-1}}{d_i} e^{m_{i-1} - m_i} "
                                                            r"+ \frac{e^{x_i - m_i}}{d_i} v_i"),
                ("000 eq. 137 and 004 eq. 84 as printed",
                 r"o_i = o_{i-1} \frac{d_{i-1}}{d_i} \frac{e^{m_i}}{e^{m_{i-1}}} + \frac{e^{x_i - m_i}}{d_i} v_i"),
            )
            if as_printed:
                rises = int((online.m[1:] > online.m[:-1]).sum())
                st.warning(f"As printed, o_i is right only while the running maximum stays put: every step that raises "
                           f"m multiplies the old output by e^(2(m_i − m_(i−1))) too much. Here m rises at {rises} of "
                           f"{N - 1} steps after the first.", icon=":material/warning:")
        i = step - 1
        st.markdown(f"**After step {step}:** m_{step} = {online.m[i]:.6g}, rescaling e^(m_{step - 1} − m_{step}) = "
                    f"{rescale[i]:.6g}, d_{step} = {online.d[i]:.6g}, o_{step} = "
                    f"({', '.join(f'{v:.6g}' for v in attention.o[i].tolist())})")
        tables.dataframe({
            "i": list(range(1, step + 1)),
            "x_i": online.x[:step].tolist(),
            "m_i": online.m[:step].tolist(),
            "e^(m_(i−1) − m_i)": rescale[:step].tolist(),
            "d_i online (eq. 130)": online.d[:step].tolist(),
            "d_i against m_N (eq. 123)": three.d[:step].tolist(),
            "o_i (eq. 137)": [", ".join(f"{v:.4g}" for v in row) for row in attention.o[:step].tolist()],
        }, hide_index=True)
        settled = code.call("settled", online.first_step_at_maximum,
                            note="000 eq. 126-127: d_i online equals d_i against m_N from this step on")
        before = "" if settled == 1 else (f" Before it, d_i online = (d_i against m_N) · e^(m_N − m_i), "
                                          f"and m_i < m_N at {'step 1' if settled == 2 else f'steps 1–{settled - 1}'}.")
        st.caption(f"d_i online and d_i against the global maximum agree from step {settled} on, where the running "
                   f"maximum reaches m_N = {online.m[-1]:.6g} (eq. 126-127: d'_N = d_N).{before} The three-pass column "
                   "needs m_N, so it can only start after a whole first pass.")
        st.subheader(f"After all {N} steps, against torch")
        reference = code.let("reference", lambda: torch.softmax(logits, 0), note="against torch")
        gaps(("max |online − torch.softmax|", online.a, reference),
             ("max |three-pass − torch.softmax|", three.a, reference),
             ("max |o_N − SDPA|", attention.o[-1], F.scaled_dot_product_attention(q[None], K, V, scale=1.0)[0]))
        naive = code.call("naive", naive_softmax, logits,
                          note="without the maximum: e^x overflows float32 past x ≈ 88.7")
        if wrong := int((~torch.isclose(naive, online.a, rtol=1e-4, atol=1e-7)).sum()):  # NaN is never close
            st.info(f"Without the maximum, e^(x_i) / Σ e^(x_j) gets {wrong} of {N} weights wrong "
                    f"({int(torch.isnan(naive).sum())} NaN): in float32 e^x overflows past x ≈ 88.7 and underflows "
                    "to 0 "
                    f"below x ≈ −103; the logits here run from {logits.min():.6g} to {logits.max():.6g}.",
                    icon=":material/info:")
        errata_panel.show(errata.online_rescaling())


body()
