"""The transformer pages, read back against the engine and the notes."""
from __future__ import annotations

import re

import pytest

from engine.transformer import cache_sizes as cs
from engine.transformer.kv_cache import generation_work
from tests.app.conftest import assert_clean, count_calls, figures, open_page

MEDIAN_AND_SPREAD = r"\d+(\.\d+)?( ms)? \(\d+(\.\d+)?–\d+(\.\d+)?\)"  # "85 ms (80–276)", "2.39 (2.00–5.15)"


def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def test_generation_starts_from_the_prompt_and_shows_the_held_out_loss():
    from engine.transformer.model import generate
    from ui.loaders import char_model

    at = open_page("transformer_lm", prompt="The fire ", temp="0.0", new="40")
    assert_clean(at)
    model, vocab, extra = char_model("causal")
    ids = vocab.encode("The fire ")[None]  # (1, T0)
    greedy = vocab.decode(generate(model, ids, 40, temperature=0.0)[0, ids.shape[1]:].tolist())
    assert at.code[0].value == "The fire ⟶" + greedy  # the compiled sampler's greedy pick is the torch model's
    sampled = open_page("transformer_lm", prompt="The fire ", temp="1.0", new="40", seed="3")
    assert sampled.code[0].value != at.code[0].value and len(sampled.code[0].value) == len(at.code[0].value)
    assert metric(at, "Held-out loss") == f"{extra['metrics']['held_out_loss']:.3f} nats/char"


def test_prompt_problems_are_explained():
    at = open_page("transformer_lm", prompt="naïve ünïcode")
    assert_clean(at)
    assert any("never saw" in i.value for i in at.info)
    at = open_page("transformer_lm", new="200", prompt="x" * 600)
    assert any("only its last" in i.value for i in at.info)
    at.text_input(key="prompt").set_value("").run()
    assert "empty" in at.warning[0].value


def test_kv_cache_page_reproduces_002_and_matches_tokens():
    at = open_page("kv_cache", new="48", prompt="The fire ")
    assert len(at.code[0].value.split("⟶")[1]) == 48
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table["k_t = x_t W^K"]) == ["[1, 4]", "[3, 10]", "[5, 16]"]
    assert list(table["v_t = x_t W^V"]) == ["[2.5, 0.5]", "[5.5, 0.5]", "[8.5, 0.5]"]
    assert "Identical tokens" in at.success[0].value


def test_kv_cache_page_generates_the_default_prompt_at_every_length_as_the_engine_does():
    import torch

    from engine.transformer.model import generate
    from ui import defaults
    from ui.loaders import char_model

    model, vocab, _ = char_model("causal")
    ids = vocab.encode(defaults.KV_PROMPT)[None]  # (1, T0)
    at = open_page("kv_cache")
    for n_new in (16, 40):
        at.slider(key="new").set_value(n_new).run()
        assert_clean(at)
        with torch.random.fork_rng():
            expected = vocab.decode(generate(model, ids, n_new, defaults.KV_TEMPERATURE)[0, ids.shape[1]:].tolist())
        assert at.code[0].value == defaults.KV_PROMPT + "⟶" + expected
        assert "Identical tokens" in at.success[0].value


def test_kv_cache_page_counts_the_work_and_times_it_on_demand_for_everyone():
    from ui.loaders import char_model

    params = {"new": "8", "prompt": "Counted, then timed. "}
    at = open_page("kv_cache", **params)
    assert_clean(at)
    config = char_model("causal")[0].config
    work = {use: generation_work(config, len(params["prompt"]), 8, use) for use in (True, False)}
    assert metric(at, "Scores q·k computed") == f"{work[False].scores / work[True].scores:.0f}×"
    table = at.dataframe[1].value
    assert list(table["scores q·k computed"]) == [f"{work[True].scores:,}", f"{work[False].scores:,}"]
    assert "Not timed on this server yet" in at.info[0].value  # nothing heavy runs before the button
    at.button(key="measure").click().run()
    assert_clean(at)
    label = next(c.value for c in at.caption if c.value.startswith("Timings measured"))
    assert "on this server (CPU, 1 thread), median of 5 interleaved runs after 1 warm-up" in label
    assert "fastest and slowest" in label
    assert re.fullmatch(r"\d+\.\d× \(\d+\.\d–\d+\.\d\)", metric(at, "Measured speed-up"))
    timed = list(at.dataframe[1].value["8 steps, median (fastest–slowest)"])
    assert all(re.fullmatch(MEDIAN_AND_SPREAD, cell) for cell in timed)
    assert "Time per generated token: median, fastest to slowest run" in figures(at)
    again = open_page("kv_cache", **params)  # another visitor sees the same measurement, unasked
    assert not again.info and label in [c.value for c in again.caption]


def test_variants_page_counts_what_each_caches():
    at = open_page("attention_variants", C="256", h="8", g="2", dc="64")
    assert_clean(at)
    assert list(at.dataframe[0].value["numbers"]) == [2 * 256, 2 * 2 * 32, 2 * 32, 64]
    assert float(metric(at, "max |absorbed")) < 1e-4
    assert at.selectbox(key="g").options == ["1", "2", "4", "8"]  # only groups that divide the heads
    at = open_page("attention_variants", h="6", g="4")
    assert any("g=4" in i.value for i in at.info)  # a link with a group count that does not divide


