"""The GloVe pages read back: counts and ratios against a count written out here, f(x) against its closed form,
the shipped checkpoints' table against their files, a training run, and bad input."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch

from engine.embeddings.corpus import load_corpus
from engine.embeddings.train_glove import CHECKPOINTS, RUNS
from tests.app.conftest import assert_clean, button, count_calls, figures, metric, open_page, texts, trace

SMALL_RUN = {"dim": "10", "epochs": "2"}  # Lee news at d = 10: seconds


def window_counts(corpus: str, word: str, window: int, harmonic: bool = True) -> dict[str, float]:
    """X(word, k) for every k, counted position by position: words seen fewer than 5 times are dropped before
    the window slides (as glove.c), a pair d apart adds 1/d (or 1), and windows stop at a sentence's end."""
    sentences = load_corpus(corpus)
    seen = defaultdict(int)
    for s in sentences:
        for w in s:
            seen[w] += 1
    row = defaultdict(float)
    for s in sentences:
        kept = [w for w in s if seen[w] >= 5]
        for p, w in enumerate(kept):
            if w != word:
                continue
            for q in range(max(0, p - window), min(len(kept), p + window + 1)):
                if q != p:
                    row[kept[q]] += 1 / abs(p - q) if harmonic else 1.0
    return row


@pytest.mark.parametrize("corpus, window, harmonic", [("wikipedia", 10, True), ("lee", 3, False)])
def test_ratio_table_equals_counts_made_here(corpus, window, harmonic):
    at = open_page("glove_counts", corpus=corpus, window=str(window), harmonic=str(harmonic))
    assert_clean(at)
    assert not at.warning, [w.value for w in at.warning]
    table = at.dataframe[0].value
    probes = ["his", "her", "was", "and", "water"]
    assert list(table["k"]) == probes
    for word, column in (("he", "P(k | he)"), ("she", "P(k | she)")):
        row = window_counts(corpus, word, window, harmonic)
        counts = np.array([row[k] for k in probes])
        np.testing.assert_allclose(table[f"X({word}, k)"], counts, rtol=1e-9)
        np.testing.assert_allclose(table[column], counts / sum(row.values()), rtol=1e-9)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(table["ratio"], table["P(k | he)"] / table["P(k | she)"], rtol=1e-12)


def test_default_ratios_tell_he_from_she():
    at = open_page("glove_counts")
    table = at.dataframe[0].value.set_index("k")
    assert table.loc["his", "ratio"] > 2 and table.loc["her", "ratio"] < 0.1  # near he; near she
    assert 0.8 < table.loc["was", "ratio"] < 1.25 and 0.8 < table.loc["and", "ratio"] < 1.25  # near both
    assert list(table["reads as"][:3]) == ["near he", "near she", "near both, or neither"]
    assert any("“steam” not in the vocabulary" in t for t in texts(at))  # why not the paper's ice and steam


def test_heatmap_is_the_log_of_counts_made_here():
    at = open_page("glove_counts", corpus="lee", window="2")
    assert_clean(at)
    heat = trace(next(spec for title, spec in figures(at).items() if title.startswith("log₁₀(1 + X_ij)")))
    words = list(heat["y"])
    assert len(words) == 20 and words[:3] == ["the", "to", "of"] and list(heat["x"]) == words
    for a in ("the", "said", words[-1]):
        row = window_counts("lee", a, 2)
        expected = np.log10(1 + np.array([row[b] for b in words]))
        np.testing.assert_allclose(heat["z"][words.index(a)], expected, rtol=1e-9)


@pytest.mark.parametrize("x_max, alpha", [("100", "0.75"), ("10", "0.5"), ("3", "1.0")])
def test_weighting_plot_is_the_closed_form(x_max, alpha):
    at = open_page("glove_counts", corpus="lee", x_max=x_max, alpha=alpha)
    assert_clean(at)
    curve = trace(figures(at)[f"f(x) with x_max = {float(x_max):g}"])
    x = curve["x"].astype(float)
    assert x[0] == 0 and x[-1] == pytest.approx(2 * float(x_max))
    expected = np.where(x < float(x_max), (x / float(x_max)) ** float(alpha), 1.0)  # the paper's eq. 9
    np.testing.assert_allclose(curve["y"].astype(float), expected, rtol=1e-12)
    assert curve["y"][0] == 0  # 000 eq. 21: f(0) = 0


