"""Where the notes disagree with each other or err, each computed: what is printed against what holds.

One function per finding returns an Erratum whose numbers come from the engine's own code (RoPE, the
attention scores, MLA's cache), so the page that concerns it and the page that gathers them all show the
same values, and tests assert them. Findings that need a trained model take its numbers as arguments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.attention.scoring import attention
from engine.efficiency.online_softmax import online_attention
from engine.positions.rope import apply_rope, rope_frequencies
from engine.seq2seq.decode import Translation, rescored_attention
from engine.seq2seq.model import Seq2Seq


@dataclass(frozen=True)
class Erratum:
    key: str
    title: str
    where: str  # the place in the notes: "000 eq. 109, second line"
    page: str  # slug of the page that computes it
    kind: str  # "error" (the notes print something false) or "disagreement" (two notes choose differently)
    text: str  # what is printed and what holds instead, in markdown
    columns: tuple[str, str]  # the two sides the rows compare
    rows: dict[str, tuple[str, str]]  # quantity -> (first side, second side)


def _vector(x) -> str:
    return "(" + ", ".join(f"{float(v):.4g}" for v in x) + ")"


def rope_row_vector(angle: float = math.pi / 6) -> Erratum:
    """000 eq. 109 (004 eq. 56): the row vector times R rotates by −θ; the first line (and eq. 108, and the
    code) by +θ."""
    R, q = _rotation(angle), torch.tensor([1.0, 0.0], dtype=torch.float64)
    # the engine's RoPE with d = 2: one pair turning 1 radian per position, so position θ turns it by θ
    rope = apply_rope(q[None], torch.tensor([angle], dtype=torch.float64), 10000.0)[0]
    d, base = 4, 100000.0  # the angle printed for every pair, against the per-pair angles at t = 1
    printed_angles = [1 / base ** (2 / d)] * (d // 2)
    return Erratum(
        "rope_row_vector", "RoPE as a row vector turns the wrong way", "000 eq. 109, second line; 004 eq. 56",
        "rope", "error",
        "000 eq. 109 (printed again as 004 eq. 56): its first line rotates each pair by +θ, as eq. 108 and 000's "
        "code do. Its second line writes the same as the row vector [q_2i q_2i+1] times R(θ), but with eq. 108's "
        "R = [[cos, −sin], [sin, cos]] that product is a rotation by −θ: the row form needs Rᵀ. The same line "
        "also prints the angle t/θ² for every pair, where pair i turns by t/θ^{2i} (here d = 4, base 100000, t = 1).",
        ("eq. 109 as printed", "what holds"),
        {f"q = (1, 0), θ = {math.degrees(angle):.0f}°": (f"q R = {_vector(q @ R)}", f"R q = q Rᵀ = {_vector(R @ q)}"),
         "the engine's RoPE of q at angle θ": ("", _vector(rope)),
         "angles of the pairs at t = 1": (_vector(printed_angles), _vector(rope_frequencies(d, base)))},
    )


def rotation_of_the_row_form(angle: float = math.pi / 6) -> dict[str, tuple[float, float]]:
    """The points eq. 109 compares in 2-D: q = (1, 0), R q (its first line, the code) and q R (its second)."""
    R, q = _rotation(angle), torch.tensor([1.0, 0.0], dtype=torch.float64)
    return {"q": tuple(q.tolist()), "R q: eq. 109's first line, the code": tuple((R @ q).tolist()),
            "q R: eq. 109's second line": tuple((q @ R).tolist())}


def _rotation(angle: float) -> torch.Tensor:
    """Eq. 108's R(θ) = [[cos θ, −sin θ], [sin θ, cos θ]]: (2, 2)."""
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, -s], [s, c]], dtype=torch.float64)


