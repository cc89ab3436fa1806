"""Checkpoints of the seq2seq models: float16 weights, the config and plain-data extras, readable with
torch.load(weights_only=True)."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Callable

import torch.nn as nn

from engine import checkpoint_files

CHECKPOINTS = Path(__file__).parent / "checkpoints"  # the shipped models, each with its sha256 in SHA256SUMS


def save_half(model: nn.Module, path, **extra) -> None:
    """model.config must be a dataclass; weights are stored in float16 (half the size)."""
    weights = {k: v.half() for k, v in model.state_dict().items()}
    checkpoint_files.save({"config": asdict(model.config), "state_dict": weights, **extra}, path)


def load_half(path, build: Callable[[dict], nn.Module]) -> tuple[nn.Module, dict]:
    """build(config dict) makes the empty model; returns it in eval mode and the extras."""
    data = checkpoint_files.load(path)
    model = build(data.pop("config"))
    model.load_state_dict({k: v.float() for k, v in data.pop("state_dict").items()})
    return model.eval(), data
