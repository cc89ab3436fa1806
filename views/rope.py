import math

import streamlit as st
import torch

from engine import errata
from engine.llm import generation, heads
from engine.llm.model import GGUF_PAIRING
from engine.llm.smollm import load
from engine.positions import rope
from ui import boundary, errata_panel, figures, llm
from ui.page import Page, equations, gaps
from ui.positions import pair_paths, rope_base
from ui.smollm import smollm


@st.cache_resource(max_entries=256, show_spinner=False)
def decay_bound_bands(head_dim: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """rope.banded_decay_bound, once per server for each d and base: 7,680 distances each, tens of ms. Shared, as
    the page only reads its tensors: st.cache_data unpickled them at every run."""
    return rope.banded_decay_bound(head_dim, base)


page = Page("rope")
page.intro(
    "RoPE rotates each pair of a query's and key's coordinates by an angle proportional to the token's "
    "position. A dot product of two rotated vectors only sees the difference of their angles, so attention "
    "scores depend on how far apart two tokens are, not where they are. The notes disagree on two details, "
    "so both are choices here: the base (000's and 004's code use 100000; 001 and 002 use 10000) and which dimensions "
    "form a pair."
)
EPS64 = torch.finfo(torch.float64).eps  # the unit rounding is measured in on this page
PAIRING_LABELS = {"Interleaved (2i, 2i+1)": "interleaved", "Half-split (i, i+d/2)": "half"}


@boundary.fragment
def rotation(q: torch.Tensor, head_dim: int, base: float, pairing: str) -> None:
    """The rotation of q's pairs over positions 0..m."""
    m = page.slider("Position m", "m", 0, 200, 10)
    positions = code.let("positions", lambda: torch.arange(m + 1),
                         note="Rotation: q turned to positions 0..m (000 eq. 108-109)")
    path = code.call("path", rope.apply_rope, q, positions, base, pairing)  # (m+1, d)
    norm_gap = code.let("norm_gap",
                        lambda: float(path[-1].norm() - q.norm()) / (torch.finfo(torch.float64).eps
                                                                    * float(q.norm())),
                        note="rotation keeps the norm, up to rounding")
    a, b = (int(x[0]) for x in rope.pair_indices(head_dim, pairing))
    code.figure(f'px.line(x=path[:, {a}], y=path[:, {b}], markers=True, title="Where pair 0 of q travels for '
                f'positions 0..m").update_yaxes(scaleanchor="x")')
    figures.show(pair_paths(path, base, pairing, "Where pairs of q travel for positions 0..m"))
    st.caption("Low pairs turn fast, high pairs barely move: the frequencies fall geometrically. "
               f"‖q‖ = {float(q.norm()):.4f} and ‖R_m q‖ = {float(path[-1].norm()):.4f}: rotation keeps "
               f"the norm; they differ by {norm_gap:+.1f} ε‖q‖, rounding (ε = {EPS64:.1e} in float64).")


@boundary.fragment
def relative(q: torch.Tensor, k: torch.Tensor, base: float, pairing: str) -> None:
    """The score at a fixed offset across 256 positions: constant up to rounding (001 appendix)."""
    offset = page.slider("Offset m − n", "offset", 0, 64, 3)
    positions = code.let("query_positions", lambda: torch.arange(offset, offset + 256),
                         note="Relative property (001 appendix): the score at offset m − n for 256 m")
    float32 = code.let("float32", lambda: torch.float32)
    deviation_float64 = code.call("deviation_float64", rope.score_deviation, q, k, offset, positions,
                                  base, pairing)
    deviation_float32 = code.call("deviation_float32", rope.score_deviation, q, k, offset, positions,
                                  base, pairing, dtype=float32)
    deviations = {f"{name} (ε = {torch.finfo(dtype).eps:.1e})": deviation
                  for name, dtype, deviation in (("float64", torch.float64, deviation_float64),
                                                 ("float32", float32, deviation_float32))}
    figures.show(figures.lines(positions.tolist(), {name: dev.tolist() for name, dev in deviations.items()},
                               title=f"Score at offset {offset} minus its exact value, across 256 positions",
                               x_title="query position m", y_title="deviation / (ε‖q‖‖k‖)", markers=False))
    exact = float(code.call("exact", rope.relative_score, q, k,
                            code.let("offsets", lambda: torch.tensor([offset])), base, pairing))
    code.note("the spread of the score across m, in each type's rounding unit ε‖q‖‖k‖")
    scale64 = code.call("scale64", rope.rounding_scale, q, k)
    scale32 = code.call("scale32", rope.rounding_scale, code.let("q32", lambda: q.float()),
                        code.let("k32", lambda: k.float()))
    spread64 = code.let("spread64", lambda: float(deviation_float64.max() - deviation_float64.min()) * scale64)
    spread32 = code.let("spread32", lambda: float(deviation_float32.max() - deviation_float32.min()) * scale32)
    for column, (name, spread) in zip(st.columns(2), (("float64", spread64), ("float32", spread32))):
        column.metric(f"Spread of the score across m, {name}", f"{spread:.1e}")
    st.caption(f"In exact arithmetic every m gives qᵀR_(−{offset})k = {exact:.6f}; the figure plots what "
               "rounding adds, in units of ε‖q‖‖k‖ of each type (the size of rounding in a dot product of q "
               "and k). Both stay within a few units. float64 may creep up with m because the angle m·θ_i is "
               "itself rounded at about m·ε; float32 does not, since its angles are computed in float64 and "
               "only cos, sin and the products are rounded to float32.")
    grid = code.let("grid", lambda: torch.arange(24))
    scores, grid_deviation = code.call("scores, grid_deviation", rope.score_grid, q, k, grid, base, pairing,
                                       note="q_m · k_n is constant along every diagonal")
    figures.show(figures.heatmap(scores.numpy(), grid.tolist(), grid.tolist(),
                                 title="q_m · k_n: constant along every diagonal", x_title="key position n",
                                 y_title="query position m", zmin=None, zmax=None, colorscale="RdBu_r",
                                 annotate=False, height=460))
    off_diagonal = code.let("off_diagonal", lambda: float(grid_deviation.abs().max()))
    st.caption(f"Every cell is within {off_diagonal:.1f} ε‖q‖‖k‖ (float64) of its diagonal's exact value "
               "qᵀR_(n−m)k.")


@boundary.fragment
def matrix(q: torch.Tensor, k: torch.Tensor, head_dim: int, base: float, pairing: str) -> None:
    """M(i, j) = R_(j−i) (002 §2.3.3) and the identity it gives."""
    i_pos = page.slider("Query position i", "i", 0, 50, 2)
    j_pos = page.slider("Key position j", "j", 0, 50, 5)
    M = code.call("M", rope.relative_matrix, i_pos, j_pos, head_dim, base, pairing,
                  note="002 §2.3.3: M(i, j) = R_i^T R_j = R_(j-i)")
    shown = min(head_dim, 16)
    figures.show(figures.heatmap(M[:shown, :shown].numpy(), list(range(shown)), list(range(shown)),
                                 title=f"M({i_pos}, {j_pos}) = R_{{{j_pos - i_pos}}}, first {shown} dimensions",
                                 zmin=-1, zmax=1, colorscale="RdBu_r", annotate=shown <= 8))
    identity_gap = code.call("identity_error", rope.identity_gap, q, k, i_pos, j_pos, base, pairing)
    st.metric("|q̃_i · k̃_j − qᵀ M(i, j) k|", f"{identity_gap:.1e}",
              help="0 in exact arithmetic; what is left is float64 rounding")
    st.caption(f"That is {identity_gap / rope.rounding_scale(q, k):.1f} ε‖q‖‖k‖ with ε = {EPS64:.1e}: "
               "rounding, not a difference between the two sides.")


def decay(q: torch.Tensor, head_dim: int, base: float) -> None:
    """RoFormer's bound against distance for each base, and the two pairings."""
    code.note("RoFormer §3.4.3: the bound on |q · k| against distance, banded means, for each base")
    bounds = {b: code.call(("distances" if b == min(base, *rope.BASES) else "_") + ", bound_"
                           + (f"{b:.0f}" if b in rope.BASES else "base"),
                           rope.banded_decay_bound, head_dim, b, via=decay_bound_bands)
              for b in sorted({*rope.BASES, base})}
    distances = bounds[min(bounds)][0]
    means = {f"base {b:g}": mean.tolist() for b, (_, mean) in bounds.items()}
    figures.show(figures.lines(distances.tolist(), means,
                               title="RoFormer §3.4.3 bound on |q · k| against distance",
                               x_title="relative distance m − n", y_title="bound / max|h_i − h_(i+1)|",
                               markers=False, log_x=True))
    gap = code.call("gap", rope.compare_bases, distances, *(bounds[b][1] for b in rope.BASES))
    if head_dim == 2:
        st.caption("With one pair its frequency is 1 whatever the base, so the bound is 1 at every distance.")
    else:
        st.caption(f"Each point is the bound's mean over a tenth of a decade of distances: the bound itself "
                   "swings by up to a factor of two between neighbouring distances. Both bases start at "
                   f"{(head_dim / 2 + 1) / 2:g} at r = 0 and end near {gap.floor:.1f}, the level of random "
                   "phases. In between, base 100000's slow pairs stay in phase longer: its bound is up to "
                   f"{gap.widest_ratio:.2f}× base 10000's (at r ≈ {gap.widest_distance:,.0f}), and it falls "
                   f"within {rope.SETTLED:g}× of that level at r ≈ {gap.settled[1]:,.0f} against "
                   f"{gap.settled[0]:,.0f} for base 10000.")
    perm = code.call("perm", rope.interleaved_to_half, head_dim,
                     note="the two pairings differ by a fixed reordering of dimensions")
    positions = code.let("first_positions", lambda: torch.arange(8))
    interleaved = code.call("interleaved", rope.apply_rope, q, positions, base, "interleaved")
    half = code.call("half", rope.apply_rope, q, positions, base, "half")
    permuted = code.call("permuted", rope.apply_rope, code.let("q_permuted", lambda: q[perm]), positions, base,
                         "half")
    gaps(("max |interleaved − half-split| on the same q", interleaved, half),
         ("… after permuting q's dimensions (2i → i, 2i+1 → d/2+i)", interleaved[:, perm], permuted))
    st.caption("The two pairings rotate different coordinates together, so they give different vectors, "
               "but a model trained with one is the other after a fixed reordering of its weights.")


@boundary.fragment
def attention(head_dim: int, base: float, pairing: str, seed: int) -> None:
    """Attention over tokens of one content: RoPE alone makes it fall with distance."""
    T = page.slider("Tokens", "T", 2, 48, 24)
    content, _ = code.call("content, _", rope.random_query_key, head_dim, seed + 1,
                           note="Attention map: every token has the same content (seed + 1)")
    same = code.let("same", lambda: content.expand(T, -1))  # only position can tell the tokens apart
    rotated = code.call("rotated", rope.apply_rope, same, code.let("token_positions", lambda: torch.arange(T)),
                        base, pairing)
    without_rope = code.let("without_rope", lambda: torch.softmax(same @ same.T / math.sqrt(head_dim), -1))
    with_rope = code.let("with_rope", lambda: torch.softmax(rotated @ rotated.T / math.sqrt(head_dim), -1))
    maps = {"Without RoPE: uniform": without_rope, "With RoPE: nearby tokens favoured": with_rope}
    for column, (title, attention_map) in zip(st.columns(2), maps.items()):
        with column:
            figures.show(figures.heatmap(attention_map.numpy(), list(range(T)), list(range(T)), title=title,
                                         x_title="key", y_title="query", annotate=False, zmax=None))
    st.caption("All tokens share one content vector, so without positions every query attends equally; "
               "RoPE alone makes the weights fall with distance.")


@boundary.fragment
def precision(head_dim: int, base: float) -> None:
    """How float32 loses the angle at large positions."""
    position = 10 ** page.slider("Position = 10^x", "logpos", 0.0, 8.0, 4.0, 0.5)
    error = code.call("error", rope.float32_position_error, position, head_dim, base,
                      note="Precision: float32 rounds the angle position × freq_i; position = 10^logpos")
    st.metric(f"Largest float32 angle error at position {position:,.0f}", f"{error:.2e} rad")
    if error > 1e-3:
        st.warning(f"At position {position:,.0f} float32 loses the angle by {error:.2e} radians: float32 "
                   "keeps 24 bits, so position × frequency is rounded at about position × 6e-8. Compute "
                   "angles in float64, or in float32 relative to a nearby reference position.")
    else:
        st.success("float32 angles are accurate here.")


@boundary.fragment
def real_head() -> None:
    """RoPE on a real head of SmolLM2."""
    with page.guard():
        if smollm() is not None:  # None: the tab says how to fetch SmolLM2's file
            lm = code.call("lm", load, via=smollm, note="SmolLM2: RoPE on a real head (base 100000, interleaved)")
            text = llm.short_prompt(page)
            r1, r2, r3 = st.columns(3)
            layer = page.slider("Layer", "layer", 0, lm.config.n_layers - 1, 3, where=r1)
            head = page.slider("Query head", "head", 0, lm.config.n_heads - 1, 4, where=r2)
            # cut is left unnamed: the snippet would write every 0 as `cut` (ui/code.py names values by identity)
            encoded = code.call("encoded", generation.prompt_ids, lm, text, chat=False, limit=llm.SHORT_TOKENS)
            ids = code.let("ids", lambda: encoded[0])
            llm.say_cut(page, ids, encoded[1], llm.SHORT_TOKENS, chat=False)
            i = page.slider("Query token i", "token", 0, len(ids) - 1, min(10, len(ids) - 1), where=r3)
            real = code.call("real", heads.rope_on_head, lm, ids, layer, head, i,
                             via=lambda lm, ids, layer, head, query: llm.rotation(ids, layer, head, query, _lm=lm))
            code.let("computed, closed_form", lambda: (real.computed, real.closed_form))
            labels = llm.token_labels(lm, ids)
            figures.show(pair_paths(real.path, lm.config.rope_base, GGUF_PAIRING,
                                    f"SmolLM2 layer {layer}, head {head}: pairs of q of “{labels[i]}” over "
                                    f"positions 0..{len(real.path) - 1}"))
            figures.show(figures.bars(labels[:i + 1], {"q̃_i · k̃_j as SmolLM2 computed it": real.computed.tolist(),
                                                       "q_i · R_(j−i) k_j, no position in it":
                                                           real.closed_form.tolist()},
                                      title=f"“{labels[i]}” against every key j ≤ i", y_title="score × √d"))
            figures.show(figures.lines(list(range(len(real.shifted))), dict(zip(labels, real.shifted.T.tolist())),
                                       markers=False, x_title="shift s", y_title="q̃_(i+s) · k̃_(j+s)",
                                       title="The same scores with the prompt moved s positions later"))
            gaps(("max |model's q̃_i · k̃_j − closed form|", real.computed, real.closed_form),
                 ("max |moved by s − not moved|", real.shifted, real.shifted[:1]))
            st.caption(f"SmolLM2 was trained with base {lm.config.rope_base:,.0f}, the value of 000's code "
                       "(001 and 002 use 10,000), and its GGUF file stores q and k so that RoPE turns neighbouring "
                       "dimensions (2i, 2i+1), 000 §8.6's interleaved layout: this tab uses both, whatever the "
                       f"controls above say. Query head {head} reads key-value head {real.kv_head}. Over the "
                       f"{len(real.shifted)} shifts each score moves by at most {real.spread:.1f} ε‖q‖‖k‖, float32 "
                       "rounding: it depends on the offset i − j alone.")


def in_the_notes() -> None:
    """The notes' errata on RoPE."""
    errata_panel.rotation_figure()
    for finding in (errata.rope_row_vector(), errata.rope_frequency_formula(), errata.rope_base_and_pairing()):
        errata_panel.show(finding)


c1, c2, c3, c4 = st.columns(4)
head_dim = page.slider("Head dimension d", "d", 2, 128, 64, 2, where=c1)
pairing_label = page.select("Pairing", "pairing", list(PAIRING_LABELS),
                            help="Interleaved: every formula and code in the notes, Meta's Llama code and GGUF "
                                 "files. Half-split: the rotate_half layout of Hugging Face transformers' Llama "
                                 "and GPT-NeoX.", where=c2)
base = rope_base(page, where=c3)
seed = page.slider("Seed", "seed", 0, 99, 0, where=c4)
pairing = PAIRING_LABELS[pairing_label]

code = page.code
with page.guard():
    code.call("frequencies", rope.rope_frequencies, head_dim, base,  # validates d and base before anything is drawn
              note="000 eq. 100: freqs_i = base^(-2i/d)")
    q, k = code.call("q, k", rope.random_query_key, head_dim, seed)
    left, right = st.columns([3, 2])
    with right:
        equations(
            ("000 eq. 100", r"\mathrm{freqs}_i = \theta^{-2i/d},\quad i = 0, \dots, d/2 - 1"),
            ("000 eq. 108-109, 002 §2.3.3",
             r"\begin{pmatrix} x'_{a} \\ x'_{b} \end{pmatrix} = \begin{pmatrix} \cos m\,"
             r"\mathrm{freqs}_i & -\sin m\,\mathrm{freqs}_i \\ \sin m\,\mathrm{freqs}_i & \cos m\,\mathrm{freqs}_i "
             r"\end{pmatrix} \begin{pmatrix} x_{a} \\ x_{b} \end{pmatrix}"),
            ("001 appendix, 002 §2.3.3", r"(R_m q)^\top (R_n k) = q^\top R_m^\top R_n\, k = q^\top M(m, n)\, k,\quad "
             r"M(m, n) = R_{n-m}"),
        )
        st.caption("001's appendix prints θ_i = 10000^{2i/d}; its own code uses the reciprocal, 10000^{−2i/d}, "
                   "and 000's and 004's code the same form with base 100000.")
    with left:
        page.tabs({
            "Rotation": (lambda: rotation(q, head_dim, base, pairing), ("m",)),
            "Relative property": (lambda: relative(q, k, base, pairing), ("offset",)),
            "M(i, j)": (lambda: matrix(q, k, head_dim, base, pairing), ("i", "j")),
            "Decay and bases": (lambda: decay(q, head_dim, base), ()),
            "Attention map": (lambda: attention(head_dim, base, pairing, seed), ("T",)),
            "Precision": (lambda: precision(head_dim, base), ("logpos",)),
            "SmolLM2": (real_head, ("prompt", "layer", "head", "token")),
            "Errata in the notes": (in_the_notes, ()),
        })
