import math

import pytest
import torch

from engine.positions import rope


def reference_000(x: torch.Tensor, rope_theta: float) -> torch.Tensor:
    """000 §8.6's RotaryEmbedding.forward, line for line (angles in float64 to compare exactly)."""
    i = torch.arange(0, x.shape[-1], 2, dtype=torch.float64)
    freqs = 1.0 / (rope_theta ** (i / x.shape[-1]))
    angles = torch.outer(torch.arange(x.shape[2], dtype=torch.float64), freqs)
    cos, sin = torch.cos(angles), torch.sin(angles)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], dim=-1).flatten(-2, -1)


def rotate_half_reference(x: torch.Tensor, base: float) -> torch.Tensor:
    """transformers' Llama form: x cos + rotate_half(x) sin with cos/sin repeated over both halves."""
    d = x.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    freqs = torch.outer(torch.arange(x.shape[-2], dtype=torch.float64), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()


@pytest.mark.parametrize("base", rope.BASES)
def test_interleaved_is_000s_code(base):
    x = torch.randn(2, 3, 9, 16, dtype=torch.float64)
    torch.testing.assert_close(rope.apply_rope(x, torch.arange(9), base, "interleaved"), reference_000(x, base))


@pytest.mark.parametrize("base", rope.BASES)
def test_half_is_llamas_rotate_half(base):
    x = torch.randn(2, 7, 12, dtype=torch.float64)
    torch.testing.assert_close(rope.apply_rope(x, torch.arange(7), base, "half"), rotate_half_reference(x, base))


def test_pairings_agree_up_to_a_fixed_permutation_of_dimensions():
    x = torch.randn(5, 10, dtype=torch.float64)
    perm = rope.interleaved_to_half(10)
    positions = torch.arange(5)
    torch.testing.assert_close(rope.apply_rope(x[:, perm], positions, 1e4, "half"),
                               rope.apply_rope(x, positions, 1e4, "interleaved")[:, perm])
    assert not torch.allclose(rope.apply_rope(x, positions, 1e4, "half"), rope.apply_rope(x, positions, 1e4))


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
def test_rotation_preserves_norms(pairing):
    x = torch.randn(50, 32)
    rotated = rope.apply_rope(x, torch.arange(50) * 37, 1e4, pairing)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
@pytest.mark.parametrize("base", rope.BASES)
def test_score_depends_on_m_minus_n_alone(pairing, base):
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(64, generator=g), torch.randn(64, generator=g)
    for offset in (0, 1, 5, 40):
        scores = rope.scores_at_offset(q, k, offset, torch.arange(offset, offset + 200), base, pairing)
        # float32 rotation of 64 numbers at positions up to 240: spread stays below 1e-5 relative to |q||k|
        assert float(scores.max() - scores.min()) < 1e-5 * float(q.norm() * k.norm())


def test_relative_matrix_of_002():
    q, k = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    M = rope.relative_matrix(3, 7, 8, 1e4)
    rq = rope.apply_rope(q[None], torch.tensor([3]), 1e4)[0]
    rk = rope.apply_rope(k[None], torch.tensor([7]), 1e4)[0]
    assert float(rq @ rk) == pytest.approx(float(q @ M @ k), abs=1e-12)
    torch.testing.assert_close(M, rope.relative_matrix(10, 14, 8, 1e4))  # depends on j - i only
    # each block is R((j - i) alpha_k) as 002 writes it
    alpha_1 = 1 / 1e4 ** (2 / 8)
    torch.testing.assert_close(M[2:4, 2:4], torch.tensor([[math.cos(4 * alpha_1), -math.sin(4 * alpha_1)],
                                                          [math.sin(4 * alpha_1), math.cos(4 * alpha_1)]],
                                                         dtype=torch.float64))


def test_frequencies_of_eq_100():
    torch.testing.assert_close(rope.rope_frequencies(8, 100000.0),
                               torch.tensor([1.0, 100000.0 ** -0.25, 100000.0 ** -0.5, 100000.0 ** -0.75],
                                            dtype=torch.float64))


def test_decay_bound_starts_at_its_maximum_and_falls():
    for base in rope.BASES:
        bound = rope.decay_bound(128, base, 256)
        assert float(bound[0]) == pytest.approx((64 + 1) / 2)  # S_j = j at r = 0, mean of 1..64
        assert float(bound[-1]) < 0.5 * float(bound[0])


def test_float32_precision_is_measured():
    assert rope.float32_position_error(10, 64, 1e4) < 1e-5
    assert rope.float32_position_error(2_000_000, 64, 1e4) > 1e-2


def test_bad_inputs():
    with pytest.raises(ValueError, match="even"):
        rope.apply_rope(torch.zeros(2, 5), torch.arange(2), 1e4)
    with pytest.raises(ValueError, match="positive"):
        rope.rope_frequencies(4, 0.0)
    with pytest.raises(ValueError, match="unknown pairing"):
        rope.pair_indices(4, "diagonal")
