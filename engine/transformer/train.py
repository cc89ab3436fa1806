"""Train the shipped character TransformerLMs on the Lee corpus; reproducible from a seed.

    python -m engine.transformer.train --objective causal   # the LM, then GPT-style fine-tuning
    python -m engine.transformer.train --objective mlm --steps 2000   # the bidirectional masked-LM encoder

The causal run (2400 steps) takes about 27 minutes on two CPU cores, the masked one about 20. Weights
are stored in float16 (half the size) and every reported metric is measured with those rounded weights,
so a loaded checkpoint reproduces it.
"""
from __future__ import annotations

import argparse
import math
import random
import time
from pathlib import Path

import torch

from engine.transformer.model import ModelConfig, TransformerLM, load_checkpoint, save_checkpoint
from engine.transformer.objectives import SequenceClassifier, causal_targets, mlm_batch, shuffle_words
from engine.transformer.text import CharVocab, load_corpus

CHECKPOINTS = Path(__file__).parent / "checkpoints"
HELD_OUT = 0.1  # the last tenth of the corpus is never trained on
FINETUNE_WINDOW = 96  # characters per example of the labelled task
LAMBDA = 0.5  # GPT's weight on the auxiliary LM loss during fine-tuning
PEAK_LR = 2e-3
TOKENS_PER_STEP = 4096
# Context lengths and the fraction of steps at each. The causal LM trains on its whole 512-character context
# (8 rows a step). A bidirectional masked LM at full length stayed at the unigram loss (3.10 nats/char after
# 600 steps, 3.08 after 1,200 at 128): attention starts uniform over the window, so the pull towards the
# neighbours that predict a masked character is diluted by its length. Short windows first let it find them;
# each doubling then trains the next positions. 128 characters is enough for the Objectives page's sentences.
CURRICULUM = {"causal": [(512, 1.0)], "mlm": [(16, 0.2), (32, 0.2), (64, 0.2), (128, 0.4)]}


