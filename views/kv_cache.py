import numpy as np
import streamlit as st
import torch

from engine.transformer.kv_cache import (EXAMPLE_W_K, EXAMPLE_W_Q, EXAMPLE_W_V, EXAMPLE_X, cached_attention_steps,
                                         timed_generation)
from ui import figures
from ui.loaders import char_model, prompt_ids
from ui.page import Page, equations

page = Page("kv_cache")
page.intro(
    "Generating token T+1 adds one row to the masked score matrix and no column to the earlier rows "
    "(000 eq. 88): the new query needs every earlier key and value, but no earlier query is needed again. "
    "So K and V are cached, Q is not, and each step projects one token instead of the whole prefix."
)

st.subheader("The worked example of 002 §2.5, step by step")
steps = cached_attention_steps(EXAMPLE_X, EXAMPLE_W_Q, EXAMPLE_W_K, EXAMPLE_W_V)


def fmt(t: torch.Tensor) -> str:
    if t.dim() == 2:
        return "; ".join(fmt(row) for row in t)
    return "[" + ", ".join(f"{x:.4g}" for x in t.tolist()) + "]"


st.table({
    "step t": [s.t for s in steps],
    "x_t": [fmt(EXAMPLE_X[s.t - 1]) for s in steps],
    "q_t = x_t W^Q (not cached)": [fmt(s.q) for s in steps],
    "k_t = x_t W^K": [fmt(s.k) for s in steps],
    "v_t = x_t W^V": [fmt(s.v) for s in steps],
    "cache K after the step": [fmt(s.K) for s in steps],
    "α_t": [fmt(s.weights) for s in steps],
    "z_t": [fmt(s.z) for s in steps],
    "|z_t − uncached|": [f"{float((s.z - s.uncached_z).abs().max()):.0e}" for s in steps],
})
st.caption("k_1..k_3 = [1, 4], [3, 10], [5, 16] and v_1..v_3 = [2.5, 0.5], [5.5, 0.5], [8.5, 0.5] as 002 lists them. "
           "The keys grow fast, so each query picks its own token almost surely.")

st.subheader("Generation with and without the cache")
model, vocab, _ = char_model("causal")
GENERATED = 128  # characters generated per prompt; after a long prompt the uncached steps are already slow
# the first story of the corpus: a long prefix makes the uncached steps' cost visible from the first one
DEFAULT_PROMPT = ("Hundreds of people have been forced to vacate their homes in the Southern Highlands of New South "
                  "Wales as strong winds today pushed a huge bushfire towards the town of Hill Top. A new blaze near "
                  "Goulburn, south-west of Sydney, has forced the closure of the Hume Highway. ")
c1, c2 = st.columns([3, 1])
prompt = page.text("Prompt", "prompt", DEFAULT_PROMPT, 2000, where=c1)
n_new = page.slider("Characters shown", "new", 8, GENERATED, GENERATED // 2, 8, where=c2)


@st.cache_data(max_entries=16, show_spinner=f"Generating {GENERATED} characters twice, with and without the cache…")
def run(prompt: str) -> tuple[dict, dict, str, bool]:
    """One generation per prompt; the slider only chooses how much of it to show."""
    ids = vocab.encode(prompt)
    cached, plain = timed_generation(model, ids, GENERATED, True), timed_generation(model, ids, GENERATED, False)
    same = torch.equal(cached.tokens, plain.tokens)
    return (cached.__dict__ | {"tokens": None}, plain.__dict__ | {"tokens": None},
            vocab.decode(cached.tokens[len(ids):].tolist()), same)


with page.guard():
    ids, prompt = prompt_ids(page, prompt, vocab, model.config.max_seq_len - GENERATED)
    cached, plain, text, same = run(prompt)
    cached = {k: v[:n_new] for k, v in cached.items() if v is not None}
    plain = {k: v[:n_new] for k, v in plain.items() if v is not None}
    st.code(prompt + "⟶" + text[:n_new], language=None, wrap_lines=True)
    st.caption("Sampled at temperature 0.8 with one seed, so both runs draw the same random numbers. Each step "
               "is timed as the fastest of two runs of the same forward pass.")
    (st.success if same else st.error)("Identical tokens with and without the cache." if same else
                                       "The cached and uncached runs differ.")
    left, right = st.columns([3, 2])
    positions = list(range(len(ids) + 1, len(ids) + n_new + 1))
    with left:
        ms = {"without cache": np.array(plain["seconds_per_token"]) * 1e3,
              "with cache": np.array(cached["seconds_per_token"]) * 1e3}
        figures.show(figures.lines(positions, {k: v.tolist() for k, v in ms.items()}, markers=False,
                                   title="Time per generated token against its position", x_title="position",
                                   y_title="ms per token"))
        m1, m2, m3 = st.columns(3)
        m1.metric("Total without cache", f"{ms['without cache'].sum():.0f} ms")
        m2.metric("Total with cache", f"{ms['with cache'].sum():.0f} ms")
        m3.metric("Speed-up", f"{ms['without cache'].sum() / ms['with cache'].sum():.1f}×")
    with right:
        equations(
            ("000 eq. 88", r"\begin{bmatrix} QK^\top & - \\ q_{T+1}K^\top & q_{T+1}k_{T+1}^\top \end{bmatrix}"),
            ("002 §2.5, without a cache", r"\sum_{t=1}^{n} O(t^2) = O(n^3)"),
            ("002 §2.5, with a cache", r"\sum_{t=1}^{n} O(t) = O(n^2)"),
        )
        bytes_per_number = 4  # float32
        figures.show(figures.lines(positions, {"cache size": [n * bytes_per_number / 1024 for n in
                                                              cached["cache_numbers"]]}, markers=False,
                                   title="The cache grows by one K and V row per layer", x_title="position",
                                   y_title="KiB", height=300))
