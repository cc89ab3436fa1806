"""Characters as tokens, over real English text that a package installs.

The corpus is the Lee background corpus (300 news stories, 360k characters) that gensim ships as
test data. Characters keep the vocabulary under 100 and need no tokenizer training.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.gensim_data import gensim_file

UNK, MASK = "\x00", "\x01"  # unknown character; the [MASK] token of the masked-LM objective


def load_corpus() -> str:
    """The Lee background corpus, checked against its sha256."""
    return gensim_file("lee_background.cor").read_text(encoding="utf-8")


@dataclass
class CharVocab:
    chars: str  # index -> character; UNK and MASK first

    @classmethod
    def from_text(cls, text: str) -> CharVocab:
        return cls(UNK + MASK + "".join(sorted(set(text) - {UNK, MASK})))

    def __post_init__(self):
        self._index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    @property
    def mask_id(self) -> int:
        return self._index[MASK]

    def unknown(self, text: str) -> list[str]:
        """Characters of text the model never saw; they encode as UNK."""
        return sorted({c for c in text if c not in self._index or c in (UNK, MASK)})

    def encode(self, text: str) -> torch.Tensor:
        return torch.tensor([self._index.get(c, 0) for c in text], dtype=torch.long)

    def decode(self, ids) -> str:
        return "".join("�" if i == 0 else "▒" if i == 1 else self.chars[i] for i in ids)