def mla_query_cache(n_heads: int, d_c: int, d_h_rope: int) -> Erratum:
    """000 eq. 95 (004 eq. 42) caches the absorbed query X(W_Q W_↑Kᵀ); eq. 120 (004 eq. 67) says the query needs
    no cache."""
    eq95 = n_heads * d_c + d_c  # each head's absorbed query row (d_c numbers) and eq. 96's latent
    eq121 = d_c + d_h_rope
    v3 = (128, 512, 64)  # DeepSeek-V3: 128 heads, d_c = 512, d_h^R = 64
    return Erratum(
        "mla_query_cache", "MLA caches the key side, not the query",
        "000 eq. 95 against eq. 120-121; 004 eq. 42 against eq. 67-68",
        "decoupled_rope", "error",
        "000 eq. 95 (and 004 eq. 42, the same) caches X(W_Q W_↑Kᵀ), the absorbed query of every past token, and "
        "appends one row per new token. A new token's scores need only its own absorbed query and every past "
        "latent c^KV (eq. 96), so those rows are never read again; eq. 120 (004 eq. 67) says of the query "
        "\"nothing needs to be cached\", and the cache after eq. 121 (004 eq. 68) holds c^KV and k^R only.",
        ("eq. 95 + eq. 96", "eq. 121"),
        {f"numbers cached per token and layer (H = {n_heads}, d_c = {d_c}, d_h^R = {d_h_rope})":
            (f"{eq95:,}", f"{eq121:,}"),
         "the same for DeepSeek-V3 (H = 128, d_c = 512, d_h^R = 64)":
            (f"{v3[0] * v3[1] + v3[1]:,}", f"{v3[1] + v3[2]:,}")},
    )


