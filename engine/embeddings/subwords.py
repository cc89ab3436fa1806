"""FastText's sub-words (000 §4.1, eq. 17-18; Bojanowski et al. 2017): a word's character n-grams inside the
boundary symbols < and >, hashed into a fixed number of buckets, and a word's vector built from theirs.

000 §4.1 lists the 3-grams of "where" as wh, whe, her, ere, re: the paper and fastText write them with the
boundaries, <wh and re>, so that the suffix re> differs from the inside gram "re" of "are". The paper and
eq. 17 sum the n-gram vectors; fastText and gensim return their mean for a word, a different length and the
same direction. Both are offered.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from engine.errors import InputError

FNV_OFFSET, FNV_PRIME = 2166136261, 16777619


def check_range(min_n: int, max_n: int) -> None:
    if min_n < 1:
        raise InputError(f"the shortest n-gram must have at least one character, not {min_n}")
    if min_n > max_n:
        raise InputError(f"the shortest n-gram length ({min_n}) is above the longest ({max_n})")


def ngrams(word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
    """The character n-grams of <word>, min_n ≤ n ≤ max_n, in fastText's order (by start, then length), which
    gensim's training keeps. A 1-gram of a boundary alone (< or >) is skipped, as fastText skips it."""
    check_range(min_n, max_n)
    marked = f"<{word}>"
    return [marked[start:start + n] for start in range(len(marked)) for n in range(min_n, max_n + 1)
            if start + n <= len(marked) and (n > 1 or 0 < start < len(marked) - 1)]


