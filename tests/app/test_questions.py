"""The lecture questions' answers at each page's real default settings, against computations that share no code with
the engine function each question calls: closed forms, plain torch or numpy, and gensim for the analogy."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gensim.models import KeyedVectors

from engine.seq2seq.cross import as_cross_attention
from engine.seq2seq.decode import translate
from tests.app.conftest import open_page
from ui import loaders
from ui.catalog import PAGES
from ui.page import DRAWN_PARAMS
from ui.questions import QUESTIONS, ROW_FORM_TURNS

ASKED = [(slug, i) for slug, asks in QUESTIONS.items() for i in range(len(asks))]


@pytest.fixture(scope="module")
def settings_of():
    """A page's settings as ui/lecture.py reads them: every control this run drew, by URL name, at its default."""
    opened: dict[str, dict] = {}

    def settings(slug: str) -> dict:
        if slug not in opened:
            at = open_page(slug)
            assert not at.exception, [e.value for e in at.exception]
            opened[slug] = {name: at.session_state[name] for name in at.session_state[DRAWN_PARAMS]}
        return opened[slug]
    return settings


def answer(slug: str, index: int, settings: dict):
    return QUESTIONS[slug][index].compute(settings)[1]


def test_every_section_has_two_questions():
    asked = {p.section: 0 for p in PAGES}
    for page in PAGES:
        asked[page.section] += len(QUESTIONS.get(page.slug, ()))
    assert {section: n for section, n in asked.items() if n < 2} == {}
    assert set(QUESTIONS) <= {p.slug for p in PAGES}


@pytest.mark.parametrize(("slug", "index"), ASKED)
def test_question_is_well_formed(slug, index, settings_of):
    ask = QUESTIONS[slug][index]
    assert ask.text.endswith("?")
    assert ask.kind in ("choice", "number")
    options, right = ask.compute(settings_of(slug))
    if ask.kind == "choice":
        assert 2 <= len(options) <= 4 and len(set(options)) == len(options), options
        assert right in options
    else:
        assert options == () and isinstance(right, (int, float))


def test_skipped_and_all_tiles(settings_of):
    s = settings_of("flash_attention")
    rows, columns = math.ceil(s["N"] / s["Br"]), math.ceil(s["N"] / s["Bc"])
    # causal: a tile is skipped when its first key comes after its last query
    skipped = sum(j * s["Bc"] > min((i + 1) * s["Br"], s["N"]) - 1 for i in range(rows) for j in range(columns))
    assert answer("flash_attention", 0, s) == (skipped if s["causal"] else 0) > 0
    assert answer("flash_attention", 1, s) == rows * columns


def test_smollm_cache_mib(settings_of):
    s = settings_of("cache_sizes")
    per_token = 2 * 30 * 3 * 64  # K and V, 30 layers, 3 KV heads of 64 numbers: SmolLM2-135M's config.json
    width = {"fp32": 4, "bf16": 2, "fp8": 1}[s["dtype"]]
    mib = per_token * width * int(s["ctx"]) * s["batch"] / 2**20
    assert answer("cache_sizes", 0, s) == pytest.approx(mib, abs=0.05)


def test_same_rotation_keeps_the_score(settings_of):
    """Rotations are orthogonal, (R q)·(R k) = q·k: turning both by one angle never changes their score."""
    assert answer("rope", 0, settings_of("rope")) == "No"


