"""Every control of every page driven through valid values from the page's defaults, and refused states on purpose.

For each control the page is opened fresh at its defaults (so no control is only ever tried in a state an
earlier one left behind), then the control takes each trial value: sliders their minimum, middle and maximum,
selects every option, toggles the other value, number inputs their bounds (or twice and half the default),
text boxes the entries of VALID_TEXT, and the buttons of CLICKED are pressed. After every run the page must
show no exception, no st.error, no warning other than the ones EXPECTED names for that page, and at least the
figures it drew at its defaults (unless a warning explains the gap). A select's option can reveal controls of
its own; those are driven the same way from a page opened with that option.

REFUSED lists states the pages must refuse, each with the message it must show; the rest of the page is drawn.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.app.conftest import open_page, option_values
from ui.catalog import PAGES

SLUGS = [p.slug for p in PAGES]
FRAME = {"lecture"}  # the frame's own toggle, tested in test_classroom_frame

# Warnings a page may show at a valid extreme of a control, by page (substrings). Anything else fails.
EXPECTED: dict[str, list[str]] = {
    "kernel_regression": ["gaps"],  # a boxcar narrower than the spacing of the points
    "rope": ["float32 loses"],  # the precision panel at positions near 10^7
    "decoding_lab": ["wider than the vocabulary", "exhaustive search would expand"],
    "multi_head": ["heads do not divide"],
    "attention_variants": ["groups do not divide", "heads do not divide"],
    "decoupled_rope": ["do not divide"],
    "cache_sizes": ["divide"],
    "flash_attention": ["tiles: the grid is drawn for at most", "KiB of SRAM"],
    "word2vec_training": ["Paste some text"],
    "glove_counts": ["Paste some text"],  # the pasted corpus starts empty
    "glove_training": ["Paste some text"],
    "online_softmax": ["As printed"],  # 003's printed recurrence, shown wrong on purpose
    "skipgram_pairs": ["does not fit in a sentence"],  # windows wider than the default sentence
    "pointer_network": ["the network made a mistake"],  # the model's own error on valid input
    "scoring_functions": ["leaves none to attend to", "same width"],
    "projector": ["draws at most"],
    "fasttext": ["above the longest", "no n-grams of"],  # a range of n the word or the sliders leave empty  # 5,000 and 10,000 words are PCA's, past t-SNE's budget
}

# Controls whose values may draw fewer figures than the defaults, and why.
FEWER_FIGURES = {
    ("word2vec_training", "objective"): "the noise distribution is drawn for negative sampling only",
    ("one_hot", "text"): "GloVe's distance and cosine maps need two words it knows",
    ("decoding_lab", "model"): "a language model has no attention over an input to draw",
    ("multi_head", "H"): "one heatmap per head",
    ("smollm", "view"): "each view draws its own figures; Generate's appears once something is generated",
    # Generate's chart is drawn for settings someone on this server has generated with (shared), so its baseline
    # has it when another test pressed Generate at the defaults first, and new settings wait for the button
    **{("smollm", key): "new generation settings draw their chart after Generate is pressed"
       for key in ("temp", "topk", "topp", "new", "seed")},
}

# Text a user would type into each text box (page, key): all must be accepted without a warning.
VALID_TEXT: dict[tuple[str, str], list[str]] = {
    ("one_hot", "text"): ["the cat sat on the mat", "Queen"],
    ("skipgram_pairs", "text"): ["the quick brown fox jumps over the lazy dog"],
    ("softmax_gradient", "c"): ["police"],
    ("softmax_gradient", "o"): ["officers"],
    ("word2vec_training", "probe"): ["government"],
    ("word2vec_training", "word"): ["president"],
    ("word2vec_training", "w2v_paste"): ["the king rules the land\nthe queen rules the land\n" * 20],
    ("hierarchical_softmax", "c"): ["government"],
    ("hierarchical_softmax", "word"): ["minister"],
    ("analogies", "a"): ["paris"],
    ("analogies", "b"): ["france"],
    ("analogies", "c"): ["london"],
    ("analogies", "more"): ["good better bad", "king queen"],
    ("analogies", "near"): ["frog"],
    ("glove_counts", "i"): ["his"],
    ("glove_counts", "j"): ["her"],
    ("glove_counts", "probes"): ["he, she, the", "king"],
    ("glove_counts", "glove_paste"): ["he said his water was cold and she said her tea was warm\n" * 20],
    ("glove_training", "probe"): ["government"],
    ("glove_training", "word"): ["music"],
    ("glove_training", "glove_paste"): ["the king rules the land\nthe queen rules the land\n" * 20],
    ("fasttext", "word"): ["where", "city", "Teacherz"],
    ("projector", "add"): ["frog, toad, newt", "Paris Rome"],
    ("projector", "word"): ["city", "King"],
    ("projector", "a"): ["paris"],
    ("projector", "b"): ["queen"],
    ("projector", "c"): ["girl"],
    ("decoding_lab", "text"): ["12/03/2021"],
    ("seq2seq_attention", "text"): ["March 3rd, 1999", "2001-07-14"],
    ("coverage", "text"): ["5 May 2010"],
    ("pointer_network", "numbers"): ["0.5, 0.3, 0.9, 0.1", "3, 1, 2"],
    ("pointer_generator", "text"): ["Sunday, June 9, 2024"],
    ("pointer_sentinel", "text"): ["the cat sat on the mat and the cat slept", "Zorblax met Quentin. Zorblax left."],
    ("cross_attention", "text"): ["1 Jan 1970"],
    ("permutation", "text"): ["a dog bites a man"],
    ("permutation", "perm"): ["2 1 0"],
    ("transformer_lm", "prompt"): ["The minister said", "A"],
    ("kv_cache", "prompt"): ["The prime minister"],
    ("rope", "prompt"): ["The Eiffel Tower is in Paris.", "A"],  # SmolLM2's heads; one token leaves one query
    ("attention_variants", "prompt"): ["Paris is the capital of France, and it is"],
    ("smollm", "prompt"): ["Name three colours.", "😀 Café, 東京 and e\u0301 🤖"],
    ("smollm", "text"): ["Paris is the capital of France."],
    ("objectives", "text"): ["The government said it would act."],
    ("online_softmax", "x"): ["1, 2, 3", "-5, 0, 5, 10"],
    ("scoring_functions", "Q"): ["1 0; 0 1"],
    ("scoring_functions", "K"): ["1 0; 0 1; 1 1"],
    ("scoring_functions", "V"): ["1; 2; 3"],
}

# Buttons pressed at the page's defaults: each does a bounded amount of work there.
CLICKED = {("analogies", "Evaluate"), ("word2vec_training", "Train"), ("attention_variants", "Measure on this server"),
           ("glove_training", "Train"), ("smollm", "Generate")}
# Buttons left to their own tests: what they start is long, and tested there with small settings.
NOT_CLICKED = {
    ("word2vec_training", "Stop"): "tests/e2e: Stop during a run",
    ("glove_training", "Stop"): "tests/e2e: Stop during a run",
    ("kv_cache", "Measure on this server"): "tests/app/test_transformer_pages.py times short generations",
    ("attention_timing", "Time attention here"): "tests/app/test_efficiency_pages.py times a small sweep",
}

# States a page must refuse, each opened by URL, with the message it must show. The page's title and at least
# one figure are still drawn.
REFUSED: list[tuple[str, dict[str, str], str]] = [
    ("one_hot", {"text": "   "}, "at least one word"),
    ("skipgram_pairs", {"text": "two words"}, "does not fit"),
    ("softmax_gradient", {"c": "qwertyuiop"}, "not among"),
    ("hierarchical_softmax", {"word": "zzzzqqq"}, "not among"),
    ("analogies", {"a": "qeen"}, "did you mean"),
    ("fasttext", {"word": "?!"}, "no letters or digits"),
    ("fasttext", {"word": "q", "min_n": "5"}, "no n-grams of 5 to 6 characters"),
    ("fasttext", {"word": " "}, "the box is empty"),
    ("fasttext", {"min_n": "6", "max_n": "2"}, "above the longest"),
    ("projector", {"n": "5000"}, "t-SNE draws at most 2,000 words"),
    ("projector", {"add": "frog, ?!"}, "punctuation only"),
    ("projector", {"add": "frgo"}, "did you mean"),
    ("projector", {"word": "zebra"}, "not among the 1,001 words drawn"),
    ("projector", {"b": " "}, "all three words"),
    ("decoding_lab", {"text": ""}, "empty"),
    ("decoding_lab", {"method": "exhaustive", "T": "30"}, "exhaustive search would expand"),
    ("decoding_lab", {"model": "smollm", "text": " "}, "empty"),
    ("rope", {"prompt": " "}, "empty"),
    ("attention_variants", {"prompt": " "}, "empty"),
    ("seq2seq_attention", {"text": " "}, "empty"),
    ("pointer_network", {"numbers": "7"}, "at least two numbers"),
    ("pointer_network", {"numbers": "1, x"}, "not a number"),
    ("pointer_sentinel", {"text": "alone"}, "at least two words"),
    ("smollm", {"prompt": "  "}, "empty"),
    ("smollm", {"view": "Perplexity", "text": "a"}, "at least two tokens"),
    ("pointer_sentinel", {"text": "?! ... 42"}, "at least two words"),
    ("kernel_regression", {"kernel": "Boxcar", "h": "0.05", "n": "5"}, "gaps"),
    ("scoring_functions", {"pad": "9"}, "leaves none to attend to"),
    ("scoring_functions", {"inputs": "Typed", "Q": "1 2 3", "score": "Dot"}, "same width"),
    ("multi_head", {"H": "5"}, "heads do not divide"),
    ("permutation", {"order": "Typed", "perm": "0 0 1"}, "not a permutation"),
    ("transformer_lm", {"prompt": ""}, "empty"),
    ("objectives", {"text": "A"}, "at least two characters"),
    ("sinusoidal", {"base": "0"}, "positive"),
    ("rope", {"d": "7"}, "even"),
    ("online_softmax", {"source": "Typed", "x": ""}, "at least one logit"),
    ("word2vec_training", {"corpus": "pasted"}, "Paste some text"),
    ("glove_counts", {"x_max": "0"}, "x_max must be positive"),
    ("glove_counts", {"corpus": "pasted"}, "Paste some text"),
    ("glove_counts", {"j": "steam"}, "not in the vocabulary: steam"),
    ("glove_training", {"x_max": "-1"}, "x_max must be positive"),
    ("glove_training", {"corpus": "pasted"}, "Paste some text"),
]


@dataclass
class Seen:
    exceptions: list[str]
    errors: list[str]
    warnings: list[str]
    figures: int


def seen(at) -> Seen:
    return Seen([e.value for e in at.exception], [e.value for e in at.error], [w.value for w in at.warning],
                len(at.get("plotly_chart")))


def check_valid(at, slug: str, baseline: Seen, what: str, key: str | None = None) -> None:
    now = seen(at)
    assert not now.exceptions, (what, now.exceptions)
    assert not now.errors, (what, now.errors)
    unexpected = [w for w in now.warnings if not any(s in w for s in EXPECTED.get(slug, []))]
    assert not unexpected, (what, unexpected)
    if not now.warnings and (slug, key) not in FEWER_FIGURES:
        assert now.figures >= baseline.figures, (what, f"{now.figures} figures, {baseline.figures} at defaults")


def widget(at, kind: str, key: str):
    return next((w for w in getattr(at, kind) if w.key == key), None)


def trial_values(at, kind: str, control, slug: str) -> list:
    if kind == "slider":
        low, high, step = control.min, control.max, control.step
        middle = low + round((high - low) / 2 / step) * step
        return [v for v in dict.fromkeys([low, middle, high]) if v != control.value]
    if kind == "selectbox":
        return [v for v in option_values(at, control.key) if v != control.value]
    if kind == "toggle":
        return [not control.value]
    if kind == "number_input":
        if control.min is not None and control.max is not None:
            return [control.min, control.max]
        return [control.value * 2, control.value / 2]
    entries = VALID_TEXT.get((slug, control.key))
    assert entries, f"{slug}: text box `{control.key}` needs valid entries in VALID_TEXT"
    return entries


KINDS = ("slider", "selectbox", "toggle", "number_input", "text_input", "text_area")


def controls(at) -> list[tuple[str, str]]:
    return [(kind, w.key) for kind in KINDS for w in getattr(at, kind) if w.key not in FRAME]


def drive(slug: str, kind: str, key: str, params: dict[str, str]) -> list[tuple[str, str, dict[str, str]]]:
    """Each trial value of one control from a fresh page; returns controls a select's options revealed."""
    at = open_page(slug, **params)
    baseline = seen(at)
    check_valid(at, slug, baseline, f"{params} at its defaults")
    present = set(controls(at))
    revealed = []
    for value in trial_values(at, kind, widget(at, kind, key), slug):
        widget(at, kind, key).set_value(value).run()
        check_valid(at, slug, baseline, f"{params} then {key} = {value!r}", key)
        if kind == "selectbox":
            revealed += [(k, name, params | {key: str(value)}) for k, name in controls(at)
                         if (k, name) not in present]
    return revealed


