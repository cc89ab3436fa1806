"""The questions a lecturer can ask the class on each page, predict-then-reveal. Each right answer (and each choice's
options) is computed by the engine at the lecturer's settings when the question is opened, never typed in: the
settings are the page's controls by URL name, as the lecturer's run left them (every one, defaults included).

A question is a sentence, its kind, and `compute(settings) -> (options, answer)`: options only for "choice", where
they include the answer; a "number" is right within `tolerance` of the answer.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine.efficiency import flash
from engine.positions import rope, sinusoidal
from engine.transformer import cache_sizes

Settings = Mapping[str, Any]
YES, NO = "Yes", "No"


@dataclass(frozen=True)
class Ask:
    text: str
    kind: str  # "choice" or "number"
    compute: Callable[[Settings], tuple[Sequence[str], float | str]]
    tolerance: float = 0.0


def _skipped_tiles(s: Settings) -> tuple[Sequence[str], int]:
    kinds = flash.tile_kinds(s["N"], s["Br"], s["Bc"], s["causal"])
    return (), sum(row.count("skipped") for row in kinds)


def _tiles(s: Settings) -> tuple[Sequence[str], int]:
    kinds = flash.tile_kinds(s["N"], s["Br"], s["Bc"], s["causal"])
    return (), sum(len(row) for row in kinds)


def _smollm_cache_mib(s: Settings) -> tuple[Sequence[str], float]:
    smollm = cache_sizes.BY_NAME["SmolLM2-135M"]
    return (), round(smollm.total_bytes(int(s["ctx"]), s["batch"], s["dtype"]) / 2**20, 1)


def _same_rotation_changes_score(s: Settings) -> tuple[Sequence[str], str]:
    """Both turned to one position m = 10: q·k before and after, in float64 (000 eq. 108)."""
    q, k = rope.random_query_key(s["d"], s["seed"])
    pairing = rope_pairing(s["pairing"])
    at = torch.tensor([10])
    turned = torch.dot(rope.apply_rope(q, at, s["base"], pairing)[0], rope.apply_rope(k, at, s["base"], pairing)[0])
    return (YES, NO), YES if abs(turned - torch.dot(q, k)) > 1000 * rope.rounding_scale(q, k) else NO


def rope_pairing(label: str) -> str:
    return "half" if label.startswith("Half") else "interleaved"


def _offset_dot(s: Settings) -> tuple[Sequence[str], float]:
    """PE(0) · PE(k) at the page's offset k and d_model (000 eq. 95): it depends on k alone."""
    encoding = sinusoidal.sinusoidal_encoding(s["k"] + 1, s["d"])
    return (), round(float(encoding[0] @ encoding[s["k"]]), 2)


# by page slug, in the order the lecturer's list shows them
QUESTIONS: dict[str, tuple[Ask, ...]] = {
    "flash_attention": (
        Ask("How many tiles of S does the loop skip entirely at these settings?", "number", _skipped_tiles),
        Ask("How many tiles does S have at these block sizes, skipped ones included?", "number", _tiles),
    ),
    "cache_sizes": (
        Ask("How many MiB does SmolLM2-135M's KV cache take at this context, batch and number format?", "number",
            _smollm_cache_mib, tolerance=0.5),
    ),
    "rope": (
        Ask("Turn q and k by the same angle (both to position 10): does their score q·k change?", "choice",
            _same_rotation_changes_score),
    ),
    "sinusoidal": (
        Ask("What is the dot product PE(0) · PE(k) at this d_model and offset k, to 2 decimals?", "number",
            _offset_dot, tolerance=0.01),
    ),
}
