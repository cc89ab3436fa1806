"""SmolLM2 wired into the decoding lab, the RoPE, KV cache and GQA pages, each against an independent source:
an uncached forward pass, the generation module's own greedy loop, the cache-size table, per-head attention
with K repeated for every head, and RoPE's closed form."""
import math

import pytest
import torch
import torch.nn.functional as F

from engine.decoding.models import SmolLMStepper
from engine.decoding.penalties import Scoring
from engine.decoding.ranking import ranked_hypotheses, winners
from engine.decoding.search import Pruning, search
from engine.errors import InputError
from engine.llm import files, generation, heads
from engine.llm.smollm import load
from engine.positions import rope
from engine.transformer import cache_sizes as cs
from engine.transformer.kv_cache import cache_growth
from engine.transformer.variants import causal_attention_weights, group_membership

pytestmark = pytest.mark.xdist_group("smollm")  # one worker loads the model once

QUESTION = "What is the capital of France?"
SHORT = "The cat sat on the mat because it was tired."
# float32 logits of about 20 in size, summed over 576-wide dot products in a different order with and without
# the cache: they differ by a few 1e-5; log-probabilities inherit that
LOG_P_TOLERANCE = 1e-3


@pytest.fixture(scope="session")
def lm():
    files.fetch()  # once per run: the README's set-up command has usually fetched it already
    return load()


def full_log_probs(lm, ids: list[int]) -> torch.Tensor:
    """log p(next token | ids) from one uncached forward pass over all of ids: (V,)."""
    with torch.no_grad():
        return F.log_softmax(lm.model(torch.tensor([ids])).logits[0, -1].float(), dim=-1)


def test_stepper_log_probs_equal_an_uncached_forward_pass(lm):
    ids, _ = generation.prompt_ids(lm, QUESTION)
    stepper = SmolLMStepper(lm, ids)
    assert stepper.vocab_size == 49_152 and stepper.eos == 2 and stepper.bos == ids[-1]
    stepper.start()
    first, attention = stepper.step(torch.tensor([stepper.bos]), torch.tensor([0]))
    assert attention is None and first.shape == (1, 49_152)
    torch.testing.assert_close(first[0], full_log_probs(lm, ids), atol=LOG_P_TOLERANCE, rtol=0)
    a, b = first[0].topk(2).indices.tolist()
    # two prefixes from the one root, listed b first: the cache rows must follow them by `parents`
    second, _ = stepper.step(torch.tensor([b, a]), torch.tensor([0, 0]))
    torch.testing.assert_close(second[0], full_log_probs(lm, ids + [b]), atol=LOG_P_TOLERANCE, rtol=0)
    torch.testing.assert_close(second[1], full_log_probs(lm, ids + [a]), atol=LOG_P_TOLERANCE, rtol=0)
    third, _ = stepper.step(torch.tensor([7, 9]), torch.tensor([1, 1]))  # both extend prefix [a]
    torch.testing.assert_close(third[1], full_log_probs(lm, ids + [a, 9]), atol=LOG_P_TOLERANCE, rtol=0)


def test_greedy_and_beam_search_answer_the_chat_question(lm):
    ids, _ = generation.prompt_ids(lm, QUESTION)
    stepper = SmolLMStepper(lm, ids)
    greedy = search(stepper, "greedy", 1, 16)
    (answer,) = greedy.finished
    text = "".join(stepper.label(t) for t in greedy.tokens(answer.id))
    assert text == "The␣capital␣of␣France␣is␣Paris.■"
    expected = [g.token for g in generation.stream(lm, ids, 16)]  # the generation module's own greedy loop
    assert greedy.tokens(answer.id) == expected
    # its log P is what one uncached pass over prompt + answer gives, token by token
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids + expected])).logits[0, len(ids) - 1:-1]  # (|Y|, V)
    log_p = F.log_softmax(logits.float(), dim=-1).gather(1, torch.tensor(expected)[:, None]).sum()
    assert answer.cum_log_p == pytest.approx(float(log_p), abs=len(expected) * LOG_P_TOLERANCE)
    scoring = Scoring(0.6, 0.2, 0.1)  # β > 0 with no source: cp is 0, ep is 0, as for the character LM
    beam = search(stepper, "beam", 4, 12, pruned_shown=8, pruning=Pruning(scoring))
    found = ranked_hypotheses(beam, scoring, stepper.source_length)
    assert found and all(h.terms["cp"] == 0 and h.terms["ep"] == 0 for h in found)
    best = winners(found)["gnmt"]
    assert "Paris" in "".join(stepper.label(t) for t in beam.tokens(best))