def rope_frequency_formula(d: int = 8) -> Erratum:
    """001's appendix prints θ_i = 10000^{2i/d} for i = 1..d/2: the reciprocal, and shifted by one index."""
    printed = [10000 ** (2 * i / d) for i in range(1, d // 2 + 1)]
    return Erratum(
        "rope_frequency_formula", "001's RoPE frequencies are inverted", "001, RoPE appendix", "rope", "error",
        "001 writes θ_i = 10000^{2i/d} for i = 1, …, d/2. Its own code and 002 use θ_i = 10000^{−2(i−1)/d}; "
        "000's and 004's code have the same form with base 100000. Either way the first pair turns 1 radian per "
        "position and the others ever more slowly. "
        f"As printed no pair turns at 1 and the angles grow instead (d = {d}).",
        ("001 as printed", "001's code, the engine"),
        {f"θ_1 … θ_{d // 2}": (_vector(printed), _vector(rope_frequencies(d, 10000.0)))},
    )


def rope_base_and_pairing() -> Erratum:
    """The base (000's and 004's code 100000; 001 and 002 10000) and the pairing change every score."""
    q = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64)
    k = torch.tensor([[5.0, 6.0, 7.0, 8.0]], dtype=torch.float64)

    def score(base: float, pairing: str) -> str:
        rotated_q = apply_rope(q, torch.tensor([1]), base, pairing)
        rotated_k = apply_rope(k, torch.tensor([2]), base, pairing)
        return f"{float(rotated_q @ rotated_k.T):.6f}"

    return Erratum(
        "rope_base_and_pairing", "The RoPE base and pairing", "000 §8.6 and 004's code against 001 and 002", "rope",
        "disagreement",
        "000's code, and 004's (the same code), set rope_theta = 100000; 001 and 002 use 10000. Every formula "
        "and code in the notes pairs dimensions (2i, 2i+1). 002's prose says the vector is split \"into two "
        "halves\" and at once writes the pairs (x_2k, x_2k+1): ambiguous prose, not a second method. The "
        "half-split pairing (i, i + d/2) is the rotate_half layout of Hugging Face transformers' Llama (and "
        "GPT-NeoX); Meta's own Llama code and GGUF files keep interleaved pairs. Both choices change the scores: "
        "q = (1, 2, 3, 4) at position 1 against k = (5, 6, 7, 8) at position 2 (70 without RoPE).",
        ("base 10000 (001, 002)", "base 100000 (000's and 004's code)"),
        {f"q·k, {pairing} pairs": (score(10000.0, pairing), score(100000.0, pairing))
         for pairing in ("interleaved", "half")},
    )


def gpt_objective_names(L1: float, L2: float, lam: float, measured: str) -> Erratum:
    """003 eq. 69 names the supervised objective L1 (GPT calls it L2) and eq. 70 drops GPT's λ."""
    return Erratum(
        "gpt_objective_names", "GPT's L1, L2 and L3", "003 §9 eq. 65-70 against the GPT paper", "objectives",
        "error",
        "003 calls the language-model objective L1 (eq. 65) and then the classification objective L1 too "
        "(eq. 69), so L2 of eq. 70 is never defined, and writes L3 = L1 + L2. Radford et al. (2018) name them L1 "
        "and L2 and weight the language-model term: L3 = L2 + λ L1, with λ = 0.5. The numbers: " + measured + ".",
        ("003 as printed", "GPT (Radford et al., 2018)"),
        {"classification objective": ("L1 (eq. 69)", "L2"),
         "L3": (f"L1 + L2 = {L1 + L2:.4f}", f"L2 + {lam:g} L1 = {L2 + lam * L1:.4f}")},
    )


def additive_bias(bias_norm: float, width: int, largest_change: float) -> Erratum:
    """Eq. 47 has no bias inside the tanh; our seq2seq models' W1 has one (See et al.'s b_attn)."""
    return Erratum(
        "additive_bias", "A bias in the additive score", "000 eq. 47; 001 §1.4", "seq2seq_attention",
        "disagreement",
        "000 eq. 47 and 001 §1.4 score vᵀ tanh(W1 s + W2 z) with no bias; the engine's scoring page follows them. "
        "Our trained seq2seq models' W1 carries a bias b, as See et al. (2017) write it: vᵀ tanh(W1 s + W2 z + b). "
        "It adds one vector of parameters; dropping it from the trained additive model moves the attention on "
        "this page's input by the amount below.",
        ("000 eq. 47", "our additive seq2seq model"),
        {"bias inside the tanh": ("none", f"b with {width} entries, ‖b‖ = {bias_norm:.3f}"),
         "largest change of a weight a_tj without b": ("", f"{largest_change:.4f}")},
    )


def model_additive_bias(model: Seq2Seq, result: Translation) -> Erratum:
    """additive_bias of a trained additive model: its W1 bias, and how far its attention in `result` (its own
    translation) moves without it."""
    without = rescored_attention(model, result, result.queries, query_bias=False)
    bias = model.W_query.bias.detach()
    return additive_bias(float(bias.norm()), bias.numel(), float((without - result.attention).abs().max()))


def bahdanau_query(previous: torch.Tensor, current: torch.Tensor, source: str, step: int) -> Erratum:
    """001 §1.5 queries with s_{t−1}; 000 eq. 42 with the decoder state of the step itself, h_i. previous and
    current: (T, S) attention over the characters of source."""

    def peak(row: torch.Tensor) -> str:
        j = int(row.argmax())
        return f"{j} ‘{source[j]}’, a = {float(row[j]):.3f}"

    return Erratum(
        "bahdanau_query", "Which decoder state asks", "000 eq. 42 against 001 §1.5", "seq2seq_attention",
        "disagreement",
        "001 §1.5 (Bahdanau) scores with the previous decoder state s_{t−1} and feeds the context into the GRU; "
        "000 eq. 42 scores with h_i, the state of the step itself (Luong's order: update, then attend), and "
        "concatenates the context after it (eq. 45). Our models follow 001. The same score function and keys, "
        "queried both ways on this page's model and input (trained with s_{t−1}, so s_t attends elsewhere):",
        ("s_{t−1} (001 §1.5, our models)", "s_t (000 eq. 42)"),
        {f"step {step}: the character weighted most": (peak(previous[step]), peak(current[step])),
         "largest difference of a weight, all steps": ("", f"{float((previous - current).abs().max()):.4f}")},
    )


def model_bahdanau_query(model: Seq2Seq, result: Translation, step: int) -> Erratum:
    """bahdanau_query of a model's attention in `result`, its own translation: queried by s_{t−1}, as trained, and
    by s_t, as 000 eq. 42 prints it; `step` is clipped to the translation's last."""
    return bahdanau_query(result.attention, rescored_attention(model, result, result.states), result.source,
                          min(step, len(result.attention) - 1))


WORKED_QUERY = torch.tensor([[0.5, 0.2]], dtype=torch.float64)  # 002 §2.1: s_{t−1}
WORKED_KEYS = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)  # h_1..h_3, also the values
WORKED_PRINTED = {"weights": [0.3374, 0.2501, 0.4125], "context": [0.7499, 0.6626]}  # as 002 prints them


