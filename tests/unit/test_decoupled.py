import pytest
import torch

from engine.errors import InputError
from engine.positions import decoupled as mla


@pytest.mark.parametrize("source", mla.ROPE_KEY_SOURCES)
@pytest.mark.parametrize("T", [1, 6])
def test_absorbed_equals_explicit(source, T):
    cfg = mla.MLAConfig(rope_key_from=source)
    w = mla.init_mla(cfg, seed=T)
    h = torch.randn(T, cfg.d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    explicit, absorbed = mla.mla_explicit(h, w, cfg), mla.mla_absorbed(h, w, cfg)
    torch.testing.assert_close(absorbed.output, explicit.output, atol=1e-12, rtol=1e-10)  # float64 reassociation
    torch.testing.assert_close(absorbed.weights, explicit.weights, atol=1e-12, rtol=1e-10)


def test_explicit_scores_are_content_plus_rope_over_sqrt_of_both_widths():
    cfg = mla.MLAConfig(n_heads=1, d_h=4, d_h_rope=2, d_c=3, d_c_q=5, d_model=6)
    w = mla.init_mla(cfg, 0)
    h = torch.randn(3, 6, dtype=torch.float64)
    out = mla.mla_explicit(h, w, cfg)
    c_q, c_kv = h @ w.W_dq.T, h @ w.W_dkv.T
    q_c, k_c, v_c = c_q @ w.W_uq.T, c_kv @ w.W_uk.T, c_kv @ w.W_uv.T
    from engine.positions.rope import apply_rope
    q_r = apply_rope(c_q @ w.W_qr.T, torch.arange(3), cfg.base)
    k_r = apply_rope(c_kv @ w.W_kr.T, torch.arange(3), cfg.base)  # 000 eq. 117: from the latent
    scores = (q_c @ k_c.T + q_r @ k_r.T) / (4 + 2) ** 0.5  # 000 eq. 115
    expected = torch.softmax(scores.masked_fill(torch.ones(3, 3).triu(1).bool(), float("-inf")), dim=-1)
    torch.testing.assert_close(out.weights[0], expected)
    torch.testing.assert_close(out.output, (expected @ v_c) @ w.W_o.T)


def test_rope_on_the_content_part_cannot_be_absorbed():
    cfg = mla.MLAConfig()
    w = mla.init_mla(cfg, 0)
    h = torch.randn(5, cfg.d_model, dtype=torch.float64)
    assert mla.rope_on_content_error(h, w, cfg) > 1e-2
    assert mla.rope_on_content_error(h[:1], w, cfg) < 1e-12  # one token: m = n, the rotations cancel


def test_cache_counts():
    counts = mla.cache_elements_per_token(mla.MLAConfig(n_heads=128, d_h=128, d_h_rope=64, d_c=512))
    assert counts == {"MLA (c^KV + k^R)": 576, "MHA (K and V of every head)": 32768}  # DeepSeek-V2's shapes


def test_bad_source():
    with pytest.raises(ValueError):
        mla.init_mla(mla.MLAConfig(rope_key_from="query"), 0)