@pytest.mark.parametrize("params, message", [
    ({"x_max": "0"}, "x_max must be positive"),
    ({"x_max": "-5"}, "x_max must be positive"),
    ({"corpus": "pasted"}, "Paste some text"),
    ({"i": "steam"}, "not in the vocabulary: steam"),
    ({"probes": "his, zzqqx"}, "not in the vocabulary: zzqqx"),
])
def test_counts_page_bad_input_gets_a_message(params, message):
    at = open_page("glove_counts", **params)
    assert_clean(at)
    assert any(message in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.get("plotly_chart")  # the rest of the page is drawn


def test_counts_page_tiny_pasted_corpus():
    at = open_page("glove_counts", corpus="pasted")
    at.text_area(key="glove_paste").set_value("alone").run()
    assert_clean(at)
    assert "No two words" in at.warning[0].value
    at.text_area(key="glove_paste").set_value("he saw his dog and she saw her cat").run()
    assert_clean(at)
    assert "not in the vocabulary: was, water" in at.warning[0].value  # the counts are drawn, the probes named
    assert any(t.startswith("log₁₀(1 + X_ij)") for t in figures(at))


def test_training_page_shows_the_shipped_checkpoints_as_stored():
    at = open_page("glove_training")
    assert_clean(at)
    assert not at.warning and not at.error
    stored = {name: torch.load(CHECKPOINTS / f"{name}.pt", weights_only=True) for name in RUNS}
    curves = trace(figures(at)["Shipped checkpoints: J per nonzero X_ij, epoch by epoch (Wikipedia sample)"], 0)
    np.testing.assert_allclose(curves["y"], stored["glove_wikipedia"]["losses"])
    frames = [d.value for d in at.dataframe]
    table = next(f for f in frames if "vectors" in f.columns).set_index("vectors")
    for name, label in (("glove_wikipedia", "ours, with biases"),
                        ("glove_wikipedia_nobias", "ours, no biases (000 eq. 19)")):
        shared = stored[name]["shared"]
        assert table.loc[label, "analogies"] == pytest.approx(shared["ours"]["analogy_accuracy"])
        assert table.loc[label, "WordSim-353 ρ"] == pytest.approx(shared["ours"]["wordsim353_spearman"])
        assert table.loc["GloVe 6B 50d, the same words", "SimLex-999 ρ"] == pytest.approx(
            shared["glove_6b"]["simlex999_spearman"])
    assert len(set(table["questions"])) == 1  # the same questions for every row
    neighbours = frames[-3:]  # ours with biases, without, GloVe 6B on the same words
    assert all(len(n) == 10 and list(n.columns) == ["neighbour", "cosine"] for n in neighbours)
    assert list(neighbours[2]["neighbour"])[:2] == ["occupation", "invasion"]  # GloVe 6B, near "war"
    at.text_input(key="word").set_value("wor").run()
    assert_clean(at)
    assert "'wor' is not among" in at.warning[0].value


@pytest.mark.parametrize("biases", [True, False])
def test_training_on_lee_shows_its_model_and_scores(biases):
    at = open_page("glove_training", biases=str(biases), **SMALL_RUN)
    button(at, "Train").click().run(timeout=180)
    assert_clean(at)
    heading = next(s.value for s in at.subheader if s.value.startswith("Your model"))
    assert heading.startswith(f"Your model (finished): lee, window 10, d = 10, {'biases' if biases else 'no biases'}, "
                              "1,776 words")
    curves = ['"Training loss"' in chart.proto.spec for chart in at.get("plotly_chart")]
    assert curves.count(True) == 1  # the loss curve, two epochs: the live one gave way to the model's
    assert [t.strip("*") for t in texts(at) if "nearest to" in t] == [
        "nearest to “government”", "nearest to “war”", "nearest to “city”"]
    rows = next(d.value for d in at.dataframe if "vectors" in d.value.columns).set_index("vectors")
    assert {"yours", "GloVe 6B, your model's words"} <= set(rows.index)
    assert rows.loc["yours", "questions"] == rows.loc["GloVe 6B, your model's words", "questions"]


def test_training_page_bad_input_gets_a_message():
    at = open_page("glove_training", x_max="-1", **SMALL_RUN)
    assert_clean(at)
    assert "x_max must be positive" in at.warning[0].value
    button(at, "Train").click().run()
    assert_clean(at)
    assert not any(s.value.startswith("Your model") for s in at.subheader)
    at = open_page("glove_training", corpus="pasted", **SMALL_RUN)
    assert "Paste some text" in at.warning[0].value
    at.text_area(key="glove_paste").set_value("a b").run()
    button(at, "Train").click().run()
    assert_clean(at)
    assert at.get("plotly_chart")  # the shipped checkpoints are still drawn


def test_two_students_on_one_setting_weigh_the_corpus_counts_once(monkeypatch):
    """f over the hundreds of thousands of nonzero X_ij was computed on every run of both GloVe pages, a third of a
    warm change's run (issue 47): a setting weighs them once per server now."""
    from engine.embeddings import cooccurrence
    from ui import glove
    calls = [count_calls(monkeypatch, owner, "weighting") for owner in (cooccurrence, glove)]  # the page's, ui's
    sessions = [open_page("glove_counts", corpus="lee", window="3", alpha="0.45") for _ in range(2)]
    for at in sessions:
        assert_clean(at)
    assert metric(sessions[0], "Mean f") == metric(sessions[1], "Mean f")
    weighed = [args for made in calls for args in made if np.size(args[0]) > 201]  # not the page's curve of f
    assert len(weighed) <= 1