def worked_example_002() -> Erratum:
    """002 §2.1's dot-product attention: two printed weights are off in the fourth decimal."""
    result = attention(WORKED_QUERY, WORKED_KEYS, WORKED_KEYS, "dot")
    computed = [*result.weights[0].tolist(), *result.output[0].tolist()]
    names = ["α_t1", "α_t2", "α_t3", "c_t[1]", "c_t[2]"]
    return Erratum(
        "worked_example_002", "002's worked attention example", "002 §2.1", "scoring_functions", "error",
        "002 prints the exponentials 1.6487, 1.2214 and 2.0138 and their sum 4.8839 correctly, then "
        "1.6487/4.8839 as 0.3374 and 2.0138/4.8839 as 0.4125; the errors cancel in the printed check that the "
        "weights sum to 1, and carry into the context's second entry.",
        ("printed in 002", "computed"),
        {name: (f"{printed:.4f}", f"{value:.4f}")
         for name, printed, value in zip(names, WORKED_PRINTED["weights"] + WORKED_PRINTED["context"], computed)},
    )


def online_rescaling(logits: list[float] | None = None) -> Erratum:
    """000 eq. 137 (004 eq. 84) rescales o_{i−1} by e^{m_i − m_{i−1}}; eq. 136's derivation needs the inverse."""
    x = torch.tensor(logits or [1.0, 3.0, 2.0], dtype=torch.float64)
    q, K = torch.ones(1, dtype=torch.float64), x[:, None]  # scores q k_i = x_i
    V = torch.eye(len(x), dtype=torch.float64)  # o is then the attention weights themselves
    printed = online_attention(q, K, V, scale=1.0, as_printed=True).o[-1]
    derived = online_attention(q, K, V, scale=1.0).o[-1]
    return Erratum(
        "online_rescaling", "Online attention's rescaling is inverted", "000 eq. 136-137; 004 eq. 83-84",
        "online_softmax", "error",
        "Eq. 137 multiplies o_{i−1} by e^{m_i − m_{i−1}}, but o_{i−1} was normalised with the old maximum and "
        "moving it to the new one needs e^{m_{i−1} − m_i}, as d_i has in eq. 130. The two agree only while the "
        "running maximum stays put. With V = I the output is the attention weights, so the printed form's "
        f"error is visible directly (scores {_vector(x)}):",
        ("eq. 137 as printed", "derived, = softmax"),
        {"o_N": (_vector(printed), _vector(derived)),
         "Σ of o_N's entries (softmax weights sum to 1)": (f"{float(printed.sum()):.4g}",
                                                           f"{float(derived.sum()):.4g}"),
         "softmax(x) directly": ("", _vector(torch.softmax(x, 0)))},
    )


def glove_biases(eq_19: dict, paper: dict) -> Erratum:
    """000 eq. 19 fits u_iᵀv_j alone to log P_ij; Pennington et al. (2014) eq. 8 add b_i + b̃_j. eq_19, paper: what
    the two shipped GloVe checkpoints store (their "losses" and "metrics"), trained alike but for the biases."""
    def column(stored: dict) -> list[str]:
        m = stored["metrics"]
        return [f"{stored['losses'][-1]:.4f}", f"{m['analogy_accuracy']:.1%}", f"{m['wordsim353_spearman']:.3f}",
                f"{m['simlex999_spearman']:.3f}"]

    names = ("J per nonzero X_ij, last epoch", "Google analogies (3CosAdd)", "WordSim-353 Spearman ρ",
             "SimLex-999 Spearman ρ")
    return Erratum(
        "glove_biases", "Biases in GloVe's objective", "000 §4.2 eq. 19 against Pennington et al. (2014) eq. 8",
        "glove_training", "disagreement",
        "000 eq. 19 fits u_iᵀv_j alone to log P_ij. The GloVe paper adds a bias per word and per context word, "
        "u_iᵀv_j + b_i + b̃_j: they absorb how common each word is (log X_i), which the vectors must otherwise "
        "carry. The Training GloVe page trains either form (its Biases switch); the two shipped checkpoints were "
        "trained alike on the Wikipedia sample but for the biases:",
        ("000 eq. 19, no biases", "the paper, b_i + b̃_j"),
        dict(zip(names, zip(column(eq_19), column(paper)))),
    )
