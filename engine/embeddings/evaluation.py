"""Intrinsic evaluations of word vectors: the analogy test and correlation with human similarity ratings.

Both follow gensim's KeyedVectors.evaluate_word_analogies and evaluate_word_pairs to the letter (file
parsing, upper-casing with the first, most frequent, case variant winning, questions with a word outside
the first restrict_vocab words skipped), so their numbers agree with gensim's on the same vectors. The
analogy test answers a whole chunk of questions with one matrix product (analogy objectives of
engine.embeddings.vectors) instead of gensim's one most_similar call per question.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from engine.embeddings.vectors import ANALOGY_METHODS, WordVectors
from engine.errors import InputError
from engine.gensim_data import gensim_file, gensim_module

QUESTIONS_FILE = "questions-words.txt"  # Mikolov et al. (2013): 19,544 questions in 14 sections
PAIR_FILES = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}
PAIR_TITLES = {"wordsim353": "WordSim-353", "simlex999": "SimLex-999"}
SCORE_BUDGET = 1 << 25  # scores held per chunk of questions: 128 MB of float32 (three such for 3CosMul)
GENSIM_TOPN = 5  # gensim reads its 5 best answers for the first that is not a case variant of a question word


@dataclass(frozen=True)
class SectionScore:
    name: str
    correct: int
    total: int  # questions asked: those with all four words among the first restrict_vocab

    @property
    def accuracy(self) -> float:
        """correct / total, 0 for a section with no question asked (as gensim)."""
        return self.correct / self.total if self.total else 0.0


@dataclass
class AnalogyAccuracy:
    sections: list[SectionScore]  # in file order, empty ones included
    overall: SectionScore  # gensim's "Total accuracy"
    skipped: int  # questions with a word outside the first restrict_vocab words


@dataclass
class AnalogyQuestions:
    sections: list[str]
    section_of: np.ndarray  # (Q,) index into sections
    words: list[tuple[str, str, str, str]]  # a : b :: c : expected, upper-cased


def read_analogy_questions(path: Path) -> AnalogyQuestions:
    """Sections start at ": name" lines; other lines with other than 4 words are skipped (as gensim)."""
    sections, section_of, words = [], [], []
    with path.open("rb") as f:
        for line_no, raw in enumerate(f):
            line = raw.decode("utf-8")
            if line.startswith(": "):
                sections.append(line.lstrip(": ").strip())
                continue
            if not sections:
                raise ValueError(f"missing section header before line #{line_no} in {path}")
            quad = [w.upper() for w in line.split()]
            if len(quad) == 4:
                section_of.append(len(sections) - 1)
                words.append(tuple(quad))
    return AnalogyQuestions(sections, np.array(section_of, dtype=np.int64), words)


def case_insensitive_vocab(words: list[str], restrict_vocab: int) -> dict[str, int]:
    """Upper-cased word -> row, among the first restrict_vocab words; the first case variant wins."""
    return {w.upper(): i for i, w in reversed(list(enumerate(words[:restrict_vocab])))}


def analogy_accuracy(
    vectors: WordVectors,
    restrict_vocab: int = 300_000,
    method: str = "3CosAdd",
    progress: Callable[[float], None] | None = None,
    questions_file: Path | None = None,
) -> AnalogyAccuracy:
    """Share of questions a : b :: c : ? whose best answer among the first restrict_vocab words,
    a, b and c excluded, is the expected word. progress(fraction done) is called after each chunk;
    questions_file defaults to gensim's copy of questions-words.txt."""
    if method not in ANALOGY_METHODS:
        raise ValueError(f"unknown analogy method {method!r}; choose one of {', '.join(ANALOGY_METHODS)}")
    questions = read_analogy_questions(questions_file or gensim_file(QUESTIONS_FILE))
    vocab = case_insensitive_vocab(vectors.words, restrict_vocab)
    asked = np.array([all(w in vocab for w in q) for q in questions.words], dtype=bool)  # (Q,)
    ids = np.array([[vocab[w] for w in q] for q, ok in zip(questions.words, asked) if ok], dtype=np.int64)
    canonical = np.array([vocab[w.upper()] for w in vectors.words[:restrict_vocab]])  # (R,) row of its case class
    correct = answer_is_expected(vectors.unit[:restrict_vocab], canonical, ids.reshape(-1, 4), method, progress)
    n = len(questions.sections)
    per_section = np.bincount(questions.section_of[asked], weights=correct, minlength=n).astype(int)  # (S,)
    totals = np.bincount(questions.section_of[asked], minlength=n)  # (S,)
    sections = [SectionScore(s, int(c), int(t)) for s, c, t in zip(questions.sections, per_section, totals)]
    overall = SectionScore("Total accuracy", int(correct.sum()), len(correct))
    return AnalogyAccuracy(sections, overall, skipped=int((~asked).sum()))


