import math

import pytest
import torch

from engine.errors import InputError
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
        bound = rope.decay_bound(128, base, torch.arange(257))
        assert float(bound[0]) == pytest.approx((64 + 1) / 2)  # S_j = j at r = 0, mean of 1..64
        assert float(bound[-1]) < 0.5 * float(bound[0])


def test_float32_precision_is_measured():
    assert rope.float32_position_error(10, 64, 1e4) < 1e-5
    assert rope.float32_position_error(2_000_000, 64, 1e4) > 1e-2


def test_bad_inputs():
    with pytest.raises(InputError, match="even"):
        rope.apply_rope(torch.zeros(2, 5), torch.arange(2), 1e4)
    with pytest.raises(InputError, match="positive"):
        rope.rope_frequencies(4, 0.0)
    with pytest.raises(ValueError, match="unknown pairing"):
        rope.pair_indices(4, "diagonal")


def closed_form_score(q: torch.Tensor, k: torch.Tensor, offset: int, base: float) -> float:
    """qᵀ R_m^T R_(m−offset) k written out pair by pair (interleaved): Σ_i (q_a k_a + q_b k_b) cos(offset θ_i)
    + (q_a k_b − q_b k_a) sin(offset θ_i), with math's cos and sin."""
    total = 0.0
    for i in range(len(q) // 2):
        angle = offset / base ** (2 * i / len(q))
        qa, qb, ka, kb = (float(v) for v in (q[2 * i], q[2 * i + 1], k[2 * i], k[2 * i + 1]))
        total += (qa * ka + qb * kb) * math.cos(angle) + (qa * kb - qb * ka) * math.sin(angle)
    return total


def test_relative_score_is_the_pairwise_closed_form():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(16, generator=g, dtype=torch.float64), torch.randn(16, generator=g, dtype=torch.float64)
    offsets = torch.tensor([0, 1, 7, 40])
    expected = [closed_form_score(q, k, int(o), 1e4) for o in offsets]
    torch.testing.assert_close(rope.relative_score(q, k, offsets, 1e4), torch.tensor(expected, dtype=torch.float64),
                               atol=1e-13, rtol=0)


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
def test_score_deviation_is_rounding_at_each_types_scale(pairing):
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(64, generator=g, dtype=torch.float64), torch.randn(64, generator=g, dtype=torch.float64)
    positions = torch.arange(64, 64 + 256)
    d64 = rope.score_deviation(q, k, 64, positions, 1e4, pairing, torch.float64)
    d32 = rope.score_deviation(q, k, 64, positions, 1e4, pairing, torch.float32)
    # units of eps ||q|| ||k||: seen up to 4.5 in float64 (angles m θ rounded at m eps, m < 320) and 0.3 in float32
    assert float(d64.abs().max()) < 10
    assert float(d32.abs().max()) < 2
    # and float32's really is float32's: in absolute terms it is far above float64's eps
    float32_relative = float(d32.abs().max()) * torch.finfo(torch.float32).eps
    assert 1e-9 < float32_relative < 1e-6
    grid = rope.diagonal_deviation(q, k, 24, 1e4, pairing)
    assert float(grid.abs().max()) < 4


def test_float64_deviation_grows_with_position_as_the_angle_is_rounded():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(64, generator=g, dtype=torch.float64), torch.randn(64, generator=g, dtype=torch.float64)
    far = torch.arange(100_000, 100_050)
    # at m = 1e5 the fastest angle m·1 is rounded at about 1e5 eps: hundreds of units, as the page says
    assert float(rope.score_deviation(q, k, 3, far, 1e4).abs().max()) > 50
    # float32's angles are computed in float64, so float32 stays within its own few units
    assert float(rope.score_deviation(q, k, 3, far, 1e4, dtype=torch.float32).abs().max()) < 2


def test_larger_base_keeps_the_bound_up_over_middle_distances():
    distances, low = rope.banded_decay_bound(128, 1e4)
    _, high = rope.banded_decay_bound(128, 1e5)
    # the bands are means of decay_bound over samples spread in log r
    edges = torch.logspace(0, 6, 61, dtype=torch.float64)
    assert float(distances[20]) == pytest.approx(math.sqrt(edges[20] * edges[21]))
    near = (distances < 3)
    assert float((high[near] / low[near] - 1).abs().max()) < 0.03  # the fast pairs are the same for both bases
    gap = rope.compare_bases(distances, low, high)
    # seen: 1.39x at r ≈ 891; settling within 1.5x of the floor (5.0) at r ≈ 282 (10000) and 1122 (100000)
    assert gap.widest_ratio > 1.3 and 100 < gap.widest_distance < 3000
    assert gap.settled[1] >= 3 * gap.settled[0]
    assert 4 < gap.floor < 6
    far = distances > 1e5
    assert float((high[far] / low[far] - 1).abs().max()) < 0.15  # both at the level of random phases


def test_decay_bound_is_roformers_sum_and_its_floor_is_random_phases():
    import cmath
    freqs = [1e4 ** (-2 * i / 16) for i in range(8)]
    partial, total = 0, 0.0
    for theta in freqs:  # S_j = Σ_{i<j} e^{i r θ_i} at r = 37, averaged over j
        partial += cmath.exp(1j * 37 * theta)
        total += abs(partial)
    assert float(rope.decay_bound(16, 1e4, torch.tensor([37]))[0]) == pytest.approx(total / 8, abs=1e-12)
    distances, low = rope.banded_decay_bound(128, 1e4)
    _, high = rope.banded_decay_bound(128, 1e5)
    phases = torch.rand(4000, 64, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2 * math.pi
    random_level = float(torch.cumsum(torch.polar(torch.ones_like(phases), phases), 1).abs().mean())
    assert rope.compare_bases(distances, low, high).floor == pytest.approx(random_level, rel=0.1)
