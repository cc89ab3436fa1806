"""Rotary position embedding (000 §8.6 eq. 100-109, 001 RoPE appendix, 002 §2.3.3).

Where the notes disagree the caller chooses:
- base: 000's code uses rope_theta = 100000, 001 and 002 use 10000;
- pairing: "interleaved" rotates dimensions (2i, 2i+1) as 000's code and 002 do;
  "half" rotates (i, i + d/2), the rotate_half layout of Llama and much public code.
Angles are computed in float64 and the rotation is applied in the input's dtype.
"""
from __future__ import annotations

import torch

PAIRINGS = ("interleaved", "half")
BASES = (10000.0, 100000.0)  # 001/002 and 000's code


def check_head_dim(head_dim: int) -> None:
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"RoPE rotates pairs of dimensions, so the head dimension must be even; got {head_dim}")


def rope_frequencies(head_dim: int, base: float) -> torch.Tensor:
    """freqs_i = 1 / base^(2i/d) for i = 0..d/2-1, in decreasing order (000 eq. 100-101): (d/2,) float64."""
    check_head_dim(head_dim)
    if base <= 0:
        raise ValueError(f"the RoPE base must be positive, got {base}")
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


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float, pairing: str = "interleaved") -> torch.Tensor:
    """Rotate each pair of x (..., T, d) by position_t * freqs_i (000 eq. 106-109).

    x_first' = x_first cos - x_second sin;  x_second' = x_first sin + x_second cos.
    """
    head_dim = x.shape[-1]
    first, second = pair_indices(head_dim, pairing)
    angles = rope_angles(positions, head_dim, base)  # (T, d/2)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    x_first, x_second = x[..., first], x[..., second]  # each (..., T, d/2)
    out = torch.empty_like(x)
    out[..., first] = x_first * cos - x_second * sin
    out[..., second] = x_first * sin + x_second * cos
    return out


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


def decay_bound(head_dim: int, base: float, max_distance: int) -> torch.Tensor:
    """RoFormer's long-range bound on |q . k| as the distance r = m - n grows, per unit of max |h_i - h_{i+1}|:
    (1 / (d/2)) sum_{j=1}^{d/2} |S_j|, with S_j = sum_{i<j} exp(i r theta_i). Returns (max_distance + 1,)."""
    freqs = rope_frequencies(head_dim, base)  # (d/2,)
    r = torch.arange(max_distance + 1, dtype=torch.float64)[:, None]  # (R, 1)
    phases = torch.polar(torch.ones_like(r * freqs), r * freqs)  # (R, d/2) complex e^{i r theta}
    partial_sums = torch.cumsum(phases, dim=1)  # S_1..S_{d/2}
    return partial_sums.abs().mean(dim=1)


def float32_position_error(position: float, head_dim: int, base: float) -> float:
    """Largest error of a float32 RoPE angle against float64 at this position, in radians (mod 2 pi).

    float32 keeps 24 bits, so position * freq is rounded at about position * 6e-8 radians."""
    exact = rope_angles(torch.tensor([position], dtype=torch.float64), head_dim, base)
    approx = torch.outer(torch.tensor([position], dtype=torch.float32), rope_frequencies(head_dim, base).float())
    diff = torch.remainder(approx.double() - exact + torch.pi, 2 * torch.pi) - torch.pi
    return float(diff.abs().max())
