"""Generating with SmolLM2 token by token, and scoring text by its perplexity.

Perplexity is exp of the mean negative log-likelihood per predicted token. The notes never define it: the
mean is the cross-entropy loss that 000 §8.3's TransformerLM code trains with (F.cross_entropy), and its
exponential is the usual definition (Jurafsky & Martin, Speech and Language Processing, 3rd ed., ch. 3).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from engine.errors import InputError
from engine.llm.model import GGUF_PAIRING
from engine.llm.smollm import SmolLM
from engine.transformer.model import draw_next

MAX_NEW_TOKENS = 200  # per request: about 10 s on one CPU
STEP_S = 0.05  # seconds a decode step of one request takes on one CPU core
MAX_PROMPT_TOKENS = 1024  # the context is 8,192, but a CPU prefill of that takes minutes and 2.4 GB of scores


def prompt_ids(lm: SmolLM, text: str, chat: bool = True, limit: int = MAX_PROMPT_TOKENS) -> tuple[list[int], int]:
    """The ids the model reads for text (inside the chat template when chat), and how many fewer they are than
    those of the whole text.

    The templated string is encoded whole: encoding the template and the text apart differs wherever a
    pre-token runs across the join (the template's "\n" and a text "\n\nX" are one pre-token "\n\n\n" whole).
    Past `limit`, the text loses as few tokens from its front as make the whole fit, cut where one of its
    tokens begins; the template is kept whole, and so is the text's last token even if that alone is too long."""
    if not text.strip():
        raise InputError("type a prompt: it is empty")
    before, after = lm.tokenizer.chat_prompt("\0").split("\0") if chat else ("", "")
    whole = lm.tokenizer.encode(before + text + after)
    if len(whole) <= limit:
        return whole, 0
    starts = lm.tokenizer.token_starts(text)

    def from_token(k: int) -> list[int]:  # the ids with the text's first k tokens cut
        return lm.tokenizer.encode(before + text[starts[k]:] + after)

    low, high = 1, len(starts) - 1  # the fewest tokens to cut: a search, as the length falls with k
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if len(from_token(middle)) <= limit else (middle + 1, high)
    while low < len(starts) - 1 and len(from_token(low)) > limit:  # a pre-token merge can break the fall by one
        low += 1
    ids = from_token(low)
    return ids, len(whole) - len(ids)


@dataclass(frozen=True)
class Generated:
    token: int
    probability: float  # of this token under the distribution it was drawn from (after the filters)


def check_request(lm: SmolLM, ids: list[int], max_new_tokens: int, temperature: float, top_k: int | None,
                  top_p: float | None) -> None:
    """Refuse, before any work, a generation whose prompt or settings are out of range (InputError)."""
    if not ids:
        raise InputError("type a prompt: it is empty")
    if not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise InputError(f"new tokens must be between 1 and {MAX_NEW_TOKENS}, got {max_new_tokens}")
    if not 0 <= temperature < math.inf:  # NaN fails too
        raise InputError(f"the temperature must be 0 (greedy) or positive, got {temperature}")
    if top_k is not None and top_k < 1:
        raise InputError(f"top-k must be at least 1, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise InputError(f"top-p must be in (0, 1], got {top_p}")
    if len(ids) + max_new_tokens > lm.config.context_length:
        raise InputError(f"{len(ids)} + {max_new_tokens} tokens exceed SmolLM2's context of "
                         f"{lm.config.context_length}")


@torch.no_grad()
def stream(lm: SmolLM, ids: list[int], max_new_tokens: int, temperature: float = 0.0, top_k: int | None = None,
           top_p: float | None = None, seed: int = 0) -> Iterator[Generated]:
    """Yield new tokens one at a time, reading the prompt once and then one token per step against the KV
    cache; stops after <|im_end|>. temperature 0 is greedy."""
    check_request(lm, ids, max_new_tokens, temperature, top_k, top_p)
    generator = torch.Generator().manual_seed(seed)
    out = lm.model(torch.tensor([ids]), last_only=True)
    for _ in range(max_new_tokens):
        logits = out.logits[:, -1]  # (1, V)
        token, drawn_from = draw_next(logits, temperature, top_k, generator, top_p)  # (1, 1), (1, V)
        probability = float(drawn_from[0, token])
        yield Generated(int(token), probability)
        if int(token) == lm.tokenizer.eos_id:
            return
        out = lm.model(token, cache=out.cache, last_only=True)


def generate(lm: SmolLM, ids: list[int], max_new_tokens: int, temperature: float = 0.0, top_k: int | None = None,
             top_p: float | None = None, seed: int = 0) -> list[Generated]:
    """stream's tokens, all of them."""
    return list(stream(lm, ids, max_new_tokens, temperature, top_k, top_p, seed))


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
