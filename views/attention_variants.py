import streamlit as st
import torch

from engine.transformer.variants import VARIANTS, LatentAttention, build_variant, decode_step_seconds
from ui import figures
from ui.page import Page, equations, gaps

page = Page("attention_variants")
page.intro(
    "Four ways to share or compress keys and values, at the same d_model and number of query heads. "
    "MHA caches K and V for every head; GQA for g groups of heads; MQA for one; MLA caches one latent "
    "c^KV per token and rebuilds nothing, because W_uk folds into the query and W_uv into the output."
)
c1, c2, c3, c4 = st.columns(4)
d_model = page.slider("d_model", "C", 64, 512, 256, 64, where=c1)
n_heads = page.slider("Query heads h", "h", 1, 16, 8, where=c2)
with c3:
    divisors = [str(g) for g in range(1, n_heads + 1) if n_heads % g == 0]  # g must divide h (001 appendix)
    n_groups = int(page.select("GQA groups g", "g", divisors, "2" if "2" in divisors else divisors[0]))
d_latent = page.slider("MLA latent d_c", "dc", 8, 512, 64, 8, where=c4)

with page.guard():
    modules = {name: build_variant(name, d_model, n_heads, n_groups, d_latent).eval() for name in VARIANTS}
    per_token = {name: m.cache_per_token() for name, m in modules.items()}
    left, right = st.columns([3, 2])
    with left:
        st.table({
            "variant": list(VARIANTS),
            "cached per token and layer": ["K, V of all h heads", f"K, V of {n_groups} groups", "one K, one V",
                                           "c^KV only"],
            "numbers": list(per_token.values()),
            "against MHA": [f"{v / per_token['MHA']:.3f}×" for v in per_token.values()],
        })
        contexts = [64, 512, 2048]

        @st.cache_data(max_entries=16, show_spinner="Timing one decode step per variant and context…")
        def step_times(d_model: int, n_heads: int, n_groups: int, d_latent: int) -> dict[str, list[float]]:
            torch.manual_seed(0)
            return {name: [decode_step_seconds(build_variant(name, d_model, n_heads, n_groups, d_latent).eval(),
                                               d_model, c, repeats=5) * 1e3 for c in contexts] for name in VARIANTS}

        figures.show(figures.lines(contexts, step_times(d_model, n_heads, n_groups, d_latent), log_x=True,
                                   title="One decode step's attention against the cache (this machine, CPU)",
                                   x_title="tokens in the cache", y_title="ms per step"))
        st.subheader("MLA: absorbed equals unabsorbed")
        torch.manual_seed(1)
        plain = LatentAttention(d_model, n_heads, d_latent, absorbed=False).eval()
        absorbed = LatentAttention(d_model, n_heads, d_latent, absorbed=True).eval()
        absorbed.load_state_dict(plain.state_dict())
        x = torch.randn(1, 16, d_model)
        with torch.no_grad():
            gaps(("max |absorbed − unabsorbed| output", absorbed(x)[0], plain(x)[0]))
        st.caption("Unabsorbed rebuilds K = c^KV W_uk and V = c^KV W_uv for every cached token at every step; "
                   "absorbed scores against c^KV directly. float32 rounding is all that separates them.")
    with right:
        equations(
            ("001 appendix, GQA", r"h_i = \mathrm{softmax}\Big(\frac{q'_i\, k'^{\top}_{\mathrm{group}(i)}}"
                                  r"{\sqrt{d_k}}\Big)\, v'_{\mathrm{group}(i)}"),
            ("g = h: MHA; g = 1: MQA", r"\text{cache} = 2\, g\, d_k \text{ numbers per token and layer}"),
            ("000 eq. 91", r"K = X W_{\downarrow KV} W_{\uparrow K},\quad V = X W_{\downarrow KV} W_{\uparrow V}"),
            ("000 eq. 93", r"QK^\top = X\,(W_Q W_{\uparrow K}^\top)\,(X W_{\downarrow KV})^\top"),
            ("000 eq. 99", r"V_{(i)} W_O^{(i)} = (X W_{\downarrow KV})\,(W_{\uparrow V} W_O^{(i)})"),
        )
