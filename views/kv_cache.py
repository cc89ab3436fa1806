import statistics

import streamlit as st
import torch

from engine.transformer import cache_sizes as cs
from engine.transformer.kv_cache import (EXAMPLE_W_K, EXAMPLE_W_Q, EXAMPLE_W_V, EXAMPLE_X, cached_attention_steps,
                                         generation_work, time_generation_steps)
from ui import defaults, figures, llm, tables
from ui.loaders import char_model, prompt_ids
from ui.measured import shared_timing, timing_lines
from ui.page import Page, equations
from ui.smollm import smollm

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


tables.dataframe({
    "step t": [s.t for s in steps],
    "x_t": [fmt(EXAMPLE_X[s.t - 1]) for s in steps],
    "q_t = x_t W^Q (not cached)": [fmt(s.q) for s in steps],
    "k_t = x_t W^K": [fmt(s.k) for s in steps],
    "v_t = x_t W^V": [fmt(s.v) for s in steps],
    "cache K after the step": [fmt(s.K) for s in steps],
    "α_t": [fmt(s.weights) for s in steps],
    "z_t": [fmt(s.z) for s in steps],
    "|z_t − uncached|": [f"{float((s.z - s.uncached_z).abs().max()):.0e}" for s in steps],
}, hide_index=True)
st.caption("k_1..k_3 = [1, 4], [3, 10], [5, 16] and v_1..v_3 = [2.5, 0.5], [5.5, 0.5], [8.5, 0.5] as 002 lists them. "
           "The keys grow fast, so each query picks its own token almost surely.")

st.subheader("Generation with and without the cache")
model, vocab, _ = char_model("causal")
REPEATS, WARMUP, THREADS = 5, 1, 1
c1, c2 = st.columns([3, 1])
prompt = page.text("Prompt", "prompt", defaults.KV_PROMPT, 2000, where=c1)
n_new = page.slider("Characters generated", "new", 8, defaults.KV_LONGEST, defaults.KV_SHOWN, 8, where=c2)


def ms(seconds: list[float]) -> str:
    """A median and the fastest and slowest run, in ms."""
    return f"{statistics.median(seconds) * 1e3:.0f} ms ({min(seconds) * 1e3:.0f}–{max(seconds) * 1e3:.0f})"


