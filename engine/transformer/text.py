"""Characters as tokens, over real English text that a package installs.

The corpus is the Lee background corpus (300 news stories, 360k characters) that gensim ships as
test data. Characters keep the vocabulary under 100 and need no tokenizer training.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch

LEE_SHA256 = "5d78d6dafd953bbf65797bef09a9ffb9ec430583381be705f8fd460000f370fb"
UNK, MASK = "\x00", "\x01"  # unknown character; the [MASK] token of the masked-LM objective


def lee_corpus_path() -> Path:
    from gensim.test.utils import datapath  # imported late: only training and tests read the corpus

    return Path(datapath("lee_background.cor"))


def load_corpus() -> str:
    """The Lee background corpus, checked against its sha256."""
    data = lee_corpus_path().read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != LEE_SHA256:
        raise ValueError(f"lee_background.cor has sha256 {digest}, expected {LEE_SHA256}")
    return data.decode("utf-8")


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
