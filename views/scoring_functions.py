import numpy as np
import streamlit as st
import torch

from engine import errata
from engine.attention import scoring
from engine.errors import InputError
from ui import errata_panel, figures, tables
from ui.inputs import format_matrix, parse_matrix
from ui.page import Page, equations

page = Page("scoring_functions")
page.intro(
    "An attention layer scores every key against the query, turns the scores into weights with a softmax "
    "and returns the weighted average of the values. Only the scoring function differs between the classic "
    "variants: pick one, and mask padding keys to see them get weight 0."
)
# 002 §2.1's worked example: decoder state s_{t-1} as the query, encoder states h_1..h_3 as keys and values.
EXAMPLE_Q, EXAMPLE_K = errata.WORKED_QUERY.numpy(), errata.WORKED_KEYS.numpy()
SCORING_LABELS = {"Dot": "dot", "Scaled dot": "scaled_dot", "General (bilinear)": "general", "Additive": "additive"}
MAX_KEYS = 10
# the Random inputs' sliders (label, key, lowest, highest, default) and the Typed ones' boxes (label, key, example)
RANDOM_SIZES = (("Queries n", "n", 1, 8, 3), ("Keys m", "m", 1, MAX_KEYS, 5), ("d_q", "dq", 1, 16, 4),
                ("d_k", "dk", 1, 16, 4), ("d_v", "dv", 1, 8, 2), ("Seed", "seed", 0, 99, 0))
TYPED = (("Q (one query per row)", "Q", EXAMPLE_Q), ("K (one key per row)", "K", EXAMPLE_K),
         ("V (one value per key)", "V", EXAMPLE_K))

c1, c2, c3 = st.columns([2, 2, 1])
source = page.select("Inputs", "inputs", ["Worked example (002 §2.1)", "Random", "Typed"], where=c1)
kind_label = page.select("Scoring function", "score", list(SCORING_LABELS), where=c2)
pad = page.slider("Padding keys", "pad", 0, MAX_KEYS - 1, 0,
                  help="Mask this many keys at the end, as padding of a shorter sequence (001 §1.4)", where=c3)
kind = SCORING_LABELS[kind_label]
SCORE_NOTES = {"dot": "000 eq. 42: dot-product scores a(q, k) = q kᵀ",
               "scaled_dot": "000 eq. 57, 001 §1.4: scaled dot-product scores a(q, k) = q kᵀ / √d",
               "general": "000 eq. 46: general (bilinear) scores a(q, k) = q W kᵀ",
               "additive": "000 eq. 47, 001 §1.4: additive scores a(q, k) = w_vᵀ tanh(W_q q + W_k k)"}
code = page.code


def random_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n, m, d_q, d_k, d_v, seed = (page.slider(*size, where=column) for size, column in zip(RANDOM_SIZES, st.columns(6)))
    return code.call("Q, K, V", scoring.random_qkv, n, m, d_q, d_k, d_v, seed,
                     note="random queries, keys and values, one per row (000 eq. 54, 60)")


def typed_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    Q, K, V = (parse_matrix(page.text(label, key, format_matrix(example), 400, area=True, where=column), key)
               for (label, key, example), column in zip(TYPED, st.columns(3)))
    return written(Q, K, V, "the typed queries, keys and values, one per row (000 eq. 54, 60)")


