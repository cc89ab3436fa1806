import streamlit as st

from engine.attention.multihead import (init_multihead, multi_head_per_head, multi_head_steps, one_query_at_a_time,
                                        random_tokens, step_tensor)
from ui import boundary, figures, tables
from ui.page import Page, equations, gaps


@st.cache_resource(max_entries=64, show_spinner=False)
def layer(B: int, T: int, C: int, H: int, causal: bool, seed: int) -> dict:
    """The batch, weights, every step of the forward and both checks for one setting, once per server, shared
    read-only: each run computed them again, the Head shown slider's too (issue 47)."""
    x, weights = random_tokens(B, T, C, seed), init_multihead(C, seed)
    return {"x": x, "weights": weights, "steps": multi_head_steps(x, weights, H, causal),
            "per_head": multi_head_per_head(x, weights, H, causal),
            "per_query": one_query_at_a_time(x, weights, H, causal)}


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


@boundary.fragment  # its slider reruns this figure alone: the table and the other heads stay as drawn
def head_shown(attention, tokens: list[str], H: int) -> None:
    """One head of batch item 1 large enough to read its numbers; attention is (B, H, T, T)."""
    shown = page.slider("Head shown with its numbers", "head", 1, H, 1)
    figures.show(figures.heatmap(attention[0, shown - 1].numpy(), tokens, tokens, title=f"head {shown}",
                                 x_title="key", y_title="query", annotate=True, height=120 + 36 * len(tokens)))


with page.guard():
    code = page.code
    # read inside each step's call: a setting the engine refuses fails in a step, as the Code view records it
    computed = lambda name: layer(B, T, C, H, causal, seed)[name]  # noqa: E731
    x = code.call("x", random_tokens, B, T, C, seed, via=lambda *_: computed("x"),
                  note="a batch of random token vectors, (B, T, C)")
    weights = code.call("weights", init_multihead, C, seed, via=lambda *_: computed("weights"),
                        note="000 eq. 64, 68: W_qkv = [W_Q | W_K | W_V], and W_O")
    steps = code.call("steps", multi_head_steps, x, weights, H, causal, via=lambda *_: computed("steps"),
                      note="000 §8.3.2, eq. 71-82: each line of the forward and the tensor it makes")
    attention = code.call("attention", step_tensor, steps, "att = F.softmax(att, dim=-1)",
                          note="000 eq. 80: every head's attention weights, (B, H, T, T)")
    concat = code.call("concat", step_tensor, steps, "y = y.transpose(1, 2).contiguous().view(B, T, C)",
                       note="000 eq. 82: the heads' outputs side by side, concat(O_1, …, O_h), (B, T, C)")
    output = code.call("output", step_tensor, steps, "y = self.proj(y)", note="000 eq. 67: Y = concat(…) W_O")
    code.figure('px.imshow(attention[0].numpy(), facet_col=0, facet_col_wrap=4, title="Each head\'s attention, '
                'batch item 1")')
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
    tokens = [f"t{i + 1}" for i in range(T)]
    # one head large enough to read its numbers, then every head small, four to a row, as patterns only
    head_shown(attention, tokens, H)
    per_row = 4
    for first in range(0, H, per_row):
        for column, head in zip(st.columns(per_row), range(first, min(first + per_row, H))):
            with column:
                figures.show(figures.heatmap(attention[0, head].numpy(), tokens, tokens, title=f"head {head + 1}",
                                             annotate=False, height=220, showscale=False))

    st.subheader("Heads side by side, then mixed by W_O")
    columns = [f"h{j // d + 1}·{j % d}" for j in range(C)]
    figures.show(figures.heatmap(concat[0].numpy(), columns, tokens, title="concat(O_1, …, O_h) for batch item 1",
                                 x_title="head · dimension", y_title="token", zmin=None, zmax=None, zmid=0.0,
                                 colorscale="RdBu_r", annotate=False, height=320))

    st.subheader("Checks, computed")
    per_head = code.call("per_head", multi_head_per_head, x, weights, H, causal, via=lambda *_: computed("per_head"),
                         note="002 §2.1.3: the same layer one head at a time, Concat(head_1, …, head_h) W_O")
    per_query = code.call("per_query", one_query_at_a_time, x, weights, H, causal,
                          via=lambda *_: computed("per_query"),
                          note="000 eq. 55: head 1 of batch item 1, one query at a time")
    gaps(("max |batched − one head at a time| (002 §2.1.3)", per_head, output),
         ("max |matrix form − one query at a time| (000 eq. 55 vs 62)", per_query, concat[0, :, :d]))
    st.caption("Both differences are float32 rounding: splitting into heads and stacking queries change "
               "the bookkeeping, not the mathematics.")