def test_variants_default_timing_is_made_as_the_server_starts_and_its_first_visitor_reads_it(monkeypatch):
    from ui import queued, variants

    variants.time_defaults()  # what the start-up thread does (ui/defaults.py)
    kinds = []
    through_the_line = queued.run
    monkeypatch.setattr(queued, "run", lambda kind, *args, **kwargs: kinds.append(kind) or
                        through_the_line(kind, *args, **kwargs))
    at = open_page("attention_variants")
    assert_clean(at)
    assert kinds == []  # no job of its own: the page reads the start-up's timing
    assert any(c.value.startswith("Timings measured") for c in at.caption)


def test_variants_page_times_every_variant_in_turn_and_says_where():
    at = open_page("attention_variants", C="128", h="4", g="2", dc="32")
    assert_clean(at)
    label = next(c.value for c in at.caption if c.value.startswith("Timings measured"))
    assert "on this server (CPU, 1 thread), median of 9 runs interleaved with the other variants after 2 warm-ups" \
        in label
    steps = at.dataframe[1].value
    assert list(steps["variant"]) == ["MHA", "GQA", "MQA", "MLA"]
    assert all(re.fullmatch(MEDIAN_AND_SPREAD, cell) for cell in steps["ms per step at 8,192 tokens"])
    assert steps["against MHA"][0] == "1.00×"
    # MHA: 2·128 numbers a token × 8,192 tokens × 4 B = 8 MiB
    assert list(at.dataframe[0].value["MiB per layer at 8,192 tokens"]) == ["8.0", "4.0", "2.0", "1.0"]
    chart = figures(at)["One decode step against the cache: median, fastest to slowest run"]
    assert [trace["error_y"]["type"] for trace in chart["data"]] == ["data"] * 4
    at.button(key="measure").click().run()  # measures afresh: a new label, the same statements
    assert_clean(at)
    assert any(c.value.startswith("Timings measured") for c in at.caption)


def test_cache_sizes_table_and_custom_row():
    at = open_page("cache_sizes", ctx="4096", batch="1", dtype="bf16")
    frame = at.dataframe[0].value.set_index("model")
    assert frame.loc["Llama-2-7B", "GiB in total"] == pytest.approx(2.0)  # 0.5 MiB a token in bf16
    assert frame.loc["DeepSeek-V2", "KiB per token (bf16)"] == round(cs.BY_NAME["DeepSeek-V2"].bytes_per_token("bf16") / 1024, 1)
    assert "Your model" in frame.index
    at.slider(key="kv").set_value(5).run()
    assert_clean(at)
    assert "5 KV heads must be at least 1 and divide 32 heads" in at.warning[0].value
    assert "Your model" not in at.dataframe[0].value["model"].tolist()
    assert len(at.dataframe[0].value) == len(cs.MODELS)


def test_cache_sizes_draws_equal_models_as_one_named_line():
    at = open_page("cache_sizes", L="32", H="32", kv="8", hd="128")
    assert_clean(at)
    names = [trace["name"] for trace in figures(at)["Total cache against context, batch 1"]["data"]]
    assert "Your model = Llama-3-8B = Mistral-7B" in names and "Llama-2-70B = Llama-3-70B" in names
    assert len(names) == len(cs.coinciding([cs.CacheConfig("Your model", 32, 32, 8, 128), *cs.MODELS])) == 8
    note = next(c.value for c in at.caption if "share one line" in c.value)
    assert "Your model = Llama-3-8B = Mistral-7B; Llama-2-70B = Llama-3-70B" in note
    assert "DeepSeek-V2 and DeepSeek-V3 differ by 1.6%" in note


def test_moving_lambda_on_objectives_does_not_score_the_sentence_with_the_language_models_again(monkeypatch):
    """Every run scored the sentence with the causal and the masked LM, though λ weighs only the fine-tuning losses
    (issue 47): each text and setting is scored once per server now."""
    from engine.transformer import objectives
    scored = [count_calls(monkeypatch, objectives, name) for name in ("causal_loss", "masked_loss")]
    sessions = [open_page("objectives", lam=lam, seed="17") for lam in ("0.3", "1.1")]
    for at in sessions:
        assert_clean(at)
    assert figures(sessions[0]) == figures(sessions[1])
    assert all(len(calls) <= 1 for calls in scored), [len(calls) for calls in scored]


def test_objectives_page_adds_up_l3():
    at = open_page("objectives", lam="1.5")
    assert_clean(at)
    L1, L2, L3 = (float(metric(at, name)) for name in ("L1", "L2", "L3"))
    assert L3 == pytest.approx(L2 + 1.5 * L1, abs=2e-3)  # three rounded numbers
    at.text_input(key="text").set_value("a").run()
    assert "at least two characters" in at.warning[0].value
