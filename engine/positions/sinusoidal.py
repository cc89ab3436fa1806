"""Sinusoidal positional encoding (001 §1.7, 002 §2.3.2).

PE(pos, 2i) = sin(pos / base^(2i/d_model)), PE(pos, 2i+1) = cos(pos / base^(2i/d_model)).
"""
from __future__ import annotations

import torch


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Encodings of positions 0..n_positions-1: (n_positions, d_model); d_model must be even."""
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be a positive even number, got {d_model}")
    if base <= 0:
        raise ValueError(f"the base must be positive, got {base}")
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,)
    angles = pos / base ** (two_i / d_model)  # (P, d/2); float64 so large positions stay exact
    pe = torch.empty(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.float()