def written(Q: np.ndarray, K: np.ndarray, V: np.ndarray, note: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Matrices the snippet writes out as float32 tensors."""
    q, k, v = Q.tolist(), K.tolist(), V.tolist()  # nested lists: the snippet writes them as literals
    return (code.let("Q", lambda: torch.tensor(q), note=note), code.let("K", lambda: torch.tensor(k)),
            code.let("V", lambda: torch.tensor(v)))


weights = None  # until the inputs are valid
with page.guard():
    if source == "Random":
        Q, K, V = random_inputs()
    elif source == "Typed":
        Q, K, V = typed_inputs()
    else:
        Q, K, V = written(EXAMPLE_Q, EXAMPLE_K, EXAMPLE_K, "002 §2.1's worked example: the decoder state s_{t−1} as "
                                                          "the query, the encoder states h_1..h_3 as keys and values")
    m = K.shape[0]
    if m > MAX_KEYS:
        raise InputError(f"K has {m} keys; this page shows at most {MAX_KEYS}")
    if pad >= m:
        raise InputError(f"masking {pad} of {m} keys leaves none to attend to; mask at most {m - 1}")
    if V.shape[0] != m:
        raise InputError(f"K has {m} rows but V has {V.shape[0]}: every key needs one value")
    valid_lens = code.let("valid_lens", lambda: torch.full((len(Q),), len(K) - pad),
                          note="001 §1.4: the last `pad` keys are padding, so every query's valid length is m − pad")
    with st.expander("Parameters of general and additive scoring"):
        p1, p2 = st.columns(2)
        hidden = page.slider("Hidden size h of additive scoring", "hidden", 1, 16, 4, where=p1)
        param_seed = page.slider("Parameter seed", "pseed", 0, 99, 0, where=p2)
    params = None  # dot and scaled dot have no parameters
    if kind in ("general", "additive"):
        params = code.call("params", scoring.init_scoring_params, Q.shape[1], K.shape[1], hidden, param_seed,
                           note="the parameters W (000 eq. 46) and W_q, W_k, w_v (000 eq. 47)")
    score_args = (Q, K, kind) if params is None else (Q, K, kind, params)
    logits = code.call("logits", scoring.scores, *score_args, note=SCORE_NOTES[kind])
    weights = code.call("weights", scoring.masked_softmax, logits, valid_lens,
                        note="001 §1.4: masked softmax, the padding keys get weight exactly 0")
    output = code.let("output", lambda: weights @ V, note="001 §1.2, 000 eq. 62: O = α V, one row per query")
    code.figure(f'px.imshow(weights.numpy(), title="Weights α = masked softmax of the {kind} scores")')

left, right = st.columns([3, 2])
with left:
    if weights is not None:
        keys = [f"k{j + 1}" for j in range(K.shape[0])]
        queries = [f"q{i + 1}" for i in range(Q.shape[0])]
        h1, h2 = st.columns(2)
        with h1:
            figures.show(figures.heatmap(logits.numpy(), keys, queries, zmin=None, zmax=None, zmid=0.0,
                                         title=f"Scores a(q, k), {kind_label.lower()}", x_title="key",
                                         y_title="query", colorscale="RdBu_r"))
        with h2:
            figures.show(figures.heatmap(weights.numpy(), keys, queries, title="Weights α = masked softmax",
                                         x_title="key", y_title="query"))
        st.markdown("**Output** O = α V, one row per query")
        tables.dataframe({f"dim {j + 1}": output[:, j].numpy() for j in range(output.shape[1])}, hide_index=True)
with right:
    formulas = {
        "dot": ("000 eq. 42 (dot)", r"a(q, k) = q\,k^\top"),
        "scaled_dot": ("000 eq. 57, 001 §1.4 (scaled dot)", r"a(q, k) = \frac{q\,k^\top}{\sqrt{d}}"),
        "general": ("000 eq. 46 (general)", r"a(q, k) = q\,W\,k^\top"),
        "additive": ("000 eq. 47, 001 §1.4 (additive)", r"a(q, k) = w_v^\top \tanh(W_q q + W_k k)"),
    }
    equations(
        *[(cite + (", in use" if name == kind else ""), r"\boxed{" + tex + "}" if name == kind else tex)
          for name, (cite, tex) in formulas.items()],
        ("001 §1.4 (masked softmax, valid length ℓ)",
         (r"\alpha_{ij} = \begin{cases} \dfrac{\exp a_{ij}}{\sum_{j' \le \ell} \exp a_{ij'}} & j \le \ell"
          r" \\ 0 & j > \ell \end{cases}")),
        ("001 §1.2, 000 eq. 62", r"O = \alpha V"),
    )
if weights is not None and source.startswith("Worked") and kind == "dot" and pad == 0:
    errata_panel.show(errata.worked_example_002())
