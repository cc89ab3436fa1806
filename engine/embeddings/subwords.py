"""FastText's sub-words (000 §4.1, eq. 17-18; Bojanowski et al. 2017): a word's character n-grams inside the
boundary symbols < and >, hashed into a fixed number of buckets, and a word's vector built from theirs.

000 §4.1 lists the 3-grams of "where" as wh, whe, her, ere, re: the paper and fastText write them with the
boundaries, <wh and re>, so that the suffix re> differs from the inside gram "re" of "are". The paper and
eq. 17 sum the n-gram vectors; fastText and gensim return their mean for a word, a different length and the
same direction. Both are offered.
"""
from __future__ import annotations

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
    """fnv1a of each gram, (G,) int64."""
    return np.array([fnv1a(g) for g in grams], dtype=np.int64)


def check_buckets(n_buckets: int) -> None:
    if n_buckets < 1:
        raise InputError(f"there must be at least one bucket, not {n_buckets}")


def buckets(grams: list[str], n_buckets: int) -> list[int]:
    check_buckets(n_buckets)
    return [fnv1a(g) % n_buckets for g in grams]


def collisions(grams: list[str], n_buckets: int, hashes: np.ndarray | None = None) -> dict[int, list[str]]:
    """The buckets that more than one distinct n-gram hashes to, with those n-grams: they share one vector.
    hashes: fnv1a of each of grams, all distinct, if already known (they do not depend on n_buckets; hashing
    a vocabulary's 100,000 n-grams byte by byte takes a tenth of a second, the grouping a few ms)."""
    check_buckets(n_buckets)
    if hashes is None:
        grams = list(dict.fromkeys(grams))
        hashes = fnv1a_each(grams)
    ids = hashes % n_buckets  # (G,)
    _, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    sharing: dict[int, list[str]] = {}
    for i in np.flatnonzero(counts[inverse] > 1).tolist():  # in the grams' order, as fastText meets them
        sharing.setdefault(int(ids[i]), []).append(grams[i])
    return sharing


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
