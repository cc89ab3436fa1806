import streamlit as st

from engine import errata
from engine.positions import decoupled as mla
from engine.positions.rope import rope_frequencies
from ui import boundary, errata_panel, figures
from ui.page import Page, equations, gaps
from ui.positions import rope_base


@st.cache_resource(max_entries=64, show_spinner=False)
def computed(cfg: mla.MLAConfig, T: int) -> dict:
    """The weights, the hidden states and both forms' attention for a setting, once per server, the default first:
    shared read-only, as each student's run built them again from many small torch steps, and under a class each
    gave up the GIL and queued behind other sessions (1.5% of the server's py-spy samples at 300 students)."""
    weights, h = mla.init_mla(cfg, seed=0), mla.hidden_states(T, cfg)
    return {"weights": weights, "h": h, "explicit": mla.mla_explicit(h, weights, cfg),
            "absorbed": mla.mla_absorbed(h, weights, cfg), "content_error": mla.rope_on_content_error(h, weights, cfg)}


page = Page("decoupled_rope")
page.intro(
    "Multi-head latent attention caches one small latent c^KV per token and folds the key up-projection W_uk "
    "into the query. RoPE spoils that: its rotation depends on the key's position, and it would sit between "
    "W_Q and W_uk where no fixed matrix can absorb it (000 eq. 111-112). The decoupled form gives each query and "
    "key a separate small RoPE part, and caches that part's key, k^R, beside c^KV."
)
SOURCE_LABELS = {"c^KV (000)": "latent", "h (DeepSeek-V2)": "hidden"}


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3, c4 = st.columns(4)
    n_heads = page.slider("Heads", "H", 1, 8, 4, where=c1)
    d_h = page.slider("d_h (content)", "dh", 2, 32, 16, 2, where=c2)
    d_h_rope = page.slider("d_h^R (RoPE)", "dhr", 2, 16, 8, 2, where=c3)
    d_c = page.slider("d_c (latent)", "dc", 1, 64, 16, where=c4)
    c1, c2, c3 = st.columns(3)
    T = page.slider("Tokens", "T", 1, 16, 6, where=c1)
    source = page.select("k^R computed from", "kr", list(SOURCE_LABELS),
                         help="000 eq. 117 rotates W_K^R c^KV; DeepSeek-V2 rotates W^KR h_t", where=c2)
    base = rope_base(page, where=c3)

    code = page.code
    with page.guard():
        frequencies = code.call("frequencies", rope_frequencies, d_h_rope, base,  # validates the base first
                                note="000 eq. 100: the turn per position of each pair of q^R and k^R")
        cfg = code.call("cfg", mla.MLAConfig, n_heads=n_heads, d_h=d_h, d_h_rope=d_h_rope, d_c=d_c, base=base,
                        rope_key_from=SOURCE_LABELS[source])
        run = computed(cfg, T)
        weights = code.call("weights", mla.init_mla, cfg, seed=0, via=lambda *_, **__: run["weights"])
        h = code.call("h", mla.hidden_states, T, cfg, via=lambda *_: run["h"])
        explicit = code.call("explicit", mla.mla_explicit, h, weights, cfg, via=lambda *_: run["explicit"],
                             note="000 eq. 115-117: every head's full q_t and k_j from the up-projections")
        absorbed = code.call("absorbed", mla.mla_absorbed, h, weights, cfg, via=lambda *_: run["absorbed"],
                             note="the same scores against the cache alone: W_uk absorbed into the query, W_uv "
                                  "into W_o")
        code.note("the two differ by float64 rounding alone")
        code.let("output_gap", lambda: float((absorbed.output - explicit.output).abs().max()))
        code.let("weights_gap", lambda: float((absorbed.weights - explicit.weights).abs().max()))
        code.figure('px.imshow(explicit.weights[0].numpy(), labels={"x": "key", "y": "query"}, '
                    'title="Head 1, causal attention")')
        left, right = st.columns([3, 2])
        with left:  # the figure first; the checks beside it, above the equations
            tokens = [f"t{i + 1}" for i in range(T)]
            figures.show(figures.heatmap(explicit.weights[0].numpy(), tokens, tokens, title="Head 1, causal attention",
                                         x_title="key", y_title="query", annotate=T <= 8))
            counts = code.call("counts", mla.cache_elements_per_token, cfg,
                               note="000 after eq. 121: MLA caches c^KV and k^R per token and layer")
            figures.show(figures.bars(list(counts), {"numbers cached per token and layer": list(counts.values())},
                                      title=f"Cache: {counts['MLA (c^KV + k^R)']} against "
                                            f"{counts['MHA (K and V of every head)']} numbers per token",
                                      y_title="numbers per token"))
        with right:
            gaps(("Output gap", absorbed.output, explicit.output), ("Weights gap", absorbed.weights, explicit.weights))
            content_error = code.call("content_error", mla.rope_on_content_error, h, weights, cfg,
                                      via=lambda *_: run["content_error"],
                                      note="000 eq. 111-112: RoPE on the content part cannot be absorbed")
            st.metric("Score error if RoPE sat on the content part", f"{content_error:.2f}",
                      help="max score error if the content parts were rotated and W_uk absorbed them anyway")
            st.caption("Explicit builds every head's full q_t and k_j from the up-projections; absorbed scores "
                       "against the cache alone, with W_uk in the query and W_uv in the output projection. Both in "
                       "float64, so they agree to rounding. The third number scores RoPE'd content parts as if the "
                       "rotation could be dropped into W_uk: far off, which is why the RoPE part is kept apart.")
            equations(
                ("000 eq. 116", r"q_t = \big[\,W_{\uparrow Q}\, c_t^Q \;;\; \mathrm{RoPE}(W_Q^R\, c_t^Q)\,\big]"),
                ("000 eq. 117", r"k_j = \big[\,W_{\uparrow K}\, c_j^{KV} \;;\; \mathrm{RoPE}(W_K^R\, c_j^{KV})\,\big]"),
                ("000 eq. 115", r"o_t = \sum_{j \le t} \mathrm{softmax}\Big("
                                r"\frac{q_t^\top k_j}{\sqrt{d_h + d_h^R}}\Big)"
                                r"\, v_j^C"),
                ("the score splits",
                 r"q_t^\top k_j = \underbrace{(W_{\uparrow K}^\top q_t^C)^\top c_j^{KV}}_{\text{absorbed}}"
                                     r" + \underbrace{q_t^{R\top} k_j^R}_{\text{cached } k^R}"),
                ("000 after eq. 121: the cache",
                 r"c_t^{KV} = W_{\downarrow KV}\, h_t,\quad k_t^R = \mathrm{RoPE}(\cdot)"),
            )
            st.caption("000 eq. 117 computes the key's RoPE part from c^KV; DeepSeek-V2 computes it from h_t and "
                       "shares it across heads. Switch the source above: absorption holds either way.")
            turns = ", ".join(f"{float(f):.3g}" for f in frequencies)
            st.caption(f"RoPE here uses base {base:g} (000's and 004's code: 100000; 001 and 002: 10000, as on the "
                       "RoPE "
                       f"page): the {d_h_rope // 2} pairs of q^R and k^R turn by {turns} radians per position.")
        errata_panel.show(errata.mla_query_cache(n_heads, d_c, d_h_rope))


body()
