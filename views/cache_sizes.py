import streamlit as st

from engine.transformer import cache_sizes as cs
from ui import figures, tables
from ui.page import Page, equations

page = Page("cache_sizes")
code = page.code
page.intro(
    "How much memory the KV cache of a real model takes, from its published configuration: per token, and "
    "for your context length, batch and number format. Set the sliders under “Your model” to add your own "
    "configuration; it heads the table and the charts."
)
c1, c2, c3 = st.columns(3)
context = int(page.select("Context length (tokens)", "ctx", [str(2**i) for i in range(8, 18)], "4096", where=c1))
batch = page.slider("Batch", "batch", 1, 64, 1, where=c2)
dtype = page.select("Number format", "dtype", list(cs.DTYPE_BYTES), "bf16", where=c3)

st.markdown("**Your model**")
r1, r2, r3, r4 = st.columns(4)
layers = page.slider("Layers", "L", 1, 128, 32, where=r1)
heads = page.slider("Query heads", "H", 1, 128, 32, where=r2)
kv_heads = page.slider("KV heads", "kv", 1, 128, 8, where=r3)
head_dim = page.slider("Head dimension", "hd", 16, 256, 128, 16, where=r4)

rows = list(cs.MODELS)
with page.guard():
    yours = code.call("yours", cs.CacheConfig, "Your model", layers=layers, heads=heads, kv_heads=kv_heads,
                      head_dim=head_dim)
    rows = code.call("rows", cs.with_published, yours)
per_token, total = code.call("per_token, total", cs.cache_bytes, rows, context, batch, dtype,
                             note="bytes per token = L × 2 × n_kv × d_h × b (MLA: L × (d_c + d_h^R) × b); "
                                  "× context × batch in total")
GiB = 1024**3
left, right = st.columns([3, 2])
with left:
    tables.dataframe({
        "model": [m.name for m in rows],
        "attention": [m.attention for m in rows],
        "layers": [m.layers for m in rows],
        "KV heads × dim (or d_c + d_h^R)": [f"{m.latent_dim} + {m.rope_dim}" if m.latent_dim else
                                            f"{m.kv_heads} × {m.head_dim}" for m in rows],
        f"KiB per token ({dtype})": [round(b / 1024, 1) for b in per_token],
        "GiB in total": [round(b / GiB, 3) for b in total],
    }, hide_index=True)
    figures.show(figures.bars([m.name for m in rows], {"KiB per token": [b / 1024 for b in per_token]},
                              title=f"Cache per token, {dtype}", y_title="KiB"))
    code.figure('px.bar(x=[m.name for m in rows], y=[b / 1024 for b in per_token], '
                'labels={"x": "model", "y": "KiB per token"}, title=f"Cache per token, {dtype}")')
    contexts = [2**i for i in range(8, 18)]
    groups = code.call("groups", cs.coinciding, rows, note="models with the same cache per token: one line each")
    lines = code.let("lines", lambda: [" = ".join(m.name for m in group) for group in groups])
    curves = {line: [group[0].total_bytes(c, batch, dtype) / GiB for c in contexts]
              for line, group in zip(lines, groups)}
    figures.show(figures.lines(contexts, curves, log_x=True, log_y=True, markers=False, x_title="context (tokens)",
                               y_title="GiB", title=f"Total cache against context, batch {batch}"))
    shared = "; ".join(" = ".join(m.name for m in group) for group in groups if len(group) > 1)
    notes = [f"Models with the same cache per token share one line: {shared}." if shared else
             "No two models here have the same cache per token."]
    notes += [f"{small.name} and {large.name} differ by {gap:.1%}, so their lines almost touch."
              for small, large, gap in code.call("nearly", cs.nearly_coinciding, groups)]
    st.caption(" ".join(notes))
with right:
    equations(
        ("MHA, GQA, MQA", r"\text{bytes/token} = L \times 2 \times n_{kv} \times d_h \times b"),
        ("MLA (000 §8.5.1, §8.7)", r"\text{bytes/token} = L \times (d_c + d_h^R) \times b"),
        ("in total", r"\text{bytes} = \text{bytes/token} \times \text{context} \times \text{batch}"),
    )
    st.subheader("DeepSeek-V2's saving")
    reductions = code.call("reductions", cs.deepseek_v2_reductions,
                           note="DeepSeek-V2's MLA cache against three baselines, as fractions saved")
    tables.dataframe({"against": list(reductions), "cache saved": [f"{r:.1%}" for r in reductions.values()]},
                     hide_index=True)
    st.caption(f"The paper reports {cs.DEEPSEEK_V2_REPORTED_REDUCTION:.1%} against DeepSeek 67B, its dense "
               "predecessor (95 layers, 8 KV heads of 128), with V2's cache stored at about 6 bits a number. "
               "Against the same model with full multi-head attention and equal precision, MLA saves more.")
