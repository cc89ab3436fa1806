import statistics

import streamlit as st
import torch

from engine.llm import generation
from engine.llm.smollm import load as load_smollm
from engine.transformer import cache_sizes as cs
from engine.transformer.kv_cache import (cache_growth, cached_attention_steps, generated_both_ways, generation_work,
                                         time_generation_steps)
from engine.transformer.train import load_lm
from ui import boundary, defaults, figures, llm, tables
from ui.loaders import char_model, prompt_ids
from ui.measured import shared_timing, timing_lines
from ui.page import Page, equations
from ui.smollm import smollm

page = Page("kv_cache")
code = page.code
page.intro(
    "Generating token T+1 adds one row to the masked score matrix and no column to the earlier rows "
    "(000 eq. 88): the new query needs every earlier key and value, but no earlier query is needed again. "
    "So K and V are cached, Q is not, and each step projects one token instead of the whole prefix."
)

st.subheader("The worked example of 002 §2.5, step by step")
X = code.let("X", lambda: torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=torch.float64),
             note="002 §2.5.1: three 2-dimensional tokens and their projections")
W_Q = code.let("W_Q", lambda: torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64))
W_K = code.let("W_K", lambda: torch.tensor([[1.0, 2.0], [0.0, 1.0]], dtype=torch.float64))
W_V = code.let("W_V", lambda: torch.tensor([[0.5, -0.5], [1.0, 0.5]], dtype=torch.float64))
steps = code.call("steps", cached_attention_steps, X, W_Q, W_K, W_V,
                  note="002 §2.5 steps 1-6: q_t, k_t, v_t of the new token only; K, V grow by one row")
code.let("outputs", lambda: torch.stack([s.z for s in steps]),
         note="z_t; each equals row t of uncached masked attention")
code.let("uncached_outputs", lambda: torch.stack([s.uncached_z for s in steps]))


def fmt(t: torch.Tensor) -> str:
    if t.dim() == 2:
        return "; ".join(fmt(row) for row in t)
    return "[" + ", ".join(f"{x:.4g}" for x in t.tolist()) + "]"