def test_labels_show_spaces_new_lines_and_the_end(lm):
    stepper = SmolLMStepper(lm, lm.tokenizer.encode("hi"))
    assert stepper.label(lm.tokenizer.encode(" the")[0]) == "␣the"
    assert stepper.label(lm.tokenizer.encode("\n")[0]) == "⏎"
    assert stepper.label(lm.tokenizer.eos_id) == "■"
    with pytest.raises(InputError, match="empty"):
        SmolLMStepper(lm, [])


def test_the_real_cache_grows_by_the_tables_figure_per_token(lm):
    ids = lm.tokenizer.encode(SHORT)
    grown = cache_growth(lm.model, ids, 8)
    table = cs.BY_NAME["SmolLM2-135M"]
    assert table.elements_per_token() == lm.config.cache_per_token == 2 * 30 * 3 * 64 == 11_520
    assert grown.positions == list(range(len(ids), len(ids) + 9))
    assert grown.numbers[0] == len(ids) * 11_520
    assert {b - a for a, b in zip(grown.numbers, grown.numbers[1:])} == {table.elements_per_token()}
    assert grown.tokens == [g.token for g in generation.stream(lm, ids, 8)]


def test_grouping_is_h_floor_3_and_is_what_grouped_attention_computes(lm):
    membership = group_membership(9, 3)
    assert membership.shape == (9, 3) and membership.sum(1).tolist() == [1] * 9
    assert membership.argmax(1).tolist() == [h // 3 for h in range(9)]
    assert [heads.kv_head_of(lm.config, h) for h in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    with pytest.raises(InputError):
        group_membership(9, 2)
    torch.manual_seed(0)
    q, k = torch.randn(1, 9, 5, 16), torch.randn(1, 3, 5, 16)  # (B, H, T, d), (B, g, T, d)
    repeated = k.repeat_interleave(3, dim=1)  # (B, H, T, d): MHA with each head's K copied out, as in modeling_llama
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    plain = torch.softmax((q @ repeated.transpose(-2, -1) / 4).masked_fill(~causal, float("-inf")), dim=-1)
    torch.testing.assert_close(causal_attention_weights(q, k), plain)


def test_a_groups_heads_read_one_k_and_attend_differently(lm):
    ids = lm.tokenizer.encode(SHORT)
    grouped = heads.group_attention(lm, ids, 3, 1)
    assert grouped.heads == [3, 4, 5] and grouped.weights.shape == (3, len(ids), len(ids))
    assert grouped.recomputed_gap < 1e-6
    torch.testing.assert_close(grouped.weights.sum(-1), torch.ones(3, len(ids)))
    assert set(grouped.differences) == {(3, 4), (3, 5), (4, 5)}
    assert all(0.01 < share < 1 for share in grouped.differences.values())
    with pytest.raises(InputError):
        heads.group_attention(lm, ids, 3, 3)


def test_a_real_heads_score_depends_only_on_the_offset(lm):
    ids = lm.tokenizer.encode(SHORT)
    i = len(ids) - 1
    real = heads.rope_on_head(lm, ids, 3, 4, i)
    head = heads.head_qk(lm, ids, 3, 4)
    q, k = head.q[i].double(), head.k.double()  # (d,), (T, d)
    scale = float(q.norm() * k.norm(dim=-1).max())  # the size of the products a score sums
    assert real.kv_head == 1 and real.shifted.shape == (heads.SHIFTS, i + 1)
    # the score at a fixed offset is the same for every position: each column of `shifted` is flat
    assert float((real.shifted - real.shifted[0]).abs().max()) < 1e-6 * scale
    assert real.spread < 10  # in units of eps ||q|| ||k||: float32 rounding only
    # the model's own rotated q and k give the closed form q . R_(j-i) k, computed here from rotation matrices
    R = [rope.rotation_matrix(p, 64, 100_000.0) for p in range(i + 1)]
    by_matrix = torch.stack([q @ R[i].T @ R[j] @ k[j] for j in range(i + 1)])
    torch.testing.assert_close(real.closed_form, by_matrix, atol=1e-9 * scale, rtol=0)
    torch.testing.assert_close(real.computed.double(), real.closed_form, atol=1e-6 * scale, rtol=0)
    # RoPE keeps q's length at every position of its path, which starts at q itself
    torch.testing.assert_close(real.path.norm(dim=-1), q.float().norm().expand(len(real.path)), rtol=1e-5, atol=0)
    torch.testing.assert_close(real.path[0], head.q[i])
    assert real.frequencies[1] == pytest.approx(100_000 ** (-2 / 64))
    with pytest.raises(InputError):
        heads.rope_on_head(lm, ids, 3, 4, len(ids))
    with pytest.raises(InputError):
        heads.rope_on_head(lm, ids, 30, 0, 0)
    assert math.isclose(lm.config.rope_base, 100_000)
