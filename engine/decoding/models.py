"""Steppers for the search: the seq2seq date models (with attention, so cp applies), the character
TransformerLM and SmolLM2-135M-Instruct (open generation, no source)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from engine.errors import InputError
from engine.llm.tokenizer import visible
from engine.seq2seq.dates import BOS, EOS, MAX_SOURCE, TARGET, Example, batch, decode_target
from engine.seq2seq.model import Memory, Seq2Seq
from engine.transformer.model import TransformerLM
from engine.transformer.text import CharVocab

if TYPE_CHECKING:
    from engine.llm.smollm import SmolLM


class Labels:
    """A token's label for the page, worked out once per stepper: a search's tree, its hover texts and its tables
    ask for the same few tokens thousands of times."""

    def label(self, token: int) -> str:
        labels = self.__dict__.setdefault("_labels", {})
        if (text := labels.get(token)) is None:
            text = labels[token] = self._label(token)
        return text

    def text(self, tokens) -> str:
        """Tokens as the page writes them, each by its label."""
        return "".join(self.label(t) for t in tokens)


class Seq2SeqStepper(Labels):
    """Decoder states and coverage carried per live prefix; the source is encoded once."""

    def __init__(self, model: Seq2Seq, text: str):
        if not text.strip():
            raise InputError("type an input to decode: it is empty")
        self.model, self.source = model, text.lower()[:MAX_SOURCE]
        self.bos, self.eos, self.vocab_size = TARGET.index[BOS], TARGET.index[EOS], model.output_size
        self.source_length = len(self.source)
        self.x, _ = batch([Example(self.source, "")])

    def start(self) -> None:
        with torch.no_grad():
            self.memory, self.s = self.model.encode(self.x)  # (1, S, D), (1, D)
        self.coverage = torch.zeros(self.x.shape)

    @torch.no_grad()
    def step(self, last: torch.Tensor, parents: torch.Tensor):
        B = len(last)
        m = self.memory
        memory = Memory(m.z.expand(B, -1, -1), m.keys.expand(B, -1, -1), m.mask.expand(B, -1), m.copy_ids.expand(B, -1))
        out = self.model.step(last, self.s[parents], self.coverage[parents], memory)
        self.s, self.coverage = out.state, out.coverage
        return out.log_p, out.attention

    def _label(self, token: int) -> str:
        return "■" if token == self.eos else decode_target([token]).replace(" ", "␣")


class LanguageModelStepper(Labels):
    """The TransformerLM with its KV cache (000 §8.5): the prompt is read once, each step reads one new
    token per prefix, and the cache rows follow their prefixes by `parents`."""

    def __init__(self, model: TransformerLM, vocab: CharVocab, prompt_ids: torch.Tensor, eos_char: str = "."):
        self.model, self.vocab, self.prompt = model, vocab, prompt_ids
        self.eos, self.vocab_size, self.source_length = vocab.chars.index(eos_char), len(vocab), 0
        self.bos = int(prompt_ids[-1])  # the search's root is the prompt's last character

    @torch.no_grad()
    def start(self) -> None:
        before = self.prompt[None, :-1]  # (1, P − 1): the root token is fed by the first step
        self.cache = self.model(before).cache if before.shape[1] else None

    @torch.no_grad()
    def step(self, last: torch.Tensor, parents: torch.Tensor):
        cache = [(k[parents], v[parents]) for k, v in self.cache] if self.cache else None  # (B, H, T, d) each
        out = self.model(last[:, None], cache=cache)
        self.cache = out.cache
        return torch.log_softmax(out.logits[:, -1].float(), dim=-1), None

    def _label(self, token: int) -> str:
        return visible(self.vocab.decode([token]))


class SmolLMStepper(LanguageModelStepper):
    """SmolLM2 in the same search: our Llama reads the prompt (the chat template around a question, from
    engine.llm.generation.prompt_ids) once into its KV cache, and each step reads one token per live prefix,
    the cache rows following their prefixes by `parents` as above. Log-probabilities over the 49,152-token
    vocabulary; a hypothesis ends with <|im_end|>, the end of the assistant's turn."""

    def __init__(self, lm: SmolLM, prompt_ids: list[int]):
        if not prompt_ids:
            raise InputError("type a prompt: it is empty")
        self.model, self.tokenizer, self.prompt = lm.model, lm.tokenizer, torch.tensor(prompt_ids)  # (P,)
        self.eos, self.vocab_size, self.source_length = lm.tokenizer.eos_id, lm.config.vocab_size, 0
        self.bos = prompt_ids[-1]  # the search's root is the prompt's last token: "\n" after "assistant"

    def _label(self, token: int) -> str:
        return "■" if token == self.eos else visible(self.tokenizer.decode([token]))