@pytest.mark.parametrize("slug", SLUGS)
def test_every_control_takes_its_valid_values(slug):
    at = open_page(slug)
    todo = [(kind, key, {}) for kind, key in controls(at)]
    tried = set()
    while todo:
        kind, key, params = todo.pop(0)
        if (kind, key) in tried:
            continue
        tried.add((kind, key))
        todo += drive(slug, kind, key, params)
    for button in open_page(slug).button:
        label = button.label
        if (slug, label) in NOT_CLICKED or label is None or label.startswith("tour_"):
            continue
        assert (slug, label) in CLICKED, f"{slug}: button {label!r} must be in CLICKED or NOT_CLICKED"
        at = open_page(slug)
        baseline = seen(at)
        next(b for b in at.button if b.label == label).click().run()
        check_valid(at, slug, baseline, f"pressed {label}")


@pytest.mark.parametrize("slug,params,message", REFUSED, ids=[f"{s}-{'-'.join(p)}" for s, p, _ in REFUSED])
def test_refused_states_say_why(slug, params, message):
    at = open_page(slug, **params)
    now = seen(at)
    assert not now.exceptions and not now.errors, (now.exceptions, now.errors)
    assert any(message in w for w in now.warnings), now.warnings
    assert at.title[0].value == next(p.title for p in PAGES if p.slug == slug)
