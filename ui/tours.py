"""Guided tours: sequences of deep links, each with a short note, walked with Previous and Next.

A tour lives in the URL as `tour=<key>&stop=<n>` beside the stop's own control values, so a link to any stop
of a tour can be shared like any other view.
"""
from __future__ import annotations

from dataclasses import dataclass, field

TOUR_PARAM, STOP_PARAM = "tour", "stop"


@dataclass(frozen=True)
class Stop:
    slug: str
    note: str
    params: dict[str, str] = field(default_factory=dict)  # control values this stop opens with


@dataclass(frozen=True)
class Tour:
    key: str
    title: str
    summary: str
    stops: tuple[Stop, ...]


TOURS = (
    Tour("word-vectors", "Word vectors", "From one-hot to vectors that know king − man + woman.", (
        Stop("one_hot", "One-hot vectors: every word its own axis, so every pair of words is equally far apart."),
        Stop("skipgram_pairs", "The training data: each word and the words around it, as (target, context) pairs."),
        Stop("softmax_gradient", "The model: a softmax over the whole vocabulary; its gradient pulls the true "
                                 "context's vector and pushes the average one."),
        Stop("word2vec_training", "Train it: negative sampling replaces the full softmax; press Train and watch "
                                  "the loss fall."),
        Stop("analogies", "What trained vectors know: analogies by vector arithmetic, on 400,000 GloVe words."),
    )),
    Tour("decoding", "Decoding", "From next-token probabilities to a whole output: greedy, beam, exhaustive.", (
        Stop("softmax_gradient", "A model gives a probability to every next token."),
        Stop("decoding_lab", "Greedy search takes the likeliest token at each step.", {"method": "greedy"}),
        Stop("decoding_lab", "Beam search keeps the W best prefixes; the tree shows what it kept and pruned.",
             {"method": "beam", "W": "4"}),
        Stop("transformer_lm", "Sampling instead of searching: temperature trades likelihood for variety.",
             {"temp": "0.8"}),
        Stop("kv_cache", "Generating fast: keys and values of earlier tokens are cached, not recomputed."),
    )),
    Tour("attention", "Attention", "From kernel regression to Transformers: a trained TransformerLM.", (
        Stop("kernel_regression", "Attention before neural networks: a weighted average of values, weighted by "
                                  "how close each key is to the query."),
        Stop("seq2seq_attention", "A decoder that looks back at its input: which characters each output reads."),
        Stop("scoring_functions", "How to score a key against a query: dot, scaled dot, general, additive."),
        Stop("scaling", "Why scaled dot products divide by √d_k: without it, softmax saturates as d_k grows."),
        Stop("multi_head", "Many heads at once, shape by shape."),
        Stop("transformer_lm", "Stacked into a TransformerLM, trained on text: every layer's and head's attention."),
        Stop("attention_variants", "Sharing keys and values between heads: MQA, GQA, and MLA's latent cache."),
    )),
    Tour("positions", "Positions", "Why attention needs positions, and three ways to give them.", (
        Stop("permutation", "Without positions, shuffling the tokens only shuffles the attention map."),
        Stop("sinusoidal", "Sinusoidal encodings: a fixed vector per position, added to each token."),
        Stop("rope", "RoPE rotates queries and keys so that scores depend only on the distance between tokens."),
        Stop("decoupled_rope", "Why RoPE breaks MLA's weight absorption, and the decoupled form that keeps it."),
    )),
    Tour("efficiency", "Efficiency", "Attention without the N × N matrix in memory.", (
        Stop("online_softmax", "Softmax in one pass: a running maximum and a rescaled sum; press Play."),
        Stop("flash_attention", "The same idea on tiles: FlashAttention keeps only O and L per row of tiles."),
        Stop("attention_timing", "What it buys: time and memory against N, naive against tiled against fused."),
    )),
)
BY_KEY = {tour.key: tour for tour in TOURS}


def stop_params(tour: Tour, index: int, lecture: bool) -> dict[str, str]:
    """The URL of the tour's stop `index` (0-based): its control values and where it is in the tour."""
    params = dict(tour.stops[index].params) | {TOUR_PARAM: tour.key, STOP_PARAM: str(index + 1)}
    return params | {"lecture": "true"} if lecture else params
