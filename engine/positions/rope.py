"""Rotary position embedding (000 §8.6 eq. 100-109, 001 RoPE appendix, 002 §2.3.3).

Where the notes disagree the caller chooses:
- base: 000's code (and 004's, the same) uses rope_theta = 100000, 001 and 002 use 10000;
- pairing: "interleaved" rotates dimensions (2i, 2i+1), as every formula and code in the notes does (002's
  prose speaks of "two halves" but its formulas pair (x_2k, x_2k+1)), and as Meta's Llama code and GGUF files
  do; "half" rotates (i, i + d/2), the rotate_half layout of Hugging Face transformers' Llama and GPT-NeoX.
Angles are computed in float64 and the rotation is applied in the input's dtype.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.errors import InputError

PAIRINGS = ("interleaved", "half")
BASES = (10000.0, 100000.0)  # 001/002, and 000's and 004's code


def check_head_dim(head_dim: int) -> None:
    if head_dim < 2 or head_dim % 2:
        raise InputError(f"RoPE rotates pairs of dimensions, so the head dimension must be even; got {head_dim}")


def rope_frequencies(head_dim: int, base: float) -> torch.Tensor:
    """freqs_i = 1 / base^(2i/d) for i = 0..d/2-1, in decreasing order (000 eq. 100-101): (d/2,) float64."""
    check_head_dim(head_dim)
    if base <= 0:
        raise InputError(f"the RoPE base must be positive, got {base}")
    i = torch.arange(0, head_dim, 2, dtype=torch.float64)
    return 1.0 / base ** (i / head_dim)


def rope_angles(positions: torch.Tensor, head_dim: int, base: float) -> torch.Tensor:
    """angles[t, i] = position_t * freqs_i (000 eq. 102): (T, d/2) float64."""
    return torch.outer(positions.to(torch.float64), rope_frequencies(head_dim, base))


def pair_indices(head_dim: int, pairing: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The two coordinates of each rotated pair: (2i, 2i+1) interleaved, or (i, i + d/2) half-split."""
    check_head_dim(head_dim)
    if pairing == "interleaved":
        return torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)
    if pairing == "half":
        return torch.arange(head_dim // 2), torch.arange(head_dim // 2, head_dim)
    raise ValueError(f"unknown pairing {pairing!r}; choose one of {', '.join(PAIRINGS)}")


def rope_cos_sin(positions: torch.Tensor, head_dim: int, base: float, dtype: torch.dtype = torch.float32
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every angle (000 eq. 102), each (T, d/2) in dtype: computed once, shared by every layer."""
    angles = rope_angles(positions, head_dim, base)  # (T, d/2) float64
    return torch.cos(angles).to(dtype), torch.sin(angles).to(dtype)


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pairing: str = "interleaved") -> torch.Tensor:
    """Rotate each pair of x (..., T, d) by the angles whose cos and sin (T, d/2) are given (000 eq. 106-109).

    x_first' = x_first cos - x_second sin;  x_second' = x_first sin + x_second cos."""
    check_head_dim(x.shape[-1])
    if pairing == "interleaved":
        # pair (2i, 2i+1) as the complex number x_2i + i x_2i+1: the rotation is one product by cos + i sin
        # (Meta's Llama code does the same); 4 operations instead of 10 in every layer of a decode step
        pairs = torch.view_as_complex(x.unflatten(-1, (-1, 2)).contiguous())  # (..., T, d/2) complex
        return torch.view_as_real(pairs * torch.complex(cos, sin)).flatten(-2)
    if pairing == "half":
        x_first, x_second = x.chunk(2, dim=-1)  # dimensions (i, i + d/2)
        return torch.cat([x_first * cos - x_second * sin, x_first * sin + x_second * cos], dim=-1)
    raise ValueError(f"unknown pairing {pairing!r}; choose one of {', '.join(PAIRINGS)}")


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float, pairing: str = "interleaved") -> torch.Tensor:
    """Rotate each pair of x (..., T, d) by position_t * freqs_i (000 eq. 106-109); one vector x (d,) is turned to
    every position: (T, d)."""
    return rotate_pairs(x, *rope_cos_sin(positions, x.shape[-1], base, x.dtype), pairing)


def random_query_key(head_dim: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A random query and key (d,) each, float64, drawn in that order from a generator seeded with seed."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(head_dim, generator=g, dtype=torch.float64), torch.randn(head_dim, generator=g,
                                                                               dtype=torch.float64)


def interleaved_to_half(head_dim: int) -> torch.Tensor:
    """The fixed permutation of dimensions that turns the interleaved layout into the half-split one:
    apply_rope(x[..., perm], "half") == apply_rope(x, "interleaved")[..., perm]."""
    check_head_dim(head_dim)
    return torch.cat([torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)])


def rotation_matrix(position: float, head_dim: int, base: float, pairing: str = "interleaved") -> torch.Tensor:
    """R_m as a (d, d) matrix with R_m x = RoPE_m(x): block-diagonal 2x2 rotations (001 appendix)."""
    first, second = pair_indices(head_dim, pairing)
    angles = position * rope_frequencies(head_dim, base)
    R = torch.zeros(head_dim, head_dim, dtype=torch.float64)
    R[first, first], R[first, second] = torch.cos(angles), -torch.sin(angles)
    R[second, first], R[second, second] = torch.sin(angles), torch.cos(angles)
    return R


def relative_matrix(i: float, j: float, head_dim: int, base: float, pairing: str = "interleaved") -> torch.Tensor:
    """002's M(i, j) = R_i^T R_j = diag(R((j - i) alpha_k)): q~_i . k~_j = q_i^T M(i, j) k_j."""
    return rotation_matrix(i, head_dim, base, pairing).T @ rotation_matrix(j, head_dim, base, pairing)


def scores_at_offset(q: torch.Tensor, k: torch.Tensor, offset: int, query_positions: torch.Tensor, base: float,
                     pairing: str = "interleaved") -> torch.Tensor:
    """RoPE(q, m) . RoPE(k, m - offset) for each m in query_positions: equal for every m (the relative property)."""
    rotated_q = apply_rope(q.expand(len(query_positions), -1), query_positions, base, pairing)
    rotated_k = apply_rope(k.expand(len(query_positions), -1), query_positions - offset, base, pairing)
    return (rotated_q * rotated_k).sum(-1)


def relative_score(q: torch.Tensor, k: torch.Tensor, offsets: torch.Tensor, base: float,
                   pairing: str = "interleaved") -> torch.Tensor:
    """The closed form of RoPE(q, m) . RoPE(k, m - offset): q^T R_m^T R_(m - offset) k = q . R_(-offset) k
    (001 appendix, M(m, n) = R_(n - m)), with no m in it. q, k (d,), offsets (K,) -> (K,) float64."""
    turned_k = apply_rope(k.double().expand(len(offsets), -1), -offsets, base, pairing)  # (K, d)
    return turned_k @ q.double()


def rounding_scale(q: torch.Tensor, k: torch.Tensor) -> float:
    """eps * ||q|| ||k||: the size of rounding in a dot product of q and k in their dtype. The score is a sum of
    products whose sizes are set by ||q|| ||k||, so its rounding scales with that, not with the score (which may
    be near 0 after cancellation)."""
    return torch.finfo(q.dtype).eps * float(q.double().norm() * k.double().norm())


def score_deviation(q: torch.Tensor, k: torch.Tensor, offset: int, query_positions: torch.Tensor, base: float,
                    pairing: str = "interleaved", dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """(score at m - exact score) / rounding_scale for each m, the scores computed in dtype: (T,) float64.

    The relative property says the score is the same for every m; this is how far rounding moves it. q and k
    are first rounded to dtype and the exact value is that of the rounded vectors, so only the arithmetic is
    measured. The exact value is relative_score in float64, itself rounded at about one float64 eps."""
    q, k = q.to(dtype), k.to(dtype)
    scores = scores_at_offset(q, k, offset, query_positions, base, pairing).double()
    exact = relative_score(q, k, torch.tensor([offset]), base, pairing)
    return (scores - exact) / rounding_scale(q, k)


def score_grid(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, base: float,
               pairing: str = "interleaved") -> tuple[torch.Tensor, torch.Tensor]:
    """The grid RoPE(q, m) . RoPE(k, n) for m, n in positions (P,), and what it differs by from each diagonal's
    exact value relative_score(m - n), in units of rounding_scale: each (P, P), the second float64."""
    scores = apply_rope(q, positions, base, pairing) @ apply_rope(k, positions, base, pairing).T  # (m, n)
    offsets = positions[:, None] - positions[None, :]  # (m, n)
    exact = relative_score(q, k, offsets.flatten(), base, pairing).view(len(positions), len(positions))
    return scores, (scores.double() - exact) / rounding_scale(q, k)


def diagonal_deviation(q: torch.Tensor, k: torch.Tensor, n_positions: int, base: float,
                       pairing: str = "interleaved") -> torch.Tensor:
    """score_grid's deviation for positions 0..n_positions-1: (n_positions, n_positions) float64."""
    return score_grid(q, k, torch.arange(n_positions), base, pairing)[1]


def identity_gap(q: torch.Tensor, k: torch.Tensor, i: int, j: int, base: float, pairing: str = "interleaved") -> float:
    """|RoPE(q, i) . RoPE(k, j) - q^T M(i, j) k| (002's M(i, j) = R_i^T R_j): 0 in exact arithmetic."""
    rotated = apply_rope(q, torch.tensor([i]), base, pairing)[0] @ apply_rope(k, torch.tensor([j]), base, pairing)[0]
    return abs(float(rotated - q @ relative_matrix(i, j, len(q), base, pairing) @ k))


def decay_bound(head_dim: int, base: float, distances: torch.Tensor) -> torch.Tensor:
    """RoFormer's long-range bound on |q . k| at each relative distance r = m - n, per unit of max |h_i - h_{i+1}|:
    (1 / (d/2)) sum_{j=1}^{d/2} |S_j|, with S_j = sum_{i<j} exp(i r theta_i). distances (R,) -> (R,) float64."""
    freqs = rope_frequencies(head_dim, base)  # (d/2,)
    r = distances.to(torch.float64)[..., None]  # (..., 1)
    phases = torch.polar(torch.ones_like(r * freqs), r * freqs)  # (..., d/2) complex e^{i r theta}
    partial_sums = torch.cumsum(phases, dim=-1)  # S_1..S_{d/2}
    return partial_sums.abs().mean(dim=-1)


def banded_decay_bound(head_dim: int, base: float, decades: int = 6, bands_per_decade: int = 10,
                       samples: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """decay_bound averaged over each band [10^(b/B), 10^((b+1)/B)) of distances up to 10^decades.

    The bound swings by a factor of two between neighbouring distances; its mean over a band keeps the trend,
    which is where bases differ. Samples are spread evenly in log r inside each band.
    Returns the bands' geometric centres and the means, each (decades * bands_per_decade,) float64."""
    edges = torch.logspace(0, decades, decades * bands_per_decade + 1, dtype=torch.float64)  # (n+1,)
    ratio = edges[1] / edges[0]  # the same for every band
    t = (torch.arange(samples, dtype=torch.float64) + 0.5) / samples  # (S,) positions inside a band, in log r
    distances = edges[:-1, None] * ratio ** t  # (n, S)
    return edges[:-1] * ratio.sqrt(), decay_bound(head_dim, base, distances).mean(dim=1)


@dataclass(frozen=True)
class BaseComparison:
    """Two bases' banded decay bounds side by side."""

    widest_distance: float  # band centre where the larger base's bound exceeds the smaller's most
    widest_ratio: float  # that excess, high / low
    floor: float  # both bounds' mean over the last decade: |S_j| of random phases
    settled: tuple[float, float]  # for (low, high): the first band centre whose mean is below SETTLED x floor


SETTLED = 1.5  # "settled": within 1.5x of the random-phase floor; at r = 0 the bound is 4.7x it at d = 64


def compare_bases(distances: torch.Tensor, low: torch.Tensor, high: torch.Tensor,
                  bands_per_decade: int = 10) -> BaseComparison:
    """Where banded_decay_bound curves of a smaller (low) and a larger (high) base differ; all (n,)."""
    ratio = high / low
    widest = int(torch.argmax(ratio))
    floor = float(torch.cat([low[-bands_per_decade:], high[-bands_per_decade:]]).mean())
    settled = tuple(float(distances[int(torch.nonzero(mean < SETTLED * floor)[0])]) for mean in (low, high))
    return BaseComparison(float(distances[widest]), float(ratio[widest]), floor, settled)


def float32_position_error(position: float, head_dim: int, base: float) -> float:
    """Largest error of a float32 RoPE angle against float64 at this position, in radians (mod 2 pi).

    float32 keeps 24 bits, so position * freq is rounded at about position * 6e-8 radians."""
    exact = rope_angles(torch.tensor([position], dtype=torch.float64), head_dim, base)
    approx = torch.outer(torch.tensor([position], dtype=torch.float32), rope_frequencies(head_dim, base).float())
    diff = torch.remainder(approx.double() - exact + torch.pi, 2 * torch.pi) - torch.pi
    return float(diff.abs().max())
