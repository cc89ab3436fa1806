import math

import pytest
import torch
import torch.nn.functional as F

from engine.errors import InputError
from engine.transformer.model import (CausalSelfAttention, ModelConfig, TransformerLM, generate, sample_next,
                                      sampling_distribution)
from engine.transformer.variants import VARIANTS, GroupedQueryAttention, LatentAttention, build_variant

CFG = ModelConfig(vocab_size=11, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_seq_len=40)


def model(causal=True, seed=0):
    torch.manual_seed(seed)
    return TransformerLM(ModelConfig(**{**CFG.__dict__, "causal": causal})).eval()


def test_outputs_at_t_ignore_later_tokens():
    m = model()
    a = torch.randint(11, (1, 12), generator=torch.Generator().manual_seed(1))
    b = a.clone()
    b[0, 7:] = (b[0, 7:] + 3) % 11
    la, lb = m(a).logits, m(b).logits
    torch.testing.assert_close(la[0, :7], lb[0, :7])
    assert (la[0, 7:] - lb[0, 7:]).abs().max() > 1e-3


def test_bidirectional_model_does_see_later_tokens():
    m = model(causal=False)
    a = torch.randint(11, (1, 12), generator=torch.Generator().manual_seed(1))
    b = a.clone()
    b[0, -1] = (b[0, -1] + 1) % 11
    assert (m(a).logits[0, 0] - m(b).logits[0, 0]).abs().max() > 1e-4


def test_cached_logits_equal_uncached():
    m = model()
    ids = torch.randint(11, (2, 20), generator=torch.Generator().manual_seed(2))
    full = m(ids).logits
    out = m(ids[:, :5])
    steps = [out.logits]
    for t in range(5, 20):
        out = m(ids[:, t:t + 1], cache=out.cache)
        steps.append(out.logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("temperature,top_k", [(0.0, None), (1.0, None), (0.8, 3)])
def test_generation_with_and_without_cache_gives_the_same_tokens(temperature, top_k):
    m = model()
    prompt = torch.tensor([[1, 2, 3]])
    with_cache = generate(m, prompt, 25, temperature, top_k, use_cache=True, seed=5)
    without = generate(m, prompt, 25, temperature, top_k, use_cache=False, seed=5)
    assert torch.equal(with_cache, without)


def test_sampling_rules():
    logits = torch.tensor([[0.0, 5.0, 1.0, 4.0]])
    assert int(sample_next(logits, 0.0, None, None)) == 1
    g = torch.Generator().manual_seed(0)
    draws = {int(sample_next(logits, 1.0, 2, g)) for _ in range(200)}
    assert draws == {1, 3}  # top-2 keeps only the two largest
    with pytest.raises(InputError):
        sample_next(logits, -1.0, None, None)
    with pytest.raises(InputError):
        sample_next(logits, 1.0, 0, None)


def test_context_window_is_enforced():
    with pytest.raises(InputError, match="context window"):
        generate(model(), torch.zeros(1, 30, dtype=torch.long), 20)


@pytest.mark.parametrize("causal", [True, False])
def test_the_models_attention_equals_torch_sdpa_with_and_without_a_cache(causal):
    torch.manual_seed(5)
    attention = CausalSelfAttention(ModelConfig(**{**CFG.__dict__, "causal": causal})).eval()
    x = torch.randn(2, 9, 32)  # (B, T, C)
    q, k, v = (t.view(2, 9, 4, 8).transpose(1, 2) for t in attention.qkv(x).split(32, dim=2))  # (B, H, T, d)
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (B, H, T, d)
    expected = attention.proj(heads.transpose(1, 2).reshape(2, 9, 32))
    y, weights, _ = attention(x)
    torch.testing.assert_close(y, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 9))
    if causal:  # the last 3 queries against a cache of the first 6 tokens: rows 6..8 of the full causal map
        _, _, cache = attention(x[:, :6])
        y_cached, _, _ = attention(x[:, 6:], cache)
        torch.testing.assert_close(y_cached, expected[:, 6:], atol=1e-5, rtol=1e-5)


