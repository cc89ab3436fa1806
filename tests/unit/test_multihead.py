import pytest
import torch
import torch.nn.functional as F

from engine.attention.multihead import check_heads, init_multihead, multi_head_per_head, multi_head_steps


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
    with pytest.raises(ValueError, match="choose one of 1, 2, 4, 8"):
        check_heads(8, 3)
    with pytest.raises(ValueError):
        check_heads(8, 0)
