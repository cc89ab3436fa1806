"""The Seq2seq attention pages, read back against the engine run here."""
from __future__ import annotations

import torch

from engine.seq2seq.decode import translate
from engine.seq2seq.model import load_seq2seq
from engine.seq2seq.pointer_network import PointerNetwork
from engine.seq2seq.train import CHECKPOINTS
from tests.app.conftest import assert_clean, count_calls, figures, metric, open_page, trace


def model(name: str):
    return load_seq2seq(CHECKPOINTS / f"{name}.pt")[0]


def test_attention_page_shows_the_models_own_weights():
    at = open_page("seq2seq_attention", score="dot", text="march 3, 2021", step="3")
    assert_clean(at)
    expected = translate(model("dot"), "march 3, 2021")
    assert at.subheader[0].value == f"“march 3, 2021” → {expected.output}"
    heat = trace(figures(at)["Attention a_tj of the dot model: one row per output character"])
    assert torch.allclose(torch.tensor(heat["z"], dtype=torch.float32), expected.attention, atol=1e-6)
    bars = trace(next(spec for title, spec in figures(at).items() if title.startswith("Step 3")))
    assert torch.allclose(torch.tensor(bars["y"], dtype=torch.float32), expected.attention[3], atol=1e-6)  # from 0
    assert metric(at, "Σ_j a_3j") == "1.000000"
    assert at.dataframe[0].value["exact_match"].tolist()[2] == "100.0%"  # additive


def test_attention_page_handles_empty_long_and_odd_input():
    empty = open_page("seq2seq_attention", text="")
    assert_clean(empty)
    assert "empty" in empty.warning[0].value
    long = open_page("seq2seq_attention", text="the 3rd of march 2021 " * 8)
    assert_clean(long)
    assert any("reads the first 48" in i.value for i in long.info)
    odd = open_page("seq2seq_attention", text="3 märz 2021")
    assert_clean(odd)
    assert any("'ä'" in i.value for i in odd.info)


def test_coverage_page_curves_are_running_sums_and_eq_50_divides():
    text = "3 march 2021"
    at = open_page("coverage", text=text, step="4")
    assert_clean(at)
    expected = translate(model("additive"), text)
    curves = figures(at)["Coverage c^t summed over each word (without coverage)"]
    assert [trace(curves, i)["name"] for i in range(len(curves["data"]))] == ["0 3", "2 march", "8 2021",
                                                                              "␣ (every space)"]
    first = trace(curves, 0)  # the word "3" is the character 0
    assert torch.allclose(torch.tensor(first["y"], dtype=torch.float32), expected.attention[:, 0].cumsum(0)
                          - expected.attention[:, 0], atol=1e-6)
    assert list(first["x"]) == list(range(len(expected.attention)))  # steps from 0, as eq. 48 counts them
    total = sum(torch.tensor(trace(curves, i)["y"]) for i in range(len(curves["data"])))
    assert torch.allclose(total, torch.arange(len(expected.attention), dtype=total.dtype), atol=1e-5)  # c^t sums t rows
    bars = trace(next(spec for title, spec in figures(at).items() if title.startswith("Step 4:")), 1)
    assert torch.allclose(torch.tensor(bars["y"], dtype=torch.float32), expected.attention[4], atol=1e-6)
    mean = open_page("coverage", text=text, step="4", mean="True")
    first_mean = trace(figures(mean)["Coverage c^t summed over each word (without coverage)"], 0)
    steps = torch.arange(len(expected.attention)).clamp(min=1)
    assert torch.allclose(torch.tensor(first_mean["y"], dtype=torch.float32),
                          torch.tensor(first["y"], dtype=torch.float32) / steps, atol=1e-6)


def test_coverage_page_default_shows_the_skip_fixed_and_explains_the_distracted_table():
    at = open_page("coverage")
    assert_clean(at)
    assert [s.value for s in at.subheader[:2]] == ["without coverage: 222-03-03",
                                                   "with coverage, loss weight λ = 0.5: 2021-03-03"]
    assert any(c.value.startswith("Coverage does its job here") for c in at.caption)
    assert translate(model("additive_coverage"), "the 2nd of october 1952, 9:30").output == "1993-10-02"
    assert any("■ the end of the output" in c.value for c in at.caption)


def test_pointer_generator_page_mixture_matches_the_model():
    at = open_page("pointer_generator", text="call ximena on 3 march 2021")
    assert_clean(at)
    assert at.subheader[0].value.endswith("→ ximena 2021-03-03")
    assert float(metric(at, "max |mixture")) < 1e-5
    table = at.dataframe[0].value
    assert (table["g"] < 0.5).iloc[:6].all()  # the name's letters are copied


