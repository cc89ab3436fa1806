"""The transformer pages, read back against the engine and the notes."""
from __future__ import annotations

import pytest

from engine.transformer import cache_sizes as cs
from tests.app.conftest import assert_clean, open_page


def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def test_generation_starts_from_the_prompt_and_shows_the_held_out_loss():
    from ui.loaders import char_model

    at = open_page("transformer_lm", prompt="The fire ", temp="0.0", new="40")
    assert_clean(at)
    assert at.code[0].value.startswith("The fire ⟶")
    _, _, extra = char_model("causal")
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
    table = at.table[0].value
    assert list(table["k_t = x_t W^K"]) == ["[1, 4]", "[3, 10]", "[5, 16]"]
    assert list(table["v_t = x_t W^V"]) == ["[2.5, 0.5]", "[5.5, 0.5]", "[8.5, 0.5]"]
    assert "Identical tokens" in at.success[0].value


def test_variants_page_counts_what_each_caches():
    at = open_page("attention_variants", C="256", h="8", g="2", dc="64")
    assert_clean(at)
    assert list(at.table[0].value["numbers"]) == [2 * 256, 2 * 2 * 32, 2 * 32, 64]
    assert float(metric(at, "max |absorbed")) < 1e-4
    assert at.selectbox(key="g").options == ["1", "2", "4", "8"]  # only groups that divide the heads
    at = open_page("attention_variants", h="6", g="4")
    assert any("g=4" in i.value for i in at.info)  # a link with a group count that does not divide


def test_cache_sizes_table_and_custom_row():
    at = open_page("cache_sizes", ctx="4096", batch="1", dtype="bf16")
    frame = at.dataframe[0].value.set_index("model")
    assert frame.loc["Llama-2-7B", "GiB in total"] == pytest.approx(2.0)  # 0.5 MiB a token in bf16
    assert frame.loc["DeepSeek-V2", "KiB per token (bf16)"] == round(cs.BY_NAME["DeepSeek-V2"].bytes_per_token("bf16") / 1024, 1)
    assert "Your model" in frame.index
    at.slider(key="L").set_value(0).run()
    assert_clean(at)
    assert "at least 1" in at.warning[0].value
    assert "Your model" not in at.dataframe[0].value["model"].tolist()
    assert len(at.dataframe[0].value) == len(cs.MODELS)


def test_objectives_page_adds_up_l3():
    at = open_page("objectives", lam="1.5")
    assert_clean(at)
    L1, L2, L3 = (float(metric(at, name)) for name in ("L1", "L2", "L3"))
    assert L3 == pytest.approx(L2 + 1.5 * L1, abs=2e-3)  # three rounded numbers
    at.text_input(key="text").set_value("a").run()
    assert "at least two characters" in at.warning[0].value
