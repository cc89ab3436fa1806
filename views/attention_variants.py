import streamlit as st
import torch

from engine.llm import generation
from engine.llm.heads import group_attention
from engine.llm.smollm import load as load_smollm
from engine.transformer.variants import (VARIANTS, absorbed_and_unabsorbed, build_variants, decode_step_timings,
                                         group_membership)
from ui import boundary, figures, llm, tables, variants
from ui.measured import shared_timing, timing_lines
from ui.page import Page, equations, gaps
from ui.smollm import smollm


@st.cache_resource(max_entries=64, show_spinner=False)
def mla_outputs(d_model: int, n_heads: int, d_latent: int) -> tuple[torch.Tensor, torch.Tensor]:
    """absorbed_and_unabsorbed, once per sizes; shared, as the page only reads the two outputs (st.cache_data
    unpickled them at every run)."""
    return absorbed_and_unabsorbed(d_model, n_heads, d_latent)


page = Page("attention_variants")
code = page.code
page.intro(
    "Four ways to share or compress keys and values, at the same d_model and number of query heads. "
    "MHA caches K and V for every head; GQA for g groups of heads; MQA for one; MLA caches one latent "
    "c^KV per token and rebuilds nothing, because W_uk folds into the query and W_uv into the output."
)
c1, c2, c3, c4 = st.columns(4)
default_C, default_h, default_g, default_dc = variants.DEFAULT_SIZES
d_model = page.slider("d_model", "C", 64, 512, default_C, 64, where=c1)
n_heads = page.slider("Query heads h", "h", 1, 16, default_h, where=c2)
divisors = [str(g) for g in range(1, n_heads + 1) if n_heads % g == 0]  # g must divide h (001 appendix)
n_groups = int(page.select("GQA groups g", "g", divisors, str(default_g) if str(default_g) in divisors else divisors[0],
                           where=c3))
d_latent = page.slider("MLA latent d_c", "dc", 8, 512, default_dc, 8, where=c4)
CONTEXTS = variants.CONTEXTS
BYTES = 4  # float32

with page.guard():
    modules = code.call("modules", build_variants, d_model, n_heads, n_groups, d_latent, via=variants.variant_modules,
                        note="MHA, GQA (g groups), MQA and MLA at the same d_model and query heads")
    per_token = code.let("per_token", lambda: {name: m.cache_per_token() for name, m in modules.items()},
                         note="001 appendix: 2 g d_k numbers per token and layer (g = h: MHA, g = 1: MQA); MLA: d_c")
    left, right = st.columns([3, 2])
    with right:  # drawn first: the timing below may take a second
        equations(
            ("001 appendix, GQA", r"h_i = \mathrm{softmax}\Big(\frac{q'_i\, k'^{\top}_{\mathrm{group}(i)}}"
                                  r"{\sqrt{d_k}}\Big)\, v'_{\mathrm{group}(i)}"),
            ("g = h: MHA; g = 1: MQA", r"\text{cache} = 2\, g\, d_k \text{ numbers per token and layer}"),
            ("000 eq. 91", r"K = X W_{\downarrow KV} W_{\uparrow K},\quad V = X W_{\downarrow KV} W_{\uparrow V}"),
            ("000 eq. 93", r"QK^\top = X\,(W_Q W_{\uparrow K}^\top)\,(X W_{\downarrow KV})^\top"),
            ("000 eq. 99", r"V_{(i)} W_O^{(i)} = (X W_{\downarrow KV})\,(W_{\uparrow V} W_O^{(i)})"),
        )
    with left:
        tables.dataframe({
            "variant": list(VARIANTS),
            "cached per token and layer": ["K, V of all h heads", f"K, V of {n_groups} groups", "one K, one V",
                                           "c^KV only"],
            "numbers": list(per_token.values()),
            "against MHA": [f"{v / per_token['MHA']:.3f}×" for v in per_token.values()],
            f"MiB per layer at {CONTEXTS[-1]:,} tokens": [f"{v * CONTEXTS[-1] * BYTES / 2**20:.1f}"
                                                           for v in per_token.values()],
        }, hide_index=True)
        sizes = (d_model, n_heads, n_groups, d_latent)
        code.later("timings", decode_step_timings, modules, d_model, CONTEXTS, variants.REPEATS, variants.WARMUP,
                   threads=variants.THREADS, note="one decode step of each variant against caches of these lengths")
        code.slow(variants.timing_note(*sizes))
        code.figure("go.Figure([go.Scatter(x=" + repr(list(CONTEXTS)) + ", y=[t.median * 1e3 for t in series], "
                    "name=name) for name, series in timings.items()], layout=dict(xaxis_type='log', "
                    "yaxis_type='log', xaxis_title='tokens in the cache', yaxis_title='ms per step', "
                    "title='One decode step against the cache'))")
        measured = shared_timing(variants.timing_key(*sizes), variants.measure(*sizes), where=variants.WHERE,
                                 runs=variants.RUNS, automatic=True)
        timings = measured.value
        figures.show(timing_lines(CONTEXTS, timings, log_x=True, log_y=True, x_title="tokens in the cache",
                                  y_title="ms per step", title="One decode step against the cache: median, "
                                                               "fastest to slowest run"))
        longest = {name: series[-1] for name, series in timings.items()}
        tables.dataframe({
            "variant": list(VARIANTS),
            f"ms per step at {CONTEXTS[-1]:,} tokens": [f"{t.median * 1e3:.2f} ({t.spread[0] * 1e3:.2f}–"
                                                         f"{t.spread[1] * 1e3:.2f})" for t in longest.values()],
            "against MHA": [f"{t.median / longest['MHA'].median:.2f}×" for t in longest.values()],
        }, hide_index=True)
        st.caption(f"Timings {measured.label}; in brackets the fastest and slowest run. A step projects one new "
                   "token, appends it to the cache and attends over the cache: at short contexts the fixed work "
                   "hides the cache, at long ones reading (and copying) it decides. One thread: on a shared "
                   "machine two threads wait for each other, and the time would be the scheduler's.")
        st.subheader("MLA: absorbed equals unabsorbed")
        gaps(("max |absorbed − unabsorbed| output", *code.call(
            "absorbed, unabsorbed", absorbed_and_unabsorbed, d_model, n_heads, d_latent, via=mla_outputs,
            note="000 eq. 91-99: MLA with W_uk, W_uv absorbed into the query and output, and without")))
        st.caption("Unabsorbed rebuilds K = c^KV W_uk and V = c^KV W_uv for every cached token at every step; "
                   "absorbed scores against c^KV directly. float32 rounding is all that separates them.")


