"""Text to word ids: the corpora word2vec trains on, the vocabulary, subsampling and the noise distribution.

Two real corpora come with gensim's test data (checked by sha256): the Lee background corpus
(300 news stories, 60k words) and a Wikipedia sample (106 articles, 453k words, extracted from the
dump by gensim's WikiCorpus). Users may also paste their own text.
"""
from __future__ import annotations

import bz2
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from engine.gensim_data import gensim_file, gensim_module

CORPORA = {  # name: its file in gensim's test data
    "lee": "lee_background.cor",
    "wikipedia": "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
}
CHUNK = 1000  # words per training "sentence": gensim truncates longer ones, so both trainers see the same text
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")  # letters, with one inner apostrophe ("don't")


def tokenize(text: str) -> list[list[str]]:
    """Lower-cased words per line; digits and punctuation dropped, as in gensim's simple_preprocess."""
    lines = (_WORD.findall(line.lower()) for line in text.splitlines())
    return [words for words in lines if words]


def chunked(sentences: list[list[str]], size: int = CHUNK) -> list[list[str]]:
    return [s[i:i + size] for s in sentences for i in range(0, len(s), size)]


@lru_cache(maxsize=2)
def load_corpus(name: str) -> tuple[tuple[str, ...], ...]:
    """A shipped corpus as sentences of words (tuples, so the cached value cannot be mutated)."""
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; choose one of {sorted(CORPORA)}")
    path = gensim_file(CORPORA[name])
    if name == "lee":
        sentences = tokenize(path.read_text(encoding="utf-8"))
    else:
        sentences = wiki_articles(path)
    return tuple(tuple(s) for s in chunked(sentences))


def wiki_articles(path) -> list[list[str]]:
    """What gensim's WikiCorpus(path).get_texts() yields (its default filters: main namespace, ≥ 50 tokens),
    read in this process. get_texts hands articles to a multiprocessing pool even with processes=1, and
    forking the app's threaded server can deadlock: the Wikipedia sample's first load hung past 150 s in
    three browser-test runs under load."""
    wikicorpus = gensim_module("gensim.corpora.wikicorpus")
    articles = []
    with bz2.BZ2File(path) as dump:
        for title, text, pageid in wikicorpus.extract_pages(dump, filter_namespaces=("0",)):
            tokens, _, _ = wikicorpus.process_article((text, title, pageid))
            if len(tokens) >= wikicorpus.ARTICLE_MIN_WORDS and \
                    not any(title.startswith(f"{ns}:") for ns in wikicorpus.IGNORED_NAMESPACES):
                articles.append(tokens)
    return articles


@dataclass
class Vocab:
    """Words kept by min_count, most frequent first, ties in gensim's order."""

    words: list[str]
    counts: np.ndarray  # (V,) int64

    @classmethod
    def build(cls, sentences, min_count: int = 5) -> Vocab:
        counter = Counter(w for s in sentences for w in s)
        kept = [w for w, c in counter.items() if c >= min_count]
        counts = np.array([counter[w] for w in kept], dtype=np.int64)
        order = np.lexsort((-np.arange(len(kept)), -counts))  # gensim's order: ties latest-seen first
        return cls([kept[i] for i in order], counts[order])

    def __post_init__(self):
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, sentences) -> tuple[np.ndarray, np.ndarray]:
        """Ids of in-vocabulary words, flat, with the sentence each came from: (N,), (N,)."""
        ids = [[self.index[w] for w in s if w in self.index] for s in sentences]
        flat = np.fromiter((i for s in ids for i in s), dtype=np.int64)
        sentence = np.repeat(np.arange(len(ids)), [len(s) for s in ids])
        return flat, sentence

    def keep_probability(self, sample: float) -> np.ndarray:
        """Frequent-word subsampling as gensim and word2vec.c do it: keep w with
        (sqrt(f/t) + 1) t/f, t = sample · total count, capped at 1. (V,)"""
        if sample <= 0:
            return np.ones(len(self))
        threshold = sample * self.counts.sum()
        return np.minimum((np.sqrt(self.counts / threshold) + 1) * threshold / self.counts, 1.0)

    def noise_distribution(self, power: float = 0.75) -> np.ndarray:
        """P_n(w) ∝ count(w)^0.75 (000 eq. 16's w̄ ~ P(w), the power of word2vec). (V,)"""
        weights = self.counts.astype(np.float64) ** power
        return weights / weights.sum()
