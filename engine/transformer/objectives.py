"""Training objectives: causal LM and masked LM (001 §1.9), GPT's fine-tuning objective (003 §9).

Each returns the loss and which positions contribute, so the app can show both.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.errors import InputError
from engine.transformer.model import TransformerLM
from engine.transformer.text import CharVocab

IGNORE = -100  # cross_entropy's ignore_index: the position does not contribute


def causal_targets(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets for next-token prediction: position t predicts token t+1 (ids (B, T+1))."""
    return ids[:, :-1], ids[:, 1:]


def mlm_batch(ids: torch.Tensor, mask_id: int, rate: float, generator: torch.Generator
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask a fraction `rate` of positions (at least one per row): inputs get [MASK], targets keep the original
    there and IGNORE elsewhere (001 §1.9's labels with -100)."""
    chosen = torch.rand(ids.shape, generator=generator) < rate
    chosen[torch.arange(ids.shape[0]), torch.randint(ids.shape[1], (ids.shape[0],), generator=generator)] = True
    return ids.masked_fill(chosen, mask_id), ids.masked_fill(~chosen, IGNORE)


@dataclass
class ObjectiveLoss:
    loss: float  # mean cross-entropy over contributing positions, nats
    per_position: torch.Tensor  # (T,) loss at each position, NaN where it does not contribute


def positionwise_loss(model: TransformerLM, inputs: torch.Tensor, targets: torch.Tensor) -> ObjectiveLoss:
    """Cross-entropy of one sequence, inputs and targets (T,), with IGNORE positions left out."""
    logits = model(inputs[None]).logits[0]  # (T, V)
    losses = F.cross_entropy(logits.float(), targets.clamp(min=0), reduction="none")
    contributes = targets != IGNORE
    per_position = torch.where(contributes, losses, torch.nan)
    return ObjectiveLoss(float(losses[contributes].mean()), per_position)


@torch.no_grad()
def causal_loss(model: TransformerLM, ids: torch.Tensor) -> tuple[float, torch.Tensor]:
    """GPT's L1 as a loss (003 eq. 65) on one sequence ids (T,): every position predicts the next token. The mean
    in nats and each position's loss, (T - 1,)."""
    inputs, targets = causal_targets(ids[None])  # (1, T - 1) each
    scored = positionwise_loss(model, inputs[0], targets[0])
    return scored.loss, scored.per_position


@torch.no_grad()
def masked_loss(model: TransformerLM, vocab: CharVocab, ids: torch.Tensor, rate: float, seed: int
                ) -> tuple[torch.Tensor, float, torch.Tensor]:
    """The masked-LM loss (001 §1.9) on one sequence ids (T,), a fraction `rate` replaced by vocab's [MASK] with a
    generator seeded by `seed`: the masked input (T,), the mean over masked positions in nats, and each position's
    loss (T,), NaN where nothing was masked."""
    masked_in, masked_targets = mlm_batch(ids[None], vocab.mask_id, rate, torch.Generator().manual_seed(seed))  # (1, T)
    scored = positionwise_loss(model, masked_in[0], masked_targets[0])
    return masked_in[0], scored.loss, scored.per_position


class SequenceClassifier(nn.Module):
    """GPT's fine-tuning head (003 eq. 68): softmax(h_l^m W_y) on the last token's final hidden state."""

    def __init__(self, lm: TransformerLM, n_classes: int):
        super().__init__()
        self.lm = lm
        self.W_y = nn.Linear(lm.config.d_model, n_classes)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor, lam: float) -> dict[str, torch.Tensor]:
        """L2 = classification loss, L1 = LM loss on the same text, L3 = L2 + lambda L1 (GPT, 003 eq. 70)."""
        if ids.shape[1] < 2:
            raise InputError("the LM term needs at least two tokens: each is predicted from the ones before")
        inputs, targets = causal_targets(ids)
        out = self.lm(inputs, targets)
        logits = self.W_y(out.hidden[:, -1, :])  # (B, classes)
        L2 = F.cross_entropy(logits, labels)
        return {"L1": out.loss, "L2": L2, "L3": L2 + lam * out.loss, "logits": logits}


def shuffle_words(text: str, rng: random.Random) -> str:
    """The negative class of the shipped fine-tuning task: the same words in a random order."""
    words = text.split(" ")
    rng.shuffle(words)
    return " ".join(words)


@torch.no_grad()
def fine_tuning_losses(clf: SequenceClassifier, ids: torch.Tensor, as_written: bool, lam: float) -> dict[str, float]:
    """GPT's fine-tuning objective (003 eq. 68-70) on one text ids (T,) labelled as written (class 1) or shuffled
    (class 0): L1, L2, L3 = L2 + lam L1, and the probability the classifier gives to "as written"."""
    out = clf(ids[None], torch.tensor([int(as_written)]), lam)
    return {"L1": float(out["L1"]), "L2": float(out["L2"]), "L3": float(out["L3"]),
            "P(as written)": float(torch.softmax(out["logits"][0], -1)[1])}


def shuffled_words(text: str, seed: int) -> str:
    """shuffle_words with a generator seeded by `seed`."""
    return shuffle_words(text, random.Random(seed))
