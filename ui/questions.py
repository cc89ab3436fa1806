"""The questions a lecturer can ask the class on each page, predict-then-reveal. Each right answer (and each choice's
options) is computed by the engine at the lecturer's settings when the question is opened, never typed in: the
settings are the page's controls by URL name, as the lecturer's run left them (every one, defaults included).

A question is a sentence, its kind, and `compute(settings) -> (options, answer)`: options only for "choice", where
they include the answer; a "number" is right within `tolerance` of the answer.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine import errata
from engine.decoding.models import LanguageModelStepper, Seq2SeqStepper
from engine.efficiency import flash
from engine.efficiency.online_softmax import online_attention
from engine.embeddings.corpus import tokenize
from engine.embeddings.pairs import skipgram_pairs
from engine.errors import InputError
from engine.positions import rope, sinusoidal
from engine.seq2seq.pointer_network import number_sets
from engine.transformer import cache_sizes
from engine.transformer.kv_cache import generation_work
from ui import defaults, loaders
from ui.inputs import parse_numbers
from ui.seq2seq import char_labels

Settings = Mapping[str, Any]
YES, NO = "Yes", "No"


@dataclass(frozen=True)
class Ask:
    text: str
    kind: str  # "choice" or "number"
    compute: Callable[[Settings], tuple[Sequence[str], float | str]]
    tolerance: float = 0.0


def _skipped_tiles(s: Settings) -> tuple[Sequence[str], int]:
    kinds = flash.tile_kinds(s["N"], s["Br"], s["Bc"], s["causal"])
    return (), sum(row.count("skipped") for row in kinds)


def _tiles(s: Settings) -> tuple[Sequence[str], int]:
    kinds = flash.tile_kinds(s["N"], s["Br"], s["Bc"], s["causal"])
    return (), sum(len(row) for row in kinds)


def _smollm_cache_mib(s: Settings) -> tuple[Sequence[str], float]:
    smollm = cache_sizes.BY_NAME["SmolLM2-135M"]
    return (), round(smollm.total_bytes(int(s["ctx"]), s["batch"], s["dtype"]) / 2**20, 1)


def _same_rotation_changes_score(s: Settings) -> tuple[Sequence[str], str]:
    """Both turned to one position m = 10: q·k before and after, in float64 (000 eq. 108)."""
    q, k = rope.random_query_key(s["d"], s["seed"])
    pairing = rope_pairing(s["pairing"])
    at = torch.tensor([10])
    turned = torch.dot(rope.apply_rope(q, at, s["base"], pairing)[0], rope.apply_rope(k, at, s["base"], pairing)[0])
    return (YES, NO), YES if abs(turned - torch.dot(q, k)) > 1000 * rope.rounding_scale(q, k) else NO


def rope_pairing(label: str) -> str:
    return "half" if label.startswith("Half") else "interleaved"


def _offset_dot(s: Settings) -> tuple[Sequence[str], float]:
    """PE(0) · PE(k) at the page's offset k, d_model and base (000 eq. 95): it depends on k alone."""
    encoding = sinusoidal.sinusoidal_encoding(s["k"] + 1, s["d"], s["base"])
    return (), round(float(encoding[0] @ encoding[s["k"]]), 2)


def _analogy_answer(s: Settings) -> tuple[Sequence[str], str]:
    """3CosAdd's best three answers to a : b :: c : ? on the page's vectors (000 eq. 1); the first is right."""
    vectors = loaders.glove() if s["vectors"] == "glove" else loaders.checkpoint_vectors("wikipedia_sgns")
    a, b, c = (s[name].strip().lower() for name in "abc")
    found = [word for word, _ in vectors.analogy(a, b, c, 3, method="3CosAdd")]
    return tuple(sorted(found)), found[0]


def _distinct_pairs(s: Settings) -> tuple[Sequence[str], int]:
    """The (target, context) pairs of eq. 5-6, each counted once: the n(t, c) > 0 behind the page's ceiling."""
    words = [w for line in tokenize(s["text"]) for w in line]
    return (), len(set(skipgram_pairs(words, s["window"])))


def _decoding_stepper(s: Settings) -> Seq2SeqStepper | LanguageModelStepper:
    """The decoding lab's model reading its input, as the page builds it (views/decoding_lab.py stepper_for)."""
    if s["model"] == "smollm":
        raise InputError("asked of the date models and the character LM: SmolLM2 loads only on its own pages")
    if s["model"] == "lm":
        model, vocab, _ = loaders.char_model("causal")
        prompt = s["text"][-200:]  # the page reads the last 200 characters
        if not prompt:
            raise InputError("the prompt is empty")
        return LanguageModelStepper(model, vocab, vocab.encode(prompt))
    return Seq2SeqStepper(loaders.seq2seq_checkpoint(s["model"])[0], s["text"])


def _greedy_first_token(s: Settings) -> tuple[Sequence[str], str]:
    """The first step's three most probable tokens (000 eq. 29): greedy writes the first."""
    stepper = _decoding_stepper(s)
    stepper.start()
    log_p, _ = stepper.step(torch.tensor([stepper.bos]), torch.tensor([0]))  # (1, N): the root's one prefix
    best = [stepper.label(int(t)) for t in log_p[0].topk(3).indices]
    return tuple(sorted(best)), best[0]


def _beam_candidates(s: Settings) -> tuple[Sequence[str], int]:
    """000 eq. 30: every step extends each of the W kept prefixes by every one of the N tokens."""
    if s["method"] != "beam":
        raise InputError("the search is not beam search")
    return (), s["W"] * _decoding_stepper(s).vocab_size