def word_ngrams(word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
    """The set a vocabulary word is represented by: the whole <word> as its own sequence, then its n-grams."""
    return [f"<{word}>", *(g for g in ngrams(word, min_n, max_n) if g != f"<{word}>")]


def fnv1a(gram: str) -> int:
    """fastText's 32-bit FNV-1a over the UTF-8 bytes, each byte sign-extended first (fastText's int8_t cast,
    which gensim keeps for compatibility); only bytes above 127 are affected."""
    h = FNV_OFFSET
    for byte in gram.encode("utf-8"):
        h = ((h ^ (byte - 256 if byte > 127 else byte)) & 0xFFFFFFFF) * FNV_PRIME & 0xFFFFFFFF
    return h


def fnv1a_each(grams: list[str]) -> np.ndarray:
    """fnv1a of each gram, (G,) int64: the same loop, one byte position at a time over all grams at once (a
    vocabulary's 100,000 n-grams byte by byte in Python took 0.2 s)."""
    encoded = [g.encode("utf-8") for g in grams]
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))  # (G,)
    if not len(encoded):
        return np.zeros(0, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths  # (G,) where each gram's bytes begin in the joined bytes
    rows = np.repeat(np.arange(len(encoded)), lengths)
    padded = np.zeros((len(encoded), int(lengths.max())), dtype=np.int8)  # (G, L) signed: fastText's int8_t
    padded[rows, np.arange(len(rows)) - starts[rows]] = np.frombuffer(b"".join(encoded), dtype=np.int8)
    h = np.full(len(encoded), FNV_OFFSET, dtype=np.uint64)
    for j in range(padded.shape[1]):
        byte = padded[:, j].astype(np.int64).astype(np.uint64) & 0xFFFFFFFF  # sign-extended, then 32 bits
        h = np.where(lengths > j, ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFF, h)  # < 2^57 before the mask: no overflow
    return h.astype(np.int64)


@dataclass(frozen=True)
class LengthNgrams:
    """The distinct n-grams of one length over a word list, as fastText first meets them."""
    grams: list[str]
    first_met: np.ndarray  # (G,) int64: (word, start, n) of each first meeting as one key that sorts in that order
    hashes: np.ndarray  # (G,) int64 fnv1a of each


def length_ngrams(words: list[str], n: int) -> LengthNgrams:
    """The distinct n-grams of exactly n characters of the words (ngrams' rule for n = 1 included). A range's
    distinct n-grams are these of each length in it, merged by merged_ngrams: each length computed once."""
    check_range(n, n)
    stride = max((len(w) for w in words), default=0) + 2  # starts per word, boundaries included
    first: dict[str, int] = {}
    for index, word in enumerate(words):
        marked = f"<{word}>"
        for start in range(len(marked) - n + 1):
            if n > 1 or 0 < start < len(marked) - 1:
                first.setdefault(marked[start:start + n], (index * stride + start) * 16 + n)
    grams = list(first)
    return LengthNgrams(grams, np.fromiter(first.values(), dtype=np.int64, count=len(grams)), fnv1a_each(grams))


def merged_ngrams(parts: list[LengthNgrams]) -> tuple[list[str], np.ndarray]:
    """The distinct n-grams of several lengths and their hashes, in the order fastText meets them (by word, then
    start, then length): the order of dict.fromkeys over every word's ngrams. Lengths differ, so no gram is in
    two parts, and each gram's first meeting overall is its first meeting within its length."""
    order = np.argsort(np.concatenate([p.first_met for p in parts]), kind="stable")  # (G,)
    every = [g for p in parts for g in p.grams]
    return [every[i] for i in order.tolist()], np.concatenate([p.hashes for p in parts])[order]


def vocabulary_ngrams(words: list[str], min_n: int, max_n: int) -> tuple[list[str], np.ndarray]:
    """The distinct n-grams of min_n to max_n characters of the words and their FNV-1a hashes, (G,), in the order
    fastText meets them: length_ngrams of each length, merged."""
    check_range(min_n, max_n)
    return merged_ngrams([length_ngrams(words, n) for n in range(min_n, max_n + 1)])


def check_buckets(n_buckets: int) -> None:
    if n_buckets < 1:
        raise InputError(f"there must be at least one bucket, not {n_buckets}")


def buckets(grams: list[str], n_buckets: int) -> list[int]:
    check_buckets(n_buckets)
    return [fnv1a(g) % n_buckets for g in grams]


class Collisions(Mapping[int, list[str]]):
    """The buckets that more than one distinct n-gram hashes to, each with those n-grams (they share one
    vector), in the order fastText first meets the buckets. A read-only dict, kept as sorted arrays: a vocabulary's
    100,000 n-grams make up to 26,000 such buckets, and building them all as lists took up to 80 ms where a page
    reads a word's dozen; a bucket's list is made when it is read."""

    def __init__(self, grams: list[str], ids: np.ndarray):
        self._grams = grams
        # each bucket's grams together, in the grams' order: a sort of bucket·G + index, every key distinct (a
        # quarter of the time of argsort(ids, kind="stable"), a timsort for 64-bit keys)
        n = len(ids)
        keys = np.sort(ids.astype(np.int64) * n + np.arange(n))  # (G,)
        self._order, self._sorted_ids = keys % n, keys // n  # (G,) each
        starts = np.flatnonzero(np.r_[True, self._sorted_ids[1:] != self._sorted_ids[:-1]])  # (buckets used,)
        sizes = np.diff(np.r_[starts, len(ids)])
        shared = np.flatnonzero(sizes > 1)
        self._starts, self._sizes = starts[shared], sizes[shared]  # (shared buckets,)
        self.grams_sharing = int(self._sizes.sum())  # n-grams that share their bucket with another

    def __getitem__(self, bucket: int) -> list[str]:
        start = int(np.searchsorted(self._sorted_ids, bucket))
        end = int(np.searchsorted(self._sorted_ids, bucket, side="right"))
        if end - start < 2:
            raise KeyError(bucket)
        return [self._grams[i] for i in self._order[start:end].tolist()]

    def __len__(self) -> int:
        return len(self._starts)

    def __iter__(self) -> Iterator[int]:
        first_met = self._order[self._starts]  # each shared bucket's first gram
        return iter(self._sorted_ids[self._starts[np.argsort(first_met, kind="stable")]].tolist())

    def __repr__(self) -> str:
        return f"Collisions({len(self):,} shared buckets, {self.grams_sharing:,} n-grams in them)"


def collisions(grams: list[str], n_buckets: int, hashes: np.ndarray | None = None) -> Collisions:
    """The buckets that more than one distinct n-gram hashes to, with those n-grams: they share one vector.
    hashes: fnv1a of each of grams, all distinct, if already known (they do not depend on n_buckets; hashing
    a vocabulary's 100,000 n-grams byte by byte takes a tenth of a second, the grouping a few ms)."""
    check_buckets(n_buckets)
    if hashes is None:
        grams = list(dict.fromkeys(grams))
        hashes = fnv1a_each(grams)
    return Collisions(grams, hashes % n_buckets)


def subword_vector(word: str, ngram_vectors: np.ndarray, min_n: int = 3, max_n: int = 6,
                   mean: bool = False) -> np.ndarray:
    """A word's vector from its n-grams' rows of ngram_vectors (n_buckets, d): eq. 17's sum, or fastText's
    mean. The word need not be in any vocabulary; one with no n-gram in range (shorter than min_n − 2) has
    none."""
    grams = ngrams(word, min_n, max_n)
    if not grams:
        raise InputError(f"“{word}” is too short for n-grams of {min_n} to {max_n} characters")
    rows = ngram_vectors[buckets(grams, len(ngram_vectors))]  # (G, d)
    return rows.mean(0) if mean else rows.sum(0)