def test_pointer_network_page_sorts_typed_numbers_and_refuses_words():
    at = open_page("pointer_network", numbers="0.42, 0.17, 0.93, 0.05, 0.61")
    assert_clean(at)
    assert at.subheader[0].value == "→ 0.050, 0.170, 0.420, 0.610, 0.930"
    assert at.success
    bad = open_page("pointer_network", numbers="0.4, abc")
    assert_clean(bad)
    assert "'abc' is not a number" in bad.warning[0].value


def test_a_second_student_on_the_pointer_network_gets_its_answer_without_a_forward_pass(monkeypatch):
    """A set's forward pass runs once per server (issue 47), and the cached answer is the network's own."""
    passes = count_calls(monkeypatch, PointerNetwork, "forward")
    sessions = [open_page("pointer_network", n="13", seed="41") for _ in range(2)]
    for at in sessions:
        assert_clean(at)
    assert sessions[0].subheader[0].value == sessions[1].subheader[0].value
    assert len(passes) <= 1


def test_cross_attention_page_equals_the_decoder():
    at = open_page("cross_attention", model="general")
    assert_clean(at)
    assert float(metric(at, "max |step by step")) < 1e-5
    assert float(metric(at, "max |c_t")) < 1e-5


def test_pointer_sentinel_page_shows_eq_53_per_word_and_the_papers_comparison():
    from engine.seq2seq.sentinel import load_sentinel, read_passage

    at = open_page("pointer_sentinel")
    assert_clean(at)
    assert not at.warning
    model, extra = load_sentinel(CHECKPOINTS / "sentinel.pt")
    _, lstm_extra = load_sentinel(CHECKPOINTS / "sentinel_lstm.pt")
    table = at.dataframe[0].value
    words = [label.split(" ")[1] for label in table["next word"]]
    expected = read_passage(model, extra["vocab"], ["the"] + words, 100).mixture  # the default starts with "the"
    assert torch.allclose(torch.tensor(table["p = g p_vocab + (1 − g) p_ptr"].to_numpy()), expected.p, atol=1e-6)
    mixed = table["g"] * table["p_vocab"] + (1 - table["g"]) * table["p_ptr"]
    assert (mixed - table["p = g p_vocab + (1 − g) p_ptr"]).abs().max() < 1e-6
    # a name the vocabulary lacks: nothing at its first mention, copied by the pointer at the next
    yellen = [i for i, label in enumerate(table["next word"]) if label.endswith("yellen *")]
    assert table["p = g p_vocab + (1 − g) p_ptr"][yellen[0]] == 0
    assert table["p_vocab"][yellen[1]] == 0 and table["p_ptr"][yellen[1]] > 0.01
    assert table["share from the pointer"][yellen[1]] == 1
    assert metric(at, "Held out, with pointer") == f"{extra['held_out_perplexity']:.1f}"
    assert metric(at, "Held out, LSTM alone") == f"{lstm_extra['held_out_perplexity']:.1f}"
    assert any(title.startswith("Predicting “yellen”") for title in figures(at))  # its first copy, by default


def test_moving_the_predicted_word_on_pointer_sentinel_does_not_read_the_passage_again(monkeypatch):
    """Both LSTMs read the passage on every run, the Predicting word slider's too, though the word only picks which
    step to show (issue 47): a text and window are read once per server now."""
    from engine.seq2seq import sentinel
    readings = count_calls(monkeypatch, sentinel, "read_passage")
    perplexities = count_calls(monkeypatch, sentinel, "perplexity_as_unk")
    sessions = [open_page("pointer_sentinel", L="7", word=word) for word in ("5", "9")]
    for at in sessions:
        assert_clean(at)
    assert sessions[0].dataframe[0].value.equals(sessions[1].dataframe[0].value)
    assert len(readings) <= 1 and len(perplexities) <= 2  # the pointer's and the LSTM's


def test_pointer_sentinel_page_handles_a_short_window_and_a_long_passage():  # one word: test_controls' REFUSED
    narrow = open_page("pointer_sentinel", L="3")
    assert_clean(narrow)
    table = narrow.dataframe[0].value
    second = [i for i, label in enumerate(table["next word"]) if label.endswith("yellen *")][1]
    assert table["p_ptr"][second] == 0  # its first mention is outside the last 3 words
    long = open_page("pointer_sentinel", text="word " * 600)
    assert_clean(long)
    assert any("only its first 400" in i.value for i in long.info)


def test_the_distracted_dates_are_drawn_once_and_shared_read_only():
    """The coverage page's 1,000 distracted dates were unpickled from st.cache_data at every run (issue 47): one
    frozen draw is now shared by every run, the engine's own."""
    from engine.seq2seq.dates import distracted_examples
    from ui.loaders import distracted_dates

    first, again = distracted_dates(1000, 11), distracted_dates(1000, 11)
    assert again is first and isinstance(first, tuple)
    assert first == tuple(distracted_examples(1000, 11))