tables.dataframe({
    "step t": [s.t for s in steps],
    "x_t": [fmt(X[s.t - 1]) for s in steps],
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
model, vocab, _ = code.call("model, vocab, extra", load_lm, "causal", via=char_model,
                            note="000 §8.3's character TransformerLM, generating with and without the cache")
REPEATS, WARMUP, THREADS = 5, 1, 1


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2 = st.columns([3, 1])
    prompt = page.text("Prompt", "prompt", defaults.KV_PROMPT, 2000, where=c1)
    n_new = page.slider("Characters generated", "new", 8, defaults.KV_LONGEST, defaults.KV_SHOWN, 8, where=c2)


    def ms(seconds: list[float]) -> str:
        """A median and the fastest and slowest run, in ms."""
        return f"{statistics.median(seconds) * 1e3:.0f} ms ({min(seconds) * 1e3:.0f}–{max(seconds) * 1e3:.0f})"


    def generated(model, ids: torch.Tensor, n_new: int, temperature: float) -> tuple[list[int], list[int]]:
        """generated_both_ways through the server's cache (ui/defaults.py), which has the default prompt at its default
        length and at the longest, of which every other length is a prefix; a typed prompt at the length asked."""
        longest = prompt == defaults.KV_PROMPT and n_new != defaults.KV_SHOWN
        cached, plain = defaults.generated_both_ways(prompt, defaults.KV_LONGEST if longest else n_new)
        return cached[:n_new], plain[:n_new]


    def timing_note(prompt_len: int, n_new: int) -> str:
        """How long time_generation_steps takes on a laptop core: each step runs one token against the cache (about
        3 ms) and the whole prefix uncached (about 0.15 ms a token), WARMUP + REPEATS times."""
        seconds = (WARMUP + REPEATS) * n_new * (3e-3 + 1.5e-4 * (prompt_len + n_new / 2))
        return f"Timing the {n_new} steps takes about {max(1, round(seconds))} s on one core of a laptop CPU"


    with page.guard():
        _, prompt = prompt_ids(page, prompt, vocab, model.config.max_seq_len - defaults.KV_LONGEST)
        ids = code.call("ids", vocab.encode, prompt)
        cached, plain = code.call("cached, plain", generated_both_ways, model, ids, n_new, defaults.KV_TEMPERATURE,
                                  via=generated, note="000 eq. 86-89: the same draws with the cache and without it")
        text = code.call("text", vocab.decode, cached)
        same = code.let("same", lambda: cached == plain)
        st.code(prompt + "⟶" + text, language=None, wrap_lines=True)
        st.caption(f"Sampled at temperature {defaults.KV_TEMPERATURE} with one seed, so both runs draw the same "
                   "random numbers.")
        (st.success if same else st.error)("Identical tokens with and without the cache." if same else
                                           "The cached and uncached runs differ.")
        config, prompt_len = code.let("config", lambda: model.config), code.let("prompt_len", lambda: len(ids))
        with_cache = code.call("with_cache", generation_work, config, prompt_len, n_new, True,
                               note="002 §2.5: with the cache Σ O(t) = O(n²) work, without it Σ O(t²) = O(n³)")
        without_cache = code.call("without_cache", generation_work, config, prompt_len, n_new, False)
        code.let("fewer_scores", lambda: without_cache.scores / with_cache.scores)
        code.let("fewer_projections", lambda: without_cache.projected / with_cache.projected)
        code.let("cache_numbers", lambda: with_cache.cache_numbers)
        code.figure('px.line(x=list(range(prompt_len + 1, prompt_len + new + 1)), '
                    'y=[n * 4 / 1024 for n in cache_numbers], '
                    'labels={"x": "position", "y": "KiB"}, title="The cache grows by one K and V row per layer")')
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
                                                                  for n in with_cache.cache_numbers]}, markers=False,
                                       title="The cache grows by one K and V row per layer", x_title="position",
                                       y_title="KiB", height=300))
        with left:
            m1, m2 = st.columns(2)
            m1.metric("Scores q·k computed, without ÷ with cache", f"{without_cache.scores / with_cache.scores:.0f}×")
            m2.metric("K, V vectors projected, without ÷ with cache",
                      f"{without_cache.projected / with_cache.projected:.0f}×")
            st.caption(f"Counted, not timed: the {n_new} steps after a prompt of {len(ids)} characters, over "
                       f"{model.config.n_layers} layers and {model.config.n_heads} heads (without the cache every step "
                       "forms the whole score matrix, masked half included). The same on any machine.")
            code.later("timings", time_generation_steps, model, ids, n_new, REPEATS, WARMUP, threads=THREADS,
                       note="each step timed with the cache and without it, in turn; timings.speedups() compares them")
            code.slow(timing_note(len(ids), n_new))
            measured = shared_timing(
                ("kv_cache", prompt, n_new),
                lambda progress: time_generation_steps(model, ids, n_new, REPEATS, WARMUP, threads=THREADS,
                                                       progress=progress),
                where=f"CPU, {THREADS} thread", runs=f"median of {REPEATS} interleaved runs after {WARMUP} warm-up",
                automatic=False)
            table = {"": ["with cache", "without cache"],
                     "K, V vectors projected": [f"{work.projected:,}" for work in (with_cache, without_cache)],
                     "scores q·k computed": [f"{work.scores:,}" for work in (with_cache, without_cache)]}
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
    lm = code.call("lm", load_smollm, via=smollm, note="SmolLM2-135M: a real cache, measured as it grows"
                   ) if prompt.strip() else None  # an empty prompt is already refused above
    if lm is not None:
        with page.guard():
            llm.prompt_ids(page, lm, prompt, defaults.KV_SMOLLM_TOKENS, chat=False)  # says on the page what was cut
            ids, _ = code.call("smol_ids, cut", generation.prompt_ids, lm, prompt, False, defaults.KV_SMOLLM_TOKENS)
            grown = code.call("grown", cache_growth, code.let("llama", lambda: lm.model), ids, defaults.KV_SMOLLM_STEPS,
                              via=lambda _, ids, n_new: llm.growth(ids, n_new, _lm=lm),
                              note="greedy tokens with the cache, Σ over layers of K.numel() + V.numel() after each")
            code.let("cache_sizes", lambda: grown.numbers)
            # the cache-size table's row, from SmolLM2's config.json
            smol = code.call("smol", cs.published, "SmolLM2-135M", note="against the cache-size table's closed form")
            per_token = code.let("per_token", lambda: sorted({b - a for a, b in zip(grown.numbers, grown.numbers[1:])}))
            code.call("closed_form_per_token", smol.elements_per_token)
            closed_form = f"2 · {smol.layers} layers · {smol.kv_heads} KV heads · {smol.head_dim} · tokens"
            st.code(lm.tokenizer.decode(ids) + "⟶" + lm.tokenizer.decode(grown.tokens), language=None, wrap_lines=True)
            left, right = st.columns([3, 2])
            with left:
                figures.show(figures.lines(
                    grown.positions, {"measured: Σ over layers of K.numel() + V.numel()": grown.numbers,
                                      closed_form: [smol.elements_per_token() * t for t in grown.positions]},
                    dashed=[closed_form], title=f"SmolLM2's cache after the prompt and each of "
                                                f"{defaults.KV_SMOLLM_STEPS} greedy tokens",
                    x_title="tokens in the cache", y_title="numbers cached", height=320))
            with right:
                m1, m2 = st.columns(2)
                m1.metric("Measured growth per token", ", ".join(f"{n:,}" for n in sorted(per_token)))
                m2.metric("The cache-size table's figure", f"{smol.elements_per_token():,}")
                st.caption(f"{smol.layers} layers each append one K and one V row for each of the {smol.kv_heads} "
                           f"key-value heads (GQA: {smol.heads} query heads share them), {smol.head_dim} numbers each: "
                           f"{smol.elements_per_token():,} numbers a token, "
                           f"{smol.bytes_per_token('fp32') / 1024:.0f} KiB "
                           f"in our float32, {smol.bytes_per_token('bf16') / 1024:.1f} KiB in bf16 as the KV cache of "
                           "real models page lists it. Greedy, so the same text on every visit.")


body()
