import streamlit as st
import torch

from engine.attention.multihead import init_multihead, multi_head_per_head, multi_head_steps, one_query_at_a_time
from ui import figures, tables
from ui.page import Page, equations, gaps

page = Page("multi_head")
page.intro(
    "One layer of multi-head self-attention on a batch of random token vectors, run the way the code of "
    "000 §8.3.2 runs it. Each row of the table is one line of that code and the tensor it makes."
)
c1, c2, c3, c4, c5, c6 = st.columns(6)
B = page.slider("Batch B", "B", 1, 4, 1, where=c1)
T = page.slider("Tokens T", "T", 1, 12, 6, where=c2)
C = page.slider("d_model C", "C", 2, 64, 16, where=c3)
H = page.slider("Heads H", "H", 1, 16, 4, where=c4)
causal = page.toggle("Causal mask", "causal", True, where=c5)
seed = page.slider("Seed", "seed", 0, 99, 0, where=c6)

with page.guard():
    x = torch.randn(B, T, C, generator=torch.Generator().manual_seed(seed))  # (B, T, C)
    weights = init_multihead(C, seed)
    steps = multi_head_steps(x, weights, H, causal)
    d = C // H
    left, right = st.columns([3, 2])
    with left:
        tables.dataframe({
            "code (000 §8.3.2)": [s.code for s in steps],
            "notes": [s.equation for s in steps],
            "dimensions": [s.dims for s in steps],
            "shape": [str(tuple(s.tensor.shape)) for s in steps],
        }, hide_index=True)
        st.caption(f"B = {B}, T = {T}, C = d_model = {C}, H = {H} heads of d = d_k = d_v = C / H = {d}.")
    with right:
        equations(
            ("000 eq. 64", r"Q = XW_Q,\quad K = XW_K,\quad V = XW_V"),
            ("000 eq. 66", r"O^{(i)} = \operatorname{SDPA}\big(XW_Q^{(i)}, XW_K^{(i)}, XW_V^{(i)}\big)"),
            ("000 eq. 67", r"Y = \operatorname{concat}(O_1, \dots, O_h)\, W_O"),
            ("000 eq. 69", r"d_k = d_v,\quad d_k \times h = d_{\mathrm{model}}"),
        )

    st.subheader("Each head's attention, batch item 1")
    attention = next(s.tensor for s in steps if s.code.startswith("att = F.softmax"))[0]  # (H, T, T)
    tokens = [f"t{i + 1}" for i in range(T)]
    # one head large enough to read its numbers, then every head small, four to a row, as patterns only
    shown = page.slider("Head shown with its numbers", "head", 1, H, 1)
    figures.show(figures.heatmap(attention[shown - 1].numpy(), tokens, tokens, title=f"head {shown}",
                                 x_title="key", y_title="query", annotate=True, height=120 + 36 * T))
    per_row = 4
    for first in range(0, H, per_row):
        for column, head in zip(st.columns(per_row), range(first, min(first + per_row, H))):
            with column:
                figures.show(figures.heatmap(attention[head].numpy(), tokens, tokens, title=f"head {head + 1}",
                                             annotate=False, height=220, showscale=False))

    st.subheader("Heads side by side, then mixed by W_O")
    concat = steps[-2].tensor[0]  # (T, C) before the output projection
    columns = [f"h{j // d + 1}·{j % d}" for j in range(C)]
    figures.show(figures.heatmap(concat.numpy(), columns, tokens, title="concat(O_1, …, O_h) for batch item 1",
                                 x_title="head · dimension", y_title="token", zmin=None, zmax=None, zmid=0.0,
                                 colorscale="RdBu_r", annotate=False, height=320))

    st.subheader("Checks, computed")
    gaps(("max |batched − one head at a time| (002 §2.1.3)", multi_head_per_head(x, weights, H, causal),
          steps[-1].tensor),
         ("max |matrix form − one query at a time| (000 eq. 55 vs 62)", one_query_at_a_time(x, weights, H, causal),
          concat[:, :d]))
    st.caption("Both differences are float32 rounding: splitting into heads and stacking queries change "
               "the bookkeeping, not the mathematics.")
