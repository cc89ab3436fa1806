import math

import streamlit as st

from engine.attention.scaling import ScalingStudy, one_query_weights, scaling_study
from ui import boundary, figures
from ui.page import Page, equations

page = Page("scaling")
page.intro(
    "Draw queries and keys with independent entries of mean 0 and variance 1. Their dot product has "
    "variance d_k, so as d_k grows the raw logits spread out, the softmax picks one key almost surely, and "
    "its gradient (000 eq. 56) vanishes. Dividing by √d_k keeps the spread at 1 for every d_k."
)
c1, c2, c3, c4 = st.columns(4)
n_keys = page.slider("Keys per softmax m", "m", 2, 32, 16, where=c1)
n_draws = page.slider("Random draws", "draws", 100, 1000, 500, 100, where=c2)
max_log2 = page.slider("Largest d_k = 2^", "maxlog2", 4, 10, 10, where=c3)
seed = page.slider("Seed", "seed", 0, 99, 0, where=c4)


@st.cache_data(max_entries=32, show_spinner="Drawing random queries and keys…")
def study(max_log2: int, n_keys: int, n_draws: int, seed: int) -> ScalingStudy:
    return scaling_study(max_log2, n_keys, n_draws, seed)


code = page.code
result = code.call("result", scaling_study, max_log2, n_keys, n_draws, seed, via=study,
                   note="001 §1.4: raw and 1/√d_k-scaled logits of random q, k for d_k = 1, 2, 4, …, 2^maxlog2")
raw_spread, scaled_spread = code.let(
    "raw_spread, scaled_spread", lambda: (result.logit_std["raw"][-1], result.logit_std["scaled"][-1]),
    note="at the largest d_k the raw logits spread as √d_k (Var[q·k] = d_k); the scaled ones stay at 1")
code.figure('go.Figure([go.Scatter(x=result.d_k, y=result.logit_std[name], name=name) for name in ("raw", "scaled")],\n'
            '          layout={"title": "Spread of the logits", "xaxis_title": "d_k", "xaxis_type": "log",\n'
            '                  "yaxis_title": "standard deviation", "yaxis_type": "log"})')
dims = result.d_k
left, right = st.columns([3, 2])
with left:
    g1, g2 = st.columns(2)
    with g1:
        figures.show(figures.lines(dims, {"raw q·k": result.logit_std["raw"],
                                          "scaled q·k/√d_k": result.logit_std["scaled"],
                                          "√d_k": [math.sqrt(d) for d in dims]},
                                   title="Spread of the logits", x_title="d_k", y_title="standard deviation",
                                   log_x=True, log_y=True, dashed=["√d_k"]))
        # the study's other measures are drawn as they are: each holds a "raw" and a "scaled" curve
        figures.show(figures.lines(dims, result.max_weight, title="Largest attention weight", x_title="d_k",
                                   y_title="mean max α", log_x=True))
    with g2:
        figures.show(figures.lines(dims, result.entropy, title="Softmax entropy", x_title="d_k",
                                   y_title="entropy / log m", log_x=True))
        figures.show(figures.lines(dims, result.jacobian_norm, title="Gradient of the softmax", x_title="d_k",
                                   y_title="mean ‖∂α/∂a‖_F", log_x=True, log_y=True))
with right:
    equations(
        ("001 §1.4", r"\mathbb{E}[q^\top k] = 0"),
        ("001 §1.4, entries independent with variance 1", r"\operatorname{Var}[q^\top k] = d_k"),
        ("000 eq. 56", r"\frac{\partial C}{\partial z} = p - y"),
        ("Softmax Jacobian", r"\frac{\partial \alpha}{\partial a} = \operatorname{diag}(\alpha) - \alpha\alpha^\top"),
        ("000 eq. 57", r"A(Q, K, V) = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V"),
    )
    big = dims[-1]
    st.metric(f"Raw logit spread at d_k = {big}", f"{raw_spread:.2f}", help=f"√{big} = {math.sqrt(big):.2f}")
    st.metric(f"Scaled logit spread at d_k = {big}", f"{scaled_spread:.3f}")


@boundary.fragment
def one_draw(dims: list[int], n_keys: int, seed: int) -> None:
    """Only this part reruns when its d_k changes: the study above stays as drawn."""
    st.subheader("One query, raw against scaled")
    sample_d = int(page.select("d_k of this draw", "sample", [str(d) for d in dims], str(dims[-1])))
    raw_weights, scaled_weights = code.call("raw_weights, scaled_weights", one_query_weights, sample_d, n_keys, seed,
                                            note="000 eq. 57: one query's softmax over its keys, raw and scaled")
    figures.show(figures.bars([f"k{j + 1}" for j in range(n_keys)],
                              {"softmax(q·k)": raw_weights.tolist(), "softmax(q·k/√d_k)": scaled_weights.tolist()},
                              title=f"Attention weights of one query over {n_keys} keys, d_k = {sample_d}",
                              y_title="α"))


one_draw(dims, n_keys, seed)
