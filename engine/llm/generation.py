"""Generating with SmolLM2 token by token, and scoring text (perplexity, 000 §2's exp of the mean NLL)."""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from engine.errors import InputError
from engine.llm.model import GGUF_PAIRING
from engine.llm.smollm import SmolLM
from engine.transformer.model import sample_next, sampling_distribution

MAX_NEW_TOKENS = 200  # per request: about 10 s on one CPU
MAX_PROMPT_TOKENS = 1024  # the context is 8,192, but a CPU prefill of that takes minutes and 2.4 GB of scores


def prompt_ids(lm: SmolLM, text: str, chat: bool = True, limit: int = MAX_PROMPT_TOKENS) -> tuple[list[int], int]:
    """The ids the model reads for text (inside the chat template when chat), keeping the text's last tokens
    so that all fit in `limit`; returns them and how many of the text's tokens were cut from its front.

    The template's parts and the text are encoded apart: special tokens and the newline before the text
    already split the pre-tokens there, so the ids equal those of the whole string."""
    if not text.strip():
        raise InputError("type a prompt: it is empty")
    before, after = lm.tokenizer.chat_prompt("\0").split("\0") if chat else ("", "")
    head, body, tail = (lm.tokenizer.encode(part) for part in (before, text, after))
    keep = max(1, limit - len(head) - len(tail))
    return head + body[-keep:] + tail, max(0, len(body) - keep)


@dataclass(frozen=True)
class Generated:
    token: int
    probability: float  # of this token under the distribution it was drawn from (after the filters)


@torch.no_grad()
def stream(lm: SmolLM, ids: list[int], max_new_tokens: int, temperature: float = 0.0, top_k: int | None = None,
           top_p: float | None = None, seed: int = 0) -> Iterator[Generated]:
    """Yield new tokens one at a time, reading the prompt once and then one token per step against the KV
    cache; stops after <|im_end|>. temperature 0 is greedy."""
    if not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise InputError(f"new tokens must be between 1 and {MAX_NEW_TOKENS}, got {max_new_tokens}")
    if top_p is not None and not 0 < top_p <= 1:
        raise InputError(f"top-p must be in (0, 1], got {top_p}")
    if len(ids) + max_new_tokens > lm.config.context_length:
        raise InputError(f"{len(ids)} + {max_new_tokens} tokens exceed SmolLM2's context of "
                         f"{lm.config.context_length}")
    generator = torch.Generator().manual_seed(seed)
    out = lm.model(torch.tensor([ids]), last_only=True)
    for _ in range(max_new_tokens):
        logits = out.logits[:, -1]  # (1, V)
        token = sample_next(logits, temperature, top_k, generator, top_p)  # (1, 1)
        drawn_from = F.softmax(logits.float(), dim=-1) if temperature == 0 else sampling_distribution(
            logits, temperature, top_k, top_p)  # (1, V)
        probability = float(drawn_from[0, token])
        yield Generated(int(token), probability)
        if int(token) == lm.tokenizer.eos_id:
            return
        out = lm.model(token, cache=out.cache, last_only=True)


@dataclass(frozen=True)
class Perplexity:
    ids: list[int]
    nll: torch.Tensor  # (T - 1,) -log p(token t | tokens before it), nats
    value: float  # exp(mean nll)


@torch.no_grad()
def perplexity(lm: SmolLM, text: str, rope_base: float | None = None, pairing: str = GGUF_PAIRING,
               limit: int = MAX_PROMPT_TOKENS) -> Perplexity:
    """Perplexity of the first `limit` tokens of text, with RoPE's base and pairing as given."""
    ids = lm.tokenizer.encode(text)[:limit]
    if len(ids) < 2:
        raise InputError("perplexity needs at least two tokens of text")
    logits = lm.model(torch.tensor([ids]), rope_base=rope_base, pairing=pairing).logits[0, :-1]  # (T-1, V)
    nll = F.cross_entropy(logits.float(), torch.tensor(ids[1:]), reduction="none")
    return Perplexity(ids, nll, math.exp(float(nll.mean())))