def _first_pointed(s: Settings) -> tuple[Sequence[str], str]:
    """The pointer network's first step (000 eq. 51-52): its three likeliest input positions, as the page labels
    them; the one it points at is the answer."""
    model, _ = loaders.pointer_network()
    if s["numbers"].strip():
        inputs = torch.tensor([parse_numbers(s["numbers"])])
    else:
        inputs = number_sets(1, length=s["n"], generator=torch.Generator().manual_seed(s["seed"]))
    if inputs.shape[1] < 2:
        raise InputError("type at least two numbers")
    with torch.no_grad():
        log_probs, picks = model(inputs)
    label = {j: f"{j}: {v:.3f}" for j, v in enumerate(inputs[0].tolist())}
    likeliest = log_probs[0, 0].topk(min(3, inputs.shape[1])).indices.tolist()
    return tuple(label[j] for j in sorted(likeliest)), label[int(picks[0, 0])]


def _first_step_focus(s: Settings) -> tuple[Sequence[str], str]:
    """The decoder's first step, s_0 asking the encoder states (000 eq. 42): its three heaviest source characters."""
    result = loaders.translated(s["model"], s["text"])
    labels = char_labels(result.source)
    heaviest = result.attention[0].topk(min(3, len(labels))).indices.tolist()
    return tuple(labels[j] for j in sorted(heaviest)), labels[heaviest[0]]


def _char_cache_kib(s: Settings) -> tuple[Sequence[str], float]:
    """002 §2.5: the character model's K and V rows after the prompt and every generated character, float32."""
    model, vocab, _ = loaders.char_model("causal")
    prompt_len = len(s["prompt"][-(model.config.max_seq_len - defaults.KV_LONGEST):])  # as the page cuts it
    if not prompt_len:
        raise InputError("the prompt is empty")
    work = generation_work(model.config, prompt_len, s["new"], True)
    return (), round(work.cache_numbers[-1] * 4 / 1024, 1)  # 4 bytes a float32


ROW_FORM_TURNS = {"+30°, anticlockwise": 30.0, "−30°, clockwise": -30.0, "0°, not at all": 0.0}


def _row_form_turn(s: Settings) -> tuple[Sequence[str], str]:
    """000 eq. 109's second line, q R with q = (1, 0) at θ = 30°: the angle it turns q by, read off the points."""
    x, y = errata.rotation_of_the_row_form(math.pi / 6)["q R: eq. 109's second line"]
    degrees = math.degrees(math.atan2(y, x))
    return tuple(ROW_FORM_TURNS), min(ROW_FORM_TURNS, key=lambda name: abs(ROW_FORM_TURNS[name] - degrees))


ONLINE_SCORES = (1.0, 3.0, 2.0)  # the notes page's example (engine.errata.online_rescaling): the maximum moves


def _printed_rescaling_sum(s: Settings) -> tuple[Sequence[str], float]:
    """000 eq. 137 as printed, with V = I so that o_N is the weights themselves: what its entries sum to."""
    x = torch.tensor(ONLINE_SCORES, dtype=torch.float64)
    trace = online_attention(torch.ones(1, dtype=torch.float64), x[:, None], torch.eye(len(x), dtype=torch.float64),
                             scale=1.0, as_printed=True)
    return (), round(float(trace.o[-1].sum()), 2)


# by page slug, in the order the lecturer's list shows them
QUESTIONS: dict[str, tuple[Ask, ...]] = {
    "skipgram_pairs": (
        Ask("How many different (target, context) pairs does this sentence give at this window size, repeats counted "
            "once?", "number", _distinct_pairs),
    ),
    "analogies": (
        Ask("a is to b as c is to ?: which of these words does 3CosAdd return first?", "choice", _analogy_answer),
    ),
    "decoding_lab": (
        Ask("Which token does greedy decoding write first for this input?", "choice", _greedy_first_token),
        Ask("How many candidate prefixes does beam search score at each step, at this width W?", "number",
            _beam_candidates),
    ),
    "pointer_network": (
        Ask("At its first step, which input position does the pointer network point at?", "choice", _first_pointed),
    ),
    "cross_attention": (
        Ask("At the first output step, which input character gets the most attention?", "choice", _first_step_focus),
    ),
    "kv_cache": (
        Ask("How many KiB does the character model's K and V cache hold (float32) after the prompt and the "
            "characters generated?", "number", _char_cache_kib, tolerance=0.5),
    ),
    "flash_attention": (
        Ask("How many tiles of S does the loop skip entirely at these settings?", "number", _skipped_tiles),
        Ask("How many tiles does S have at these block sizes, skipped ones included?", "number", _tiles),
    ),
    "cache_sizes": (
        Ask("How many MiB does SmolLM2-135M's KV cache take at this context, batch and number format?", "number",
            _smollm_cache_mib, tolerance=0.5),
    ),
    "rope": (
        Ask("Turn q and k by the same angle (both to position 10): does their score q·k change?", "choice",
            _same_rotation_changes_score),
    ),
    "sinusoidal": (
        Ask("What is the dot product PE(0) · PE(k) at this d_model, base and offset k, to 2 decimals?", "number",
            _offset_dot, tolerance=0.01),
    ),
    "notes_errata": (
        Ask("000 eq. 109's second line, q R at θ = 30°: which way does it turn q = (1, 0)?", "choice",
            _row_form_turn),
        Ask("000 eq. 137 as printed, on the scores [1, 3, 2] with V = I: what do the entries of o_N sum to, "
            "to 2 decimals?", "number", _printed_rescaling_sum, tolerance=0.01),
    ),
}
