"""Word vectors: cosine neighbours, analogies by vector arithmetic, spelling suggestions, a 2-D view.

000 §2: words become vectors whose similarity can be measured and on which we can do arithmetic,
vec(King) − vec(man) + vec(woman) ≈ vec(Queen) (000 eq. 1). Similarity is the cosine, the dot product
of unit vectors, so every query is one matrix-vector product with the unit-normalised matrix (computed
once) and an argpartition. The two analogy objectives are those of Levy & Goldberg (2014), "Linguistic
Regularities in Sparse and Explicit Word Representations": 3CosAdd and 3CosMul (their eq. 4), the same
as gensim's KeyedVectors.most_similar and most_similar_cosmul.

Analogies read "a is to b as c is to ?": man : king :: woman : ? is analogy("man", "king", "woman"),
whose answer is the word nearest b − a + c = king − man + woman (000 eq. 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.embeddings.projection import pca
from engine.errors import InputError

COSMUL_EPS = 1e-6  # Levy & Goldberg's epsilon (gensim's too): keeps 3CosMul finite when cos(x, a) = −1
SPELLINGS_KEPT = 1000  # words whose suggested spellings a vector set keeps
SPELLING_POOL = 300  # candidates, closest in letter counts, whose edit distance is computed
OTHER = 26  # letter-count slot shared by every character outside a..z


def cos_add_scores(rows: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """3CosAdd: cos(x, b − a + c) for every row x. rows (R, d) unit vectors; a, b, c (n, d) unit -> (n, R).

    gensim first divides b − a + c by the total weight 3; a scale that the normalisation removes.
    """
    target = b + c - a  # (n, d)
    target /= np.linalg.norm(target, axis=1, keepdims=True)
    return target @ rows.T  # (n, R)


def cos_mul_scores(rows: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """3CosMul (Levy & Goldberg eq. 4): cos'(x, b) cos'(x, c) / (cos'(x, a) + ε), cos' = (1 + cos) / 2.

    The shift to [0, 1] is their footnote 7. rows (R, d) unit vectors; a, b, c (n, d) unit -> (n, R).
    """
    score = _shifted_cos(b, rows)  # (n, R)
    score *= _shifted_cos(c, rows)
    denominator = _shifted_cos(a, rows)
    denominator += COSMUL_EPS
    score /= denominator
    return score


def _shifted_cos(u: np.ndarray, rows: np.ndarray) -> np.ndarray:
    shifted = u @ rows.T  # (n, R)
    shifted += 1.0
    shifted *= 0.5
    return shifted


ANALOGY_METHODS = {"3CosAdd": cos_add_scores, "3CosMul": cos_mul_scores}


class UnknownWordError(InputError):
    """A word outside the vocabulary. str() is a sentence a page can show; .suggestions are spellings.
    An InputError, so a page's guard shows it like any other bad input."""

    def __init__(self, word: str, suggestions: list[str], vocab_size: int):
        super().__init__(word)
        self.word, self.suggestions, self.vocab_size = word, suggestions, vocab_size

    def __str__(self) -> str:
        hint = f"; did you mean {', '.join(repr(s) for s in self.suggestions)}?" if self.suggestions else ""
        return f"{self.word!r} is not among the {self.vocab_size:,} words{hint}"


@dataclass(repr=False, eq=False)
class WordVectors:
    """A vocabulary and its vectors; row i of vectors belongs to words[i]. Treat as read-only: the app
    shares one copy between sessions and the unit-normalised matrix is computed once."""

    words: list[str]  # most frequent first, so restrict_vocab=N means the N most frequent words
    vectors: np.ndarray  # (V, d) float32
    unit: np.ndarray = field(init=False)  # (V, d) each row divided by its length; zero rows stay zero
    index: dict[str, int] = field(init=False)
    lengths: np.ndarray = field(init=False)  # (V,) characters per word, for suggest
    letters: np.ndarray = field(init=False)  # (V, 27) counts of a..z and of other characters, lower-cased
    spelled: dict[tuple[str, int], list[str]] = field(init=False, default_factory=dict)  # suggest's answers kept

    def __post_init__(self):
        self.vectors = np.ascontiguousarray(self.vectors, dtype=np.float32)  # GloVe's file is column-major
        if self.vectors.ndim != 2 or len(self.words) != len(self.vectors):
            raise ValueError(f"{len(self.words)} words but vectors of shape {self.vectors.shape}")
        self.index = {w: i for i, w in enumerate(self.words)}
        if len(self.index) != len(self.words):
            raise ValueError("the vocabulary lists a word twice")
        norms = np.linalg.norm(self.vectors, axis=1, keepdims=True)  # (V, 1)
        norms[norms == 0] = 1.0
        self.unit = self.vectors / norms
        self.lengths, self.letters = _letter_counts([w.lower() for w in self.words])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def id(self, word: str) -> int:
        """Row of word; UnknownWordError (an InputError) with suggested spellings otherwise."""
        if not word.strip():
            raise InputError("type a word: the box is empty")
        if word not in self.index:
            raise UnknownWordError(word, self.suggest(word), len(self))
        return self.index[word]

    def vector(self, word: str) -> np.ndarray:
        """A copy of the vector of word, (d,)."""
        return self.vectors[self.id(word)].copy()

    def neighbours(self, word: str, topn: int = 10, restrict_vocab: int | None = None) -> list[tuple[str, float]]:
        """The topn words of highest cosine with word, itself excluded (gensim most_similar(word))."""
        i = self.id(word)
        rows = self.unit[:restrict_vocab]  # (R, d)
        return self._top(rows @ self.unit[i], topn, exclude=[i])

    def neighbours_of_vector(self, vector: np.ndarray, topn: int = 10, exclude: str = "") -> list[tuple[str, float]]:
        """The topn words of highest cosine with any vector (d,), e.g. an unseen word's (gensim similar_by_vector),
        leaving out the word `exclude` if it is one."""
        length = float(np.linalg.norm(vector))
        if length == 0:
            raise InputError("a zero vector has no direction, so no neighbours")
        excluded = [self.index[exclude]] if exclude in self.index else []
        return self._top(self.unit @ (vector / length), topn, exclude=excluded)

    def analogy(
        self, a: str, b: str, c: str, topn: int = 10, method: str = "3CosAdd", restrict_vocab: int | None = None
    ) -> list[tuple[str, float]]:
        """a is to b as c is to ?: the topn answers x ≈ b − a + c (000 eq. 1), a, b and c excluded.

        analogy("man", "king", "woman") -> [("queen", …), …]. 3CosAdd equals gensim's
        most_similar(positive=[b, c], negative=[a]) and 3CosMul its most_similar_cosmul with the same
        arguments. restrict_vocab=N searches only the N most frequent words (gensim's cosmul ignores it).
        """
        if method not in ANALOGY_METHODS:
            raise ValueError(f"unknown analogy method {method!r}; choose one of {', '.join(ANALOGY_METHODS)}")
        ids = [self.id(w) for w in (a, b, c)]
        u = self.unit[ids][:, None, :]  # (3, 1, d): a, b, c
        scores = ANALOGY_METHODS[method](self.unit[:restrict_vocab], *u)[0]  # (R,)
        return self._top(scores, topn, exclude=ids)

    def _top(self, scores: np.ndarray, topn: int, exclude: list[int]) -> list[tuple[str, float]]:
        """The topn highest scores (R,), best first, leaving out the rows in exclude (set to −inf in place)."""
        excluded = {i for i in exclude if i < len(scores)}
        scores[list(excluded)] = -np.inf
        k = max(0, min(topn, len(scores) - len(excluded)))
        if k == 0:
            return []
        best = np.argpartition(-scores, k - 1)[:k]  # (k,) unordered
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(self.words[i], float(scores[i])) for i in best]

    def suggest(self, word: str, n: int = 5) -> list[str]:
        """Up to n vocabulary words nearest to word in edit distance; on ties, those sharing its first
        letter (rarely the mistyped one), then the more frequent.

        Edits are insertions, deletions, substitutions and swaps of neighbours (so "thier" -> "their"),
        at most a third of the word's length. An edit changes the letter counts by at most 2 in L1, so
        the SPELLING_POOL words of length within 2 closest in letter counts are the only candidates. The answers
        are kept, for up to SPELLINGS_KEPT words (then forgotten all at once): a page asks again on every run.
        """
        if (kept := self.spelled.get((word, n))) is not None:
            return list(kept)
        if len(self.spelled) >= SPELLINGS_KEPT:
            self.spelled.clear()
        # kept from here, not read back: another session's ask may clear the dict meanwhile
        spellings = self.spelled[word, n] = self._spellings(word, n)
        return list(spellings)

    def _spellings(self, word: str, n: int) -> list[str]:
        query = word.lower()
        most = max(1, len(query) // 3)  # edits allowed
        near = np.flatnonzero(np.abs(self.lengths - len(query)) <= min(2, most))  # (m,)
        l1 = np.abs(self.letters[near] - _letter_counts([query])[1][0]).sum(axis=1)  # (m,)
        near, l1 = near[l1 <= 2 * most], l1[l1 <= 2 * most]
        if len(near) > SPELLING_POOL:  # closest counts first, then the more frequent word
            near = near[np.argpartition(l1 * len(self) + near, SPELLING_POOL)[:SPELLING_POOL]]
        spelled = [self.words[i].lower() for i in near]
        found = sorted((edit_distance(query, w), w[:1] != query[:1], i) for w, i in zip(spelled, near))
        return [self.words[i] for d, _, i in found if d <= most and self.words[i] != word][:n]

    def pca_2d(self, words: list[str]) -> np.ndarray:
        """(len(words), 2): the centred vectors of words projected on their two principal axes
        (engine.embeddings.projection.pca: by SVD, the word farthest out on each axis on its positive side)."""
        if len(words) < 2:
            raise InputError("a 2-D projection needs at least two words")
        return pca(self.vectors[[self.id(w) for w in words]], 2).coords


def edit_distance(s: str, t: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions, adjacent swaps."""
    before, previous = [], list(range(len(t) + 1))  # rows i − 2 and i − 1 of the table
    for i in range(1, len(s) + 1):
        row = [i] + [0] * len(t)
        for j in range(1, len(t) + 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (s[i - 1] != t[j - 1]))
            if i > 1 and j > 1 and s[i - 1] == t[j - 2] and s[i - 2] == t[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
        before, previous = previous, row
    return previous[-1]


def _letter_counts(words: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Lengths (V,) and counts of a..z plus one slot for any other character (V, 27) int16."""
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))  # (V,)
    codes = np.frombuffer("".join(words).encode("utf-32-le"), dtype=np.uint32)  # (sum of lengths,)
    letters = np.minimum(codes - np.uint32(ord("a")), OTHER)  # below "a" wraps around to a large number
    owner = np.repeat(np.arange(len(words)), lengths)  # (sum of lengths,) word of each character
    counts = np.bincount(owner * (OTHER + 1) + letters, minlength=len(words) * (OTHER + 1))
    return lengths, counts.reshape(len(words), OTHER + 1).astype(np.int16)  # (V, 27)
