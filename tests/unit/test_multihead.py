import pytest
import torch
import torch.nn.functional as F

from engine.attention.multihead import check_heads, init_multihead, multi_head_per_head, multi_head_steps
from engine.errors import InputError
from engine.transformer.variants import VARIANTS, build_variant, causal_attention


def reference(x, w, n_heads, causal):
    """torch's own multi-head attention with our weights (it multiplies by W^T, hence the transposes)."""
    B, T, C = x.shape
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if causal else None  # True = blocked
    out, _ = F.multi_head_attention_forward(
        x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1), C, n_heads,
        in_proj_weight=w.W_qkv.T, in_proj_bias=None, bias_k=None, bias_v=None, add_zero_attn=False,
        dropout_p=0.0, out_proj_weight=w.W_o.T, out_proj_bias=None, attn_mask=mask, need_weights=False)
    return out.transpose(0, 1)  # (B, T, C)


@pytest.mark.parametrize("B,T,C,H,causal", [(1, 1, 2, 1, True), (2, 6, 16, 4, True), (3, 5, 12, 3, False),
                                            (1, 9, 32, 32, True)])
def test_steps_end_in_torch_multi_head_attention(B, T, C, H, causal):
    x = torch.randn(B, T, C, generator=torch.Generator().manual_seed(T))
    w = init_multihead(C, seed=1)
    steps = multi_head_steps(x, w, H, causal)
    torch.testing.assert_close(steps[-1].tensor, reference(x, w, H, causal), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(multi_head_per_head(x, w, H, causal), steps[-1].tensor, atol=1e-5, rtol=1e-4)


def test_shapes_follow_the_named_dimensions():
    steps = multi_head_steps(torch.randn(2, 5, 12), init_multihead(12, 0), 3, causal=True)
    sizes = {"B": 2, "T": 5, "C": 12, "3C": 36, "H": 3, "d": 4}
    for step in steps:
        names = step.dims.strip("()").split(", ")
        assert tuple(step.tensor.shape) == tuple(sizes[n] for n in names), step.code


def test_causal_rows_ignore_later_tokens():
    steps = multi_head_steps(torch.randn(1, 4, 8), init_multihead(8, 0), 2, causal=True)
    att = next(s.tensor for s in steps if s.code.startswith("att = F.softmax"))
    assert float(att.triu(1).abs().max()) == 0.0
    torch.testing.assert_close(att.sum(-1), torch.ones(1, 2, 4))


def test_heads_must_divide_d_model():
    with pytest.raises(InputError, match="choose one of 1, 2, 4, 8"):
        check_heads(8, 3)
    with pytest.raises(InputError):
        check_heads(8, 0)


@pytest.mark.parametrize("H,g,T,t", [(4, 4, 5, 5), (4, 2, 3, 7), (6, 1, 1, 9), (8, 2, 1, 1)])
def test_grouped_attention_equals_torchs_on_keys_and_values_copied_per_head(H, g, T, t):
    """Our causal_attention reads each group's K and V once; torch's SDPA on copies, one per query head."""
    gen = torch.Generator().manual_seed(H * 100 + g)
    q = torch.randn(2, H, T, 8, generator=gen)  # (B, H, T, d)
    k, v = torch.randn(2, 2, g, t, 8, generator=gen)  # (B, g, t, d) each
    sees = torch.ones(T, t, dtype=torch.bool).tril(t - T)  # new queries sit at the end of the keys
    expected = F.scaled_dot_product_attention(q, k.repeat_interleave(H // g, 1), v.repeat_interleave(H // g, 1),
                                              attn_mask=sees)
    torch.testing.assert_close(causal_attention(q, k, v), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", VARIANTS)
def test_cache_for_is_the_cache_forward_leaves(name):
    torch.manual_seed(2)
    module = build_variant(name, 32, 4, 2, 12).eval()
    x = torch.randn(2, 6, 32)
    _, cache = module(x)
    for key, value in module.cache_for(x).items():
        torch.testing.assert_close(value, cache[key])