with page.guard():
    ids, prompt = prompt_ids(page, prompt, vocab, model.config.max_seq_len - defaults.KV_LONGEST)
    # the default prompt was generated as the server started, at its default length and at the longest, of which
    # every other length is a prefix; a typed prompt at the length asked
    longest = prompt == defaults.KV_PROMPT and n_new != defaults.KV_SHOWN
    cached, plain = defaults.generated_both_ways(prompt, defaults.KV_LONGEST if longest else n_new)
    text, same = vocab.decode(cached[:n_new]), cached[:n_new] == plain[:n_new]
    st.code(prompt + "⟶" + text, language=None, wrap_lines=True)
    st.caption(f"Sampled at temperature {defaults.KV_TEMPERATURE} with one seed, so both runs draw the same "
               "random numbers.")
    (st.success if same else st.error)("Identical tokens with and without the cache." if same else
                                       "The cached and uncached runs differ.")
    work = {use: generation_work(model.config, len(ids), n_new, use) for use in (True, False)}
    left, right = st.columns([3, 2])
    with right:
        equations(
            ("000 eq. 88", r"\begin{bmatrix} QK^\top & - \\ q_{T+1}K^\top & q_{T+1}k_{T+1}^\top \end{bmatrix}"),
            ("002 §2.5, without a cache", r"\sum_{t=1}^{n} O(t^2) = O(n^3)"),
            ("002 §2.5, with a cache", r"\sum_{t=1}^{n} O(t) = O(n^2)"),
        )
        bytes_per_number = 4  # float32
        positions = list(range(len(ids) + 1, len(ids) + n_new + 1))
        figures.show(figures.lines(positions, {"cache size": [n * bytes_per_number / 1024
                                                              for n in work[True].cache_numbers]}, markers=False,
                                   title="The cache grows by one K and V row per layer", x_title="position",
                                   y_title="KiB", height=300))
    with left:
        m1, m2 = st.columns(2)
        m1.metric("Scores q·k computed, without ÷ with cache", f"{work[False].scores / work[True].scores:.0f}×")
        m2.metric("K, V vectors projected, without ÷ with cache",
                  f"{work[False].projected / work[True].projected:.0f}×")
        st.caption(f"Counted, not timed: the {n_new} steps after a prompt of {len(ids)} characters, over "
                   f"{model.config.n_layers} layers and {model.config.n_heads} heads (without the cache every step "
                   "forms the whole score matrix, masked half included). The same on any machine.")
        measured = shared_timing(
            ("kv_cache", prompt, n_new),
            lambda progress: time_generation_steps(model, ids, n_new, REPEATS, WARMUP, threads=THREADS,
                                                   progress=progress),
            where=f"CPU, {THREADS} thread", runs=f"median of {REPEATS} interleaved runs after {WARMUP} warm-up",
            automatic=False)
        table = {"": ["with cache", "without cache"],
                 "K, V vectors projected": [f"{work[use].projected:,}" for use in (True, False)],
                 "scores q·k computed": [f"{work[use].scores:,}" for use in (True, False)]}
        if measured is None:
            st.info("Not timed on this server yet for this prompt and length. Press the button: each step runs "
                    f"both ways in turn, {WARMUP + REPEATS} times, which takes a few seconds. Every visitor then "
                    "sees that timing until someone measures again.", icon=":material/timer:")
        else:
            timings = measured.value
            speedups = timings.speedups()
            st.metric("Measured speed-up, without ÷ with cache",
                      f"{statistics.median(speedups):.1f}× ({min(speedups):.1f}–{max(speedups):.1f})")
            st.caption(f"Timings {measured.label}; in brackets the fastest and slowest run. One thread: on a "
                       "shared machine two threads wait for each other, and the time would be the scheduler's.")
            table[f"{n_new} steps, median (fastest–slowest)"] = [ms(timings.totals(name)) for name in table[""]]
        tables.dataframe(table, hide_index=True)
        if measured is not None:
            figures.show(timing_lines(positions, measured.value.steps, x_title="position", y_title="ms per token",
                                      title="Time per generated token: median, fastest to slowest run"))

st.subheader("A real cache: SmolLM2-135M generating")
lm = smollm() if prompt.strip() else None  # an empty prompt is already refused above
if lm is not None:
    with page.guard():
        ids = llm.prompt_ids(page, lm, prompt, defaults.KV_SMOLLM_TOKENS, chat=False)
        grown = llm.growth(ids, defaults.KV_SMOLLM_STEPS, _lm=lm)
        smol = cs.BY_NAME["SmolLM2-135M"]  # the cache-size table's row, from SmolLM2's config.json
        per_token = {b - a for a, b in zip(grown.numbers, grown.numbers[1:])}
        closed_form = f"2 · {smol.layers} layers · {smol.kv_heads} KV heads · {smol.head_dim} · tokens"
        st.code(lm.tokenizer.decode(ids) + "⟶" + lm.tokenizer.decode(grown.tokens), language=None, wrap_lines=True)
        left, right = st.columns([3, 2])
        with left:
            figures.show(figures.lines(
                grown.positions, {"measured: Σ over layers of K.numel() + V.numel()": grown.numbers,
                                  closed_form: [smol.elements_per_token() * t for t in grown.positions]},
                dashed=[closed_form], title=f"SmolLM2's cache after the prompt and each of "
                                            f"{defaults.KV_SMOLLM_STEPS} greedy tokens",
                x_title="tokens in the cache", y_title="numbers cached",
                height=320))
        with right:
            m1, m2 = st.columns(2)
            m1.metric("Measured growth per token", ", ".join(f"{n:,}" for n in sorted(per_token)))
            m2.metric("The cache-size table's figure", f"{smol.elements_per_token():,}")
            st.caption(f"{smol.layers} layers each append one K and one V row for each of the {smol.kv_heads} "
                       f"key-value heads (GQA: {smol.heads} query heads share them), {smol.head_dim} numbers each: "
                       f"{smol.elements_per_token():,} numbers a token, {smol.bytes_per_token('fp32') / 1024:.0f} KiB "
                       f"in our float32, {smol.bytes_per_token('bf16') / 1024:.1f} KiB in bf16 as the KV cache of "
                       "real models page lists it. Greedy, so the same text on every visit.")
