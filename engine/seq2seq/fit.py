"""The optimisation loop the seq2seq-section models share: Adam, clipped gradients, an optional one-cycle
schedule, and a running mean of the loss in the log."""
from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import nn


def fit(model: nn.Module, step_loss: Callable[[], tuple[torch.Tensor, torch.Tensor]], steps: int, lr: float,
        clip: float, log_every: int, one_cycle: bool = True, label: str = "loss", log=print) -> list[float]:
    """Train in place. step_loss() draws a batch and returns the loss to minimise and the one to record (the
    date models record the likelihood without coverage's term); the recorded values are returned."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.1) \
        if one_cycle else None
    losses, start = [], time.perf_counter()
    for step in range(steps):
        loss, recorded = step_loss()
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        if schedule is not None:
            schedule.step()
        losses.append(recorded.item())
        if (step + 1) % log_every == 0:
            mean = sum(losses[-log_every:]) / log_every
            log(f"  step {step + 1}: {label} {mean:.4f} ({time.perf_counter() - start:.0f} s)")
    return losses
