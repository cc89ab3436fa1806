"""Sinusoidal positional encoding (001 §1.7, 002 §2.3.2).

PE(pos, 2i) = sin(pos / base^(2i/d_model)), PE(pos, 2i+1) = cos(pos / base^(2i/d_model)).
"""
from __future__ import annotations

import torch

from engine.errors import InputError

TABLE_EPS = torch.finfo(torch.float32).eps  # sinusoidal_encoding stores its table in float32, as a model would
MAX_OFFSET = 64  # offsets k compared by offset_similarities: enough to see every column stay constant


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Encodings of positions 0..n_positions-1: (n_positions, d_model); d_model must be even."""
    if d_model < 2 or d_model % 2:
        raise InputError(f"d_model must be a positive even number, got {d_model}")
    if base <= 0:
        raise InputError(f"the base must be positive, got {base}")
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,)
    angles = pos / base ** (two_i / d_model)  # (P, d/2); float64 so large positions stay exact
    pe = torch.empty(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.float()


def sinusoidal_frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """omega_i = 1 / base^(2i/d_model), one per (sin, cos) pair: (d/2,) float64."""
    return 1.0 / base ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)


def shift_matrix(offset: float, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The fixed linear map with PE(p + k) = M_k PE(p) for every p: (d, d), one 2x2 rotation per frequency.

    [sin(a + b), cos(a + b)] = [[cos b, sin b], [-sin b, cos b]] [sin a, cos a] with a = p w, b = k w.
    """
    b = offset * sinusoidal_frequencies(d_model, base)
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    even, odd = torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)
    M[even, even], M[even, odd] = torch.cos(b), torch.sin(b)
    M[odd, even], M[odd, odd] = -torch.sin(b), torch.cos(b)
    return M


def dot_products_by_offset(n_positions: int, max_offset: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """PE(p) . PE(p + k) for p < n_positions and k <= max_offset: (n_positions, max_offset + 1).

    Every column is constant, sum_i cos(k w_i): the similarity of two positions depends on k alone.
    """
    pe = sinusoidal_encoding(n_positions + max_offset, d_model, base).double()
    return torch.stack([(pe[:n_positions] * pe[k:k + n_positions]).sum(-1) for k in range(max_offset + 1)], dim=1)


def similarity_by_offset(max_offset: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The closed form PE(p) . PE(p + k) = sum_i cos(k w_i), no p in it, for k = 0..max_offset: (K,) float64."""
    k = torch.arange(max_offset + 1, dtype=torch.float64)[:, None]  # (K, 1)
    return torch.cos(k * sinusoidal_frequencies(d_model, base)).sum(-1)


def similarity_deviation(n_positions: int, max_offset: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """(PE(p) . PE(p + k) - sum_i cos(k w_i)) in units of TABLE_EPS * d_model / 2: (n_positions, max_offset + 1).

    d_model / 2 = ||PE(p)||^2 is the size of the products summed, so it sets the size of their rounding; what is
    left after subtracting the closed form is the float32 table's rounding alone."""
    dots = dot_products_by_offset(n_positions, max_offset, d_model, base)  # (n, K)
    return (dots - similarity_by_offset(max_offset, d_model, base)) / (TABLE_EPS * d_model / 2)


def offset_similarities(n_positions: int, d_model: int, base: float = 10000.0, max_offset: int = MAX_OFFSET
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The offsets k = 0..K, K = min(max_offset, n_positions - 1) and at least 1: (K+1,); PE(p) . PE(p + k) from
    every p (dot_products_by_offset): (n, K+1); its closed form (similarity_by_offset): (K+1,); and what rounding
    leaves between them (similarity_deviation): (n, K+1)."""
    K = min(max_offset, max(n_positions - 1, 1))
    return (torch.arange(K + 1), dot_products_by_offset(n_positions, K, d_model, base),
            similarity_by_offset(K, d_model, base), similarity_deviation(n_positions, K, d_model, base))


def shift_error(n_positions: int, offset: int, d_model: int, base: float = 10000.0) -> float:
    """max over p < n_positions of |M_k PE(p) - PE(p + k)|: 0 in exact arithmetic, the float32 table's rounding
    here (the products in float64)."""
    pe = sinusoidal_encoding(n_positions + offset, d_model, base).double()  # (n + k, d)
    moved = pe[:n_positions] @ shift_matrix(offset, d_model, base).T  # (n, d) M_k PE(p) for every p
    return float((moved - pe[offset:]).abs().max())
