"""Hierarchical softmax over a Huffman tree (000 §4.3, eq. 22-26).

The V words are the leaves; the V − 1 inner nodes each hold a vector v'_n. A word's probability is
the product, along its root-to-leaf path, of σ(branch · v'_n·h) with branch = +1 for LEFT and −1 for
RIGHT (eq. 23-24). Frequent words sit near the root, so the average path is about log2 V long.
The tree is built as word2vec.c and gensim build it: merge the two rarest nodes, the first popped
becomes the LEFT child (code 0).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from engine.errors import InputError


@dataclass
class HuffmanTree:
    points: list[np.ndarray]  # per word: inner-node ids from the root down, n(w, 1..L(w)−1)
    codes: list[np.ndarray]  # per word: 0 = LEFT, 1 = RIGHT at each of those nodes
    leaves_below: np.ndarray  # (V − 1,) words under each inner node

    @property
    def depth(self) -> np.ndarray:
        return np.array([len(c) for c in self.codes])

    def padded(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Paths as rectangles for batched training: points, branch signs (+1/−1) and a mask. (V, L) each"""
        V, L = len(self.codes), int(self.depth.max())
        points = torch.zeros(V, L, dtype=torch.long)
        signs = torch.zeros(V, L)
        for w, (p, c) in enumerate(zip(self.points, self.codes)):
            points[w, :len(p)] = torch.from_numpy(p.astype(np.int64))
            signs[w, :len(c)] = torch.from_numpy(1.0 - 2.0 * c)  # eq. 23: LEFT +1, RIGHT −1
        return points, signs, signs != 0


@dataclass(slots=True)
class _Item:
    """A heap entry ordered by count alone, as gensim's Heapitem: ties fall as the heap leaves them,
    which fixes the tree gensim builds."""

    count: int
    node: int

    def __lt__(self, other: _Item) -> bool:
        return self.count < other.count


def huffman_tree(counts: np.ndarray) -> HuffmanTree:
    """Codes and paths of a Huffman tree over word counts (V ≥ 2)."""
    V = len(counts)
    if V < 2:
        raise InputError("a Huffman tree needs at least two words")
    heap = [_Item(int(c), w) for w, c in enumerate(counts)]
    heapq.heapify(heap)
    children, leaves_below = {}, np.zeros(V - 1, dtype=np.int64)
    size = {w: 1 for w in range(V)}
    for inner in range(V, 2 * V - 1):
        left, right = heapq.heappop(heap), heapq.heappop(heap)
        children[inner] = (left.node, right.node)
        size[inner] = size[left.node] + size[right.node]
        leaves_below[inner - V] = size[inner]
        heapq.heappush(heap, _Item(left.count + right.count, inner))
    points, codes = [None] * V, [None] * V
    stack = [(2 * V - 2, [], [])]
    while stack:
        node, path, code = stack.pop()
        if node < V:
            points[node], codes[node] = np.array(path, dtype=np.int64), np.array(code, dtype=np.float64)
            continue
        left, right = children[node]
        stack += [(left, path + [node - V], code + [0]), (right, path + [node - V], code + [1])]
    return HuffmanTree(points, codes, leaves_below)


def word_probability(tree: HuffmanTree, node_vectors: torch.Tensor, h: torch.Tensor, word: int) -> torch.Tensor:
    """000 eq. 24: p(w|c) = Π_j σ(branch_j · v'_n(w,j)·h). node_vectors: (V − 1, d), h: (d,) -> ()"""
    return torch.exp(path_log_terms(tree, node_vectors, h, word).sum())


def path_log_terms(tree: HuffmanTree, node_vectors: torch.Tensor, h: torch.Tensor, word: int) -> torch.Tensor:
    """log σ(branch · v'_n·h) at every node on the word's path: what the page draws. -> (L(w) − 1,)"""
    nodes = torch.from_numpy(tree.points[word])
    signs = torch.from_numpy(1.0 - 2.0 * tree.codes[word]).to(h.dtype)
    return F.logsigmoid(signs * (node_vectors[nodes] @ h))


def vocabulary_distribution(tree: HuffmanTree, node_vectors: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """p(w|c) for every word at once; eq. 25 says it sums to 1. -> (V,)"""
    points, signs, mask = tree.padded()
    logits = node_vectors[points] @ h  # (V, L)
    log_terms = F.logsigmoid(signs.to(h.dtype) * logits) * mask
    return torch.exp(log_terms.sum(dim=1))


@dataclass
class PathStep:
    """One inner node on a word's path, as the page draws it."""

    node: int  # inner-node id n(w, j)
    branch: int  # eq. 23: +1 LEFT, −1 RIGHT
    score: float  # v'_n·h
    probability: float  # σ(branch · v'_n·h)
    reached: float  # product of the probabilities from the root down to and including this one
    words_taken: int  # leaves under the branch taken
    words_left_out: int  # leaves under the other branch


def path_steps(tree: HuffmanTree, node_vectors: torch.Tensor, h: torch.Tensor, word: int) -> list[PathStep]:
    """Eq. 24 factor by factor along the word's root-to-leaf path."""
    nodes, codes = tree.points[word], tree.codes[word]
    scores = (node_vectors[torch.from_numpy(nodes)] @ h).tolist()
    below = [int(tree.leaves_below[n]) for n in nodes] + [1]  # the last branch ends at the word's leaf
    steps, reached = [], 1.0
    for j, (n, code, score) in enumerate(zip(nodes, codes, scores)):
        branch = 1 - 2 * int(code)
        probability = float(torch.sigmoid(torch.tensor(branch * score, dtype=torch.float64)))
        reached *= probability
        steps.append(PathStep(int(n), branch, score, probability, reached, below[j + 1], below[j] - below[j + 1]))
    return steps


def mean_depth(tree: HuffmanTree, counts: np.ndarray) -> float:
    """Sigmoids per word, averaged over running text: Σ count(w) L(w) / Σ count(w)."""
    return float((tree.depth * counts).sum() / counts.sum())
