"""The compiled sampler (engine/transformer/sampler.py) against the torch TransformerLM it reimplements."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.errors import InputError
from engine.transformer import sampler
from engine.transformer.model import (ModelConfig, TransformerLM, draw_next, generate, load_checkpoint, outside_nucleus,
                                     sampling_distribution)
from engine.transformer.train import CHECKPOINTS


@pytest.fixture(scope="module")
def trained() -> TransformerLM:
    return load_checkpoint(CHECKPOINTS / "char_causal.pt")[0].eval()


def logits_along(weights: sampler.Weights, ids: list[int]) -> np.ndarray:
    """The sampler's logits after each of ids, fed one at a time: (T, V)."""
    d = weights.token_emb.shape[1] // weights.n_heads
    keys = np.zeros((weights.qkv_w.shape[0], weights.n_heads, len(ids), d), dtype=np.float32)
    values = np.zeros_like(keys)
    return np.stack([sampler.step_logits(token, position, keys, values, *weights.arrays(), weights.n_heads,
                                         weights.eps) for position, token in enumerate(ids)])


@pytest.mark.parametrize("seed", [0, 1])
def test_its_logits_are_the_torch_models_at_every_position(trained, seed):
    ids = torch.randint(0, trained.config.vocab_size, (60,), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        expected = trained(ids[None]).logits[0].numpy()  # (T, V), all positions at once under the causal mask
    np.testing.assert_allclose(logits_along(sampler.weights_of(trained), ids.tolist()), expected, atol=2e-4,
                               rtol=1e-4)


def test_a_random_small_model_too():
    torch.manual_seed(3)
    model = TransformerLM(ModelConfig(vocab_size=11, d_model=16, n_heads=2, n_layers=3, d_ff=32,
                                      max_seq_len=40)).eval()
    ids = [1, 5, 2, 9, 9, 0, 3]
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits[0].numpy()
    np.testing.assert_allclose(logits_along(sampler.weights_of(model), ids), expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("prompt", ["The fire ", "A", "Police said the "])
def test_greedy_continuations_are_the_torch_models(trained, prompt):
    from engine.transformer.text import CharVocab
    vocab = CharVocab(load_checkpoint(CHECKPOINTS / "char_causal.pt")[1]["vocab"])
    ids = vocab.encode(prompt).tolist()
    expected = generate(trained, torch.tensor([ids]), 80, temperature=0.0)[0, len(ids):].tolist()
    assert sampler.sample(sampler.weights_of(trained), ids, 80, 0.0, None, seed=0) == expected


@pytest.mark.parametrize("temperature, top_k", [(0.8, None), (1.5, 5), (0.3, 1), (1.0, 83)])
def test_a_draw_falls_where_its_uniform_number_does_in_sampling_distributions_cdf(temperature, top_k):
    logits = torch.randn(1, 83, generator=torch.Generator().manual_seed(7)) * 3
    cdf = torch.cumsum(sampling_distribution(logits, temperature, top_k)[0].double(), 0).numpy()
    for u in np.random.default_rng(0).random(200):
        if np.min(np.abs(cdf - u)) < 1e-6:
            continue  # on a boundary float32 rounding may go either way
        assert sampler.choose(logits[0].numpy(), temperature, top_k or 0, u) == np.searchsorted(cdf, u, side="right")


def test_a_seed_gives_the_same_characters_and_the_frequencies_follow_the_distribution(trained):
    weights = sampler.weights_of(trained)
    prompt = [5, 6, 7]
    assert sampler.sample(weights, prompt, 30, 1.0, None, 4) == sampler.sample(weights, prompt, 30, 1.0, None, 4)
    assert sampler.sample(weights, prompt, 30, 1.0, None, 4) != sampler.sample(weights, prompt, 30, 1.0, None, 5)
    firsts = np.bincount([sampler.sample(weights, prompt, 1, 1.0, None, s)[0] for s in range(2000)], minlength=83)
    with torch.no_grad():
        p = sampling_distribution(trained(torch.tensor([prompt])).logits[:, -1], 1.0)[0].numpy()
    likely = p > 0.05
    np.testing.assert_allclose(firsts[likely] / 2000, p[likely], atol=0.035)  # 4 standard errors or so


def test_bad_settings_are_refused(trained):
    weights = sampler.weights_of(trained)
    with pytest.raises(InputError, match="empty"):
        sampler.sample(weights, [], 5, 1.0, None, 0)
    with pytest.raises(InputError, match="temperature"):
        sampler.sample(weights, [1], 5, -1.0, None, 0)
    with pytest.raises(InputError, match="context window"):
        sampler.sample(weights, [1] * 500, 20, 1.0, None, 0)
    assert sampler.sample(weights, [1, 2], 0, 1.0, None, 0) == []


@pytest.mark.parametrize("scale", [0.5, 3.0, 12.0])  # from flat (a nucleus of thousands) to sharp (a few)
@pytest.mark.parametrize("top_p", [0.05, 0.5, 0.9, 0.99, 1.0])
def test_the_nucleus_ranked_from_its_top_tokens_is_the_one_a_full_sort_gives(scale, top_p):
    """outside_nucleus ranks the first NUCLEUS_FIRST tokens before sorting all: the same mask either way."""
    probs = torch.softmax(scale * torch.randn(6, 49152, generator=torch.Generator().manual_seed(int(scale))), -1)
    ranked, order = torch.sort(probs, dim=-1, descending=True)
    before = torch.cumsum(ranked, dim=-1) - ranked
    full = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, before >= top_p)
    assert torch.equal(outside_nucleus(probs, top_p), full)


def test_draws_realise_each_probability_to_within_2_to_the_minus_24():
    """draw_next's docstring: torch.rand's float32 uniforms are whole multiples of 2^-24, and in a float32
    cumulative sum a token of probability 2^-26 beside one of the rest takes no width, so it never comes."""
    uniforms = torch.rand(100_000, generator=torch.Generator().manual_seed(0))
    assert torch.equal(uniforms * 2**24, torch.floor(uniforms * 2**24))
    distribution = torch.tensor([[1 - 2**-26, 2**-26]])
    assert distribution[0, 1] > 0 and torch.equal(torch.cumsum(distribution, -1), torch.tensor([[1.0, 1.0]]))


@pytest.mark.parametrize("temperature, top_k, top_p", [(1.0, None, None), (0.7, 5, None), (1.3, None, 0.8),
                                                       (0.9, 20, 0.9)])
def test_draw_next_falls_where_its_uniform_number_does_and_follows_the_distribution(temperature, top_k, top_p):
    """Each draw is the first token whose cumulative probability passes the generator's uniform number times the
    total; over 20,000 draws every token's frequency is its probability, and a filtered-out token never comes."""
    logits = torch.randn(1, 300, generator=torch.Generator().manual_seed(3)) * 2
    generator, again = torch.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    # 20,000 rows of the same logits in one call: one uniform number per row, drawn in order from the generator
    token, distribution = draw_next(logits.expand(20_000, -1), temperature, top_k, generator, top_p)  # (20000, 1)
    u = torch.rand(20_000, 1, generator=again) * distribution.cumsum(-1)[:, -1:]
    assert torch.equal(token[:, 0], (distribution.cumsum(-1) <= u).sum(-1))
    counts = torch.bincount(token[:, 0], minlength=300).float()
    expected = sampling_distribution(logits, temperature, top_k, top_p)[0]
    assert counts[expected == 0].sum() == 0
    assert (counts / 20_000 - expected).abs().max() < 4 * math.sqrt(0.25 / 20_000)  # four binomial sigmas at most