def split(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    cut = int(len(ids) * (1 - HELD_OUT))
    return ids[:cut], ids[cut:]


def unigram_loss(vocab: CharVocab) -> float:
    """Held-out nats per character of a model that knows only how often each character occurs in the training
    text (add-one smoothed): the floor every shipped LM must beat."""
    train_ids, test_ids = split(vocab.encode(load_corpus()))
    counts = torch.bincount(train_ids, minlength=len(vocab)).double() + 1
    return float(-(counts / counts.sum()).log()[test_ids].mean())


def windows(ids: torch.Tensor, length: int, batch: int, g: torch.Generator) -> torch.Tensor:
    starts = torch.randint(len(ids) - length, (batch,), generator=g)
    return torch.stack([ids[s:s + length] for s in starts.tolist()])  # (batch, length)


def round_to_half(model: torch.nn.Module) -> None:
    """Store-and-reload in float16 now, so every metric below is the shipped model's."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())


def lm_batch(objective: str, ids: torch.Tensor, vocab: CharVocab, g: torch.Generator):
    """Inputs and targets from windows of length + 1: shifted by one for causal, the first length masked for MLM."""
    if objective == "causal":
        return causal_targets(ids)
    return mlm_batch(ids[:, :-1], vocab.mask_id, 0.15, g)  # BERT's 15%


@torch.no_grad()
def held_out_loss(model: TransformerLM, ids: torch.Tensor, objective: str, vocab: CharVocab, length: int) -> float:
    """Mean loss over fixed, non-overlapping held-out windows (the same every run)."""
    model.eval()
    g = torch.Generator().manual_seed(1234)
    chunks = ids[: (len(ids) - 1) // length * length + 1]
    starts = range(0, len(chunks) - length - 1, length)
    batch = torch.stack([chunks[s:s + length + 1] for s in starts])
    inputs, targets = lm_batch(objective, batch, vocab, g)
    loss = model(inputs, targets).loss
    model.train()
    return float(loss)


def train_lm(objective: str, steps: int, seed: int, log_every: int = 25) -> tuple[TransformerLM, dict]:
    torch.manual_seed(seed)
    text = load_corpus()
    vocab = CharVocab.from_text(text)
    train_ids, test_ids = split(vocab.encode(text))
    schedule = [length for length, share in CURRICULUM[objective] for _ in range(round(share * steps))]
    schedule += schedule[-1:] * (steps - len(schedule))  # rounding
    cfg = ModelConfig(vocab_size=len(vocab), causal=objective == "causal", max_seq_len=max(schedule))
    model = TransformerLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=PEAK_LR, betas=(0.9, 0.95), weight_decay=0.1)
    g = torch.Generator().manual_seed(seed)
    curve, start = [], time.time()
    for step in range(1, steps + 1):
        lr = PEAK_LR * min(step / 50, 0.5 * (1 + math.cos(math.pi * step / steps)) * 0.9 + 0.1)  # warm-up, cosine
        for group in opt.param_groups:
            group["lr"] = lr
        length = schedule[step - 1]
        ids = windows(train_ids, length + 1, TOKENS_PER_STEP // length, g)
        inputs, targets = lm_batch(objective, ids, vocab, g)
        loss = model(inputs, targets).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        curve.append(loss.item())
        if step % log_every == 0:
            print(f"{objective} step {step}/{steps} loss {sum(curve[-log_every:]) / log_every:.3f} "
                  f"({time.time() - start:.0f} s)", flush=True)
    round_to_half(model)
    metrics = {"held_out_loss": held_out_loss(model, test_ids, objective, vocab, cfg.max_seq_len),
               "train_seconds": round(time.time() - start, 1), "steps": steps, "seed": seed}
    print(f"{objective}: held-out loss {metrics['held_out_loss']:.4f} nats/char", flush=True)
    return model, {"vocab": vocab.chars, "loss_curve": curve, "metrics": metrics}


def labelled_task(ids: torch.Tensor, n: int, g: torch.Generator, vocab: CharVocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Is this text as written (1) or with its words shuffled (0)? Windows of FINETUNE_WINDOW + 1 characters."""
    rng = random.Random(int(torch.randint(1 << 30, (1,), generator=g)))
    texts, labels = [], []
    for window in windows(ids, FINETUNE_WINDOW + 1, n, g):
        text, label = vocab.decode(window.tolist()), rng.random() < 0.5
        texts.append(vocab.encode(text if label else shuffle_words(text, rng)))
        labels.append(int(label))
    return torch.stack(texts), torch.tensor(labels)


def finetune(lm: TransformerLM, vocab: CharVocab, seed: int, steps: int = 150) -> tuple[SequenceClassifier, dict]:
    """GPT §3.2: fine-tune the whole model on L3 = L2 + lambda L1 with a new head W_y."""
    torch.manual_seed(seed)
    train_ids, test_ids = split(vocab.encode(load_corpus()))
    clf = SequenceClassifier(lm, n_classes=2)
    opt = torch.optim.AdamW(clf.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(seed)
    for step in range(1, steps + 1):
        ids, labels = labelled_task(train_ids, 32, g, vocab)
        losses = clf(ids, labels, LAMBDA)
        opt.zero_grad(set_to_none=True)
        losses["L3"].backward()
        opt.step()
        if step % 25 == 0:
            print(f"fine-tune step {step}/{steps} L1 {float(losses['L1']):.3f} L2 {float(losses['L2']):.3f}",
                  flush=True)
    round_to_half(clf)
    clf.eval()
    with torch.no_grad():
        ids, labels = labelled_task(test_ids, 400, torch.Generator().manual_seed(4321), vocab)
        out = clf(ids, labels, LAMBDA)
    accuracy = float((out["logits"].argmax(-1) == labels).float().mean())
    print(f"fine-tuned: held-out accuracy {accuracy:.3f}", flush=True)
    return clf, {"held_out_accuracy": accuracy, "held_out_L1": float(out["L1"]), "held_out_L2": float(out["L2"]),
                 "lambda": LAMBDA, "steps": steps}


def load_lm(objective: str) -> tuple[TransformerLM, CharVocab, dict]:
    """The shipped checkpoint char_<objective>.pt ("causal" or "mlm") in eval mode, its vocabulary and its
    training record (metrics, loss curve)."""
    model, extra = load_checkpoint(CHECKPOINTS / f"char_{objective}.pt")
    return model, CharVocab(extra.pop("vocab")), extra


def load_classifier(path: Path = CHECKPOINTS / "char_finetuned.pt") -> tuple[SequenceClassifier, CharVocab, dict]:
    """The fine-tuned LM with its head W_y (003 eq. 68), in eval mode, its vocabulary and its metrics."""
    lm, extra = load_checkpoint(path)
    clf = SequenceClassifier(lm, n_classes=2)
    clf.W_y.load_state_dict({"weight": extra.pop("W_y"), "bias": extra.pop("b_y")})
    return clf.eval(), CharVocab(extra.pop("vocab")), extra


@torch.no_grad()
def held_out_accuracy(clf: SequenceClassifier, vocab: CharVocab, seed: int, n: int = 400) -> float:
    """Share of n held-out snippets of the labelled task, drawn with `seed`, that the classifier gets right."""
    _, test_ids = split(vocab.encode(load_corpus()))
    ids, labels = labelled_task(test_ids, n, torch.Generator().manual_seed(seed), vocab)
    return float((clf.eval()(ids, labels, LAMBDA)["logits"].argmax(-1) == labels).float().mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objective", choices=["causal", "mlm"], default="causal")
    parser.add_argument("--steps", type=int, default=2400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(2)
    CHECKPOINTS.mkdir(exist_ok=True)
    model, extra = train_lm(args.objective, args.steps, args.seed)
    model.half()
    save_checkpoint(model, CHECKPOINTS / f"char_{args.objective}.pt", **extra)
    model.float()
    if args.objective == "causal":
        clf, metrics = finetune(model, CharVocab(extra["vocab"]), args.seed)
        clf.half()
        save_checkpoint(clf.lm, CHECKPOINTS / "char_finetuned.pt", vocab=extra["vocab"], metrics=metrics,
                        W_y=clf.W_y.weight.detach().clone(), b_y=clf.W_y.bias.detach().clone())


if __name__ == "__main__":
    main()