@pytest.mark.parametrize("base", [None, 500.0])
def test_offset_dot(settings_of, base):
    """PE(0) = (0, 1, 0, 1, …), so PE(0)·PE(k) = Σ_i cos(k / base^(2i/d)); at the default base and one changed."""
    s = dict(settings_of("sinusoidal"), **({"base": base} if base else {}))
    closed_form = sum(math.cos(s["k"] / s["base"] ** (2 * i / s["d"])) for i in range(s["d"] // 2))
    assert answer("sinusoidal", 0, s) == pytest.approx(closed_form, abs=0.005)


@pytest.mark.parametrize("window", [None, 5])
def test_distinct_pairs(settings_of, window):
    """At window 5 the default sentence's "sit" sees "the" on both sides: 8 pairs, 7 different."""
    s = dict(settings_of("skipgram_pairs"), **({"window": window} if window else {}))
    words, m = s["text"].split(), s["window"] // 2
    pairs = [(words[n], words[n + j]) for n in range(m, len(words) - m) for j in range(-m, m + 1) if j]
    assert answer("skipgram_pairs", 0, s) == len(set(pairs))
    assert len(set(pairs)) < len(pairs) or window is None


def test_analogy_against_gensim(settings_of):
    s = settings_of("analogies")
    assert s["vectors"] == "glove"
    vectors = loaders.glove()
    peer = KeyedVectors(vectors.vectors.shape[1])
    peer.add_vectors(vectors.words, vectors.vectors)
    expected = peer.most_similar(positive=[s["b"], s["c"]], negative=[s["a"]], topn=1)[0][0]
    assert answer("analogies", 0, s) == expected == "queen"


def test_greedy_first_token(settings_of):
    """The date model: the first character of the page's greedy translation. The character LM: the argmax of one
    uncached forward pass over the prompt."""
    s = settings_of("decoding_lab")
    assert answer("decoding_lab", 0, s) == translate(loaders.seq2seq_checkpoint(s["model"])[0], s["text"]).output[0]
    model, vocab, _ = loaders.char_model("causal")
    with torch.no_grad():
        logits = model(vocab.encode(s["text"][-200:])[None]).logits[0, -1]  # (V,)
    expected = vocab.decode([int(logits.argmax())]).replace(" ", "␣").replace("\n", "⏎")
    assert answer("decoding_lab", 0, dict(s, model="lm")) == expected


def test_beam_candidates(settings_of):
    s = settings_of("decoding_lab")
    date_symbols = len("0123456789- ") + 3  # digits, "-" and space, then padding, start and end
    assert answer("decoding_lab", 1, s) == s["W"] * date_symbols


def test_first_pointed_is_the_smallest(settings_of):
    """A pointer network that sorts points first at the smallest number (the model sorts the default set)."""
    s = settings_of("pointer_network")
    numbers = torch.rand(1, s["n"], generator=torch.Generator().manual_seed(s["seed"]))[0].numpy()
    j = int(np.argmin(numbers))
    assert answer("pointer_network", 0, s) == f"{j}: {numbers[j]:.3f}"


def test_first_step_focus(settings_of):
    """Step 0's weights as one row of softmax(QKᵀ), the cross-attention the page says the decoder computes."""
    s = settings_of("cross_attention")
    model = loaders.seq2seq_checkpoint(s["model"])[0]
    result = translate(model, s["text"])
    cross = as_cross_attention(model, result)
    j = int(torch.softmax(cross.Q @ cross.K.T, dim=-1)[0].argmax())
    character = "␣" if result.source[j] == " " else result.source[j]  # the page's label of a space
    assert answer("cross_attention", 0, s) == f"{j} {character}"


def test_char_cache_kib(settings_of):
    """The cache a real forward pass leaves after as many tokens as the prompt and the generated characters."""
    s = settings_of("kv_cache")
    model, vocab, _ = loaders.char_model("causal")
    prompt = s["prompt"][-(model.config.max_seq_len - 128):]  # the page's cut: 128 characters left to generate
    tokens = len(prompt) + s["new"]
    with torch.no_grad():
        cache = model(torch.zeros(1, tokens, dtype=torch.long)).cache
    measured = sum(k.numel() + v.numel() for k, v in cache) * 4 / 1024  # float32
    assert answer("kv_cache", 0, s) == pytest.approx(measured, abs=0.05)


def test_row_form_turns_backwards(settings_of):
    """q R with q = (1, 0) is R's first row, (cos θ, −sin θ): a turn by −θ."""
    theta = math.pi / 6
    R = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
    x, y = np.array([1.0, 0.0]) @ R
    degrees = math.degrees(math.atan2(y, x))
    expected = next(name for name, turn in ROW_FORM_TURNS.items() if abs(turn - degrees) < 1e-9)
    assert answer("notes_errata", 0, settings_of("notes_errata")) == expected


def test_printed_rescaling_sum(settings_of):
    """Eq. 137 as printed, in numpy: o_i = o_{i-1} (d_{i-1}/d_i) e^{m_i - m_{i-1}} + (e^{x_i - m_i}/d_i) v_i."""
    x = [1.0, 3.0, 2.0]
    V = np.eye(len(x))
    m, d, o = x[0], 1.0, V[0]
    for i in range(1, len(x)):
        m_i = max(m, x[i])
        d_i = d * math.exp(m - m_i) + math.exp(x[i] - m_i)
        o = o * (d / d_i) * math.exp(m_i - m) + math.exp(x[i] - m_i) / d_i * V[i]
        m, d = m_i, d_i
    assert answer("notes_errata", 1, settings_of("notes_errata")) == pytest.approx(o.sum(), abs=0.005)