def answer_is_expected(
    rows: np.ndarray,
    canonical: np.ndarray,
    ids: np.ndarray,
    method: str,
    progress: Callable[[float], None] | None = None,
) -> np.ndarray:
    """(n,) bool for questions ids (n, 4) = rows of a, b, c, expected; rows (R, d) unit vectors."""
    chunk = max(1, SCORE_BUDGET // len(rows))
    correct = np.zeros(len(ids), dtype=bool)
    for start in range(0, len(ids), chunk):
        q = ids[start : start + chunk]  # (n, 4)
        scores = ANALOGY_METHODS[method](rows, rows[q[:, 0]], rows[q[:, 1]], rows[q[:, 2]])  # (n, R)
        np.put_along_axis(scores, q[:, :3], -np.inf, axis=1)  # the question's words are never answers
        correct[start : start + chunk] = gensim_prediction(scores, canonical, q) == canonical[q[:, 3]]
        if progress is not None:
            progress(min(1.0, (start + chunk) / len(ids)))
    return correct


def gensim_prediction(scores: np.ndarray, canonical: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(n,) predicted case class: the best answer, unless it is a case variant of a, b or c (e.g. "ﬁrst"
    of "first"); then, as gensim, the first of the GENSIM_TOPN best that is not, else the last of them."""
    predicted = canonical[scores.argmax(axis=1)]  # (n,)
    for row in np.flatnonzero((predicted[:, None] == q[:, :3]).any(axis=1)):
        best = np.argsort(-scores[row], kind="stable")[:GENSIM_TOPN]
        allowed = [k for k in canonical[best] if k not in q[row, :3]]
        predicted[row] = allowed[0] if allowed else canonical[best[-1]]
    return predicted


@dataclass
class PairCorrelation:
    dataset: str
    pearson: float
    spearman: float
    oov_percent: float  # pairs skipped for a word outside the first restrict_vocab, in percent (as gensim)
    pairs: list[tuple[str, str]]  # the pairs scored, upper-cased
    human: np.ndarray  # (n,) the dataset's ratings
    cosine: np.ndarray  # (n,) the vectors' cosine similarities


def read_word_pairs(path: Path) -> list[tuple[str, str, float]]:
    """Tab-separated "word1 word2 rating" lines, upper-cased; "#" comments and malformed lines skipped."""
    rows = []
    with path.open(encoding="utf8") as f:
        for line in f:
            fields = [w.upper() for w in line.split("\t")]
            if line.startswith("#") or len(fields) != 3:
                continue
            try:
                rows.append((fields[0], fields[1], float(fields[2])))
            except ValueError:
                continue
    return rows


def word_pair_correlation(
    vectors: WordVectors, dataset: str = "wordsim353", restrict_vocab: int = 300_000
) -> PairCorrelation:
    """Pearson and Spearman correlation between human similarity ratings and cosine similarity."""
    stats = gensim_module("scipy.stats")

    if dataset not in PAIR_FILES:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {', '.join(PAIR_FILES)}")
    vocab = case_insensitive_vocab(vectors.words, restrict_vocab)
    rated = read_word_pairs(gensim_file(PAIR_FILES[dataset]))
    known = [(a, b, s) for a, b, s in rated if a in vocab and b in vocab]
    if not known:
        raise InputError(f"no pair of {dataset} has both words among the first {restrict_vocab} words")
    i, j = (np.array([vocab[p[k]] for p in known]) for k in (0, 1))  # (n,) rows of each pair
    cosine = np.einsum("nd,nd->n", vectors.unit[i], vectors.unit[j])  # (n,)
    human = np.array([s for _, _, s in known])  # (n,)
    return PairCorrelation(
        dataset=dataset,
        pearson=float(stats.pearsonr(human, cosine).statistic),
        spearman=float(stats.spearmanr(human, cosine).statistic),
        oov_percent=100.0 * (len(rated) - len(known)) / len(rated),
        pairs=[(a, b) for a, b, _ in known],
        human=human,
        cosine=cosine,
    )


def scores(vectors: WordVectors) -> dict[str, float]:
    """What a shipped checkpoint stores: Google analogy accuracy (3CosAdd) and the number of questions asked,
    WordSim-353 and SimLex-999 Spearman ρ."""
    if not len(vectors):
        raise InputError("no words to score")
    analogies = analogy_accuracy(vectors).overall
    return {"analogy_accuracy": analogies.accuracy, "analogy_questions": analogies.total,
            **{f"{name}_spearman": word_pair_correlation(vectors, name).spearman for name in PAIR_FILES}}


def on_shared_vocabulary(a: WordVectors, b: WordVectors) -> tuple[WordVectors, WordVectors]:
    """a and b cut to the words both hold, in a's order: the same questions, answered among the same words."""
    words = [w for w in a.words if w in b.index]
    return (WordVectors(words, a.vectors[[a.index[w] for w in words]]),
            WordVectors(words, b.vectors[[b.index[w] for w in words]]))