@boundary.fragment  # its controls rerun this section alone: the variants' timing above stays as drawn
def gqa_in_smollm(lm) -> None:
    """Grouped-query attention read off a real model: the query heads that share one key-value head."""
    with page.guard():
        cfg = lm.config
        r1, r2, r3 = st.columns([3, 1, 1])
        text = llm.short_prompt(page, where=r1)
        layer = page.slider("SmolLM2 layer", "layer", 0, cfg.n_layers - 1, 3, where=r2)
        kv = page.slider("Key-value head", "kv", 0, cfg.n_kv_heads - 1, 1, where=r3)
        llm.prompt_ids(page, lm, text, llm.SHORT_TOKENS, chat=False)  # says on the page what was cut
        ids, _ = code.call("ids, cut", generation.prompt_ids, lm, text, False, llm.SHORT_TOKENS)
        grouped = code.call("grouped", group_attention, lm, ids, layer, kv,
                            via=lambda lm, ids, layer, kv: llm.group(ids, layer, kv, _lm=lm),
                            note="001 appendix: the query heads that share key-value head kv, one K and V for all")
        code.let("head_weights", lambda: grouped.weights)
        code.let("recomputed_gap", lambda: grouped.recomputed_gap)
        labels = llm.token_labels(lm, ids)
        left, right = st.columns([3, 2])
        with left:
            figures.show(figures.heatmap(
                group_membership(cfg.n_heads, cfg.n_kv_heads).T.numpy(), [f"q {h}" for h in range(cfg.n_heads)],
                [f"K, V {g}" for g in range(cfg.n_kv_heads)], x_title="query head", y_title="key-value head",
                title=f"Query head h reads key-value head h // {cfg.n_heads // cfg.n_kv_heads}", showscale=False))
        with right:
            st.metric(f"Heads {grouped.heads[0]}–{grouped.heads[-1]} recomputed from K, V head {kv}'s one K, max gap",
                      f"{grouped.recomputed_gap:.1e}")
            shares = ", ".join(f"{share:.0%} (heads {a} and {b})" for (a, b), share in grouped.differences.items())
            st.caption(f"Query heads {', '.join(map(str, grouped.heads))} score against one K and mix one V, each "
                       f"T × {cfg.head_dim}, cached once for the three: {2 * cfg.n_kv_heads * cfg.head_dim} numbers a "
                       f"token and layer, where MHA would keep {2 * cfg.n_heads * cfg.head_dim}. Their queries differ, "
                       f"so they attend differently: one query's rows in two of them differ by {shares} of their "
                       "weight on average (total variation).")
        for column, head, weights in zip(st.columns(len(grouped.heads)), grouped.heads, grouped.weights):
            with column:
                figures.show(figures.heatmap(weights.numpy(), labels, labels, f"Layer {layer}, query head {head}",
                                             x_title="key", y_title="query", annotate=False))


st.subheader("GQA in a real model: SmolLM2-135M")
lm = code.call("lm", load_smollm, via=smollm, note="GQA in a real model: SmolLM2-135M")
if lm is not None:  # None: the section says how to fetch SmolLM2's file
    gqa_in_smollm(lm)