def test_gqa_with_g_equal_h_is_the_models_multi_head_attention():
    torch.manual_seed(3)
    gqa = GroupedQueryAttention(32, 4, 4)
    mha = CausalSelfAttention(CFG)
    with torch.no_grad():  # tie weights: our CausalSelfAttention packs q, k, v in one Linear with biases
        mha.qkv.weight.copy_(torch.cat([gqa.W_q.weight, gqa.W_k.weight, gqa.W_v.weight]))
        mha.qkv.bias.zero_()
        mha.proj.weight.copy_(gqa.W_o.weight)
        mha.proj.bias.zero_()
    x = torch.randn(2, 9, 32)
    torch.testing.assert_close(gqa(x)[0], mha(x)[0], atol=1e-5, rtol=1e-5)


def test_gqa_with_one_group_is_multi_query_attention_as_001_writes_it():
    torch.manual_seed(4)
    gqa = GroupedQueryAttention(32, 4, 1)
    x = torch.randn(1, 7, 32)
    d = 8
    k_shared, v_shared = x[0] @ gqa.W_k.weight.T, x[0] @ gqa.W_v.weight.T  # (T, d): one K and V for all heads
    heads = []
    for i in range(4):
        q_i = x[0] @ gqa.W_q.weight[i * d:(i + 1) * d].T
        scores = (q_i @ k_shared.T / math.sqrt(d)).masked_fill(torch.ones(7, 7).triu(1).bool(), float("-inf"))
        heads.append(torch.softmax(scores, -1) @ v_shared)
    torch.testing.assert_close(gqa(x)[0][0], torch.cat(heads, -1) @ gqa.W_o.weight.T, atol=1e-5, rtol=1e-5)


def test_absorbed_mla_equals_unabsorbed():
    torch.manual_seed(5)
    plain = LatentAttention(32, 4, 12, absorbed=False)
    absorbed = LatentAttention(32, 4, 12, absorbed=True)
    absorbed.load_state_dict(plain.state_dict())
    x = torch.randn(2, 10, 32)
    torch.testing.assert_close(absorbed(x)[0], plain(x)[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", VARIANTS)
def test_every_variant_decodes_with_its_cache_as_it_runs_whole(name):
    torch.manual_seed(6)
    module = build_variant(name, 32, 4, 2, 12)
    x = torch.randn(1, 8, 32)
    full, _ = module(x)
    y, cache = module(x[:, :3])
    outs = [y]
    for t in range(3, 8):
        y, cache = module(x[:, t:t + 1], cache)
        outs.append(y)
    torch.testing.assert_close(torch.cat(outs, 1), full, atol=1e-5, rtol=1e-5)
    cached = sum(v.shape[1] * v.shape[-1] if v.dim() == 3 else v.shape[1] * v.shape[2] * v.shape[3]
                 for v in cache.values())
    assert cached == 8 * module.cache_per_token()


def test_groups_must_divide_heads():
    with pytest.raises(InputError, match="choose one of 1, 2, 4"):
        GroupedQueryAttention(32, 4, 3)


def test_classifier_needs_two_tokens():
    from engine.transformer.objectives import SequenceClassifier
    with pytest.raises(InputError, match="at least two tokens"):
        SequenceClassifier(model(), 2)(torch.tensor([[3]]), torch.tensor([1]), 0.5)


@pytest.mark.parametrize("temperature", [1e-45, 1e-30, 1e-8])
def test_a_tiny_temperature_samples_the_most_likely_token_instead_of_nan(temperature):
    """A URL may set T to any positive float (hypothesis found 1.4e-45): logits / T overflow to ±inf, whose
    softmax is NaN; the limit T -> 0 is the argmax, which sampling must give."""
    logits = torch.tensor([[2.0, -1.0, 3.5, 0.0], [0.1, 0.3, -7.0, 0.2]])
    probs = sampling_distribution(logits, temperature)
    assert torch.equal(probs, F.one_hot(logits.argmax(-1), 4).float())
    torch.testing.assert_close(sampling_distribution(logits, 0.7), torch.softmax(logits / 0.7, -1))
