import math

import pytest
import torch

from engine.attention.scaling import sample_logits, scaling_study, softmax_entropy, softmax_jacobian_norm
from engine.errors import InputError


def test_logit_variance_is_d_k_raw_and_one_scaled():
    study = scaling_study(max_log2_d=8, n_keys=32, n_draws=2000, seed=0)
    for d, raw, scaled in zip(study.d_k, study.logit_std["raw"], study.logit_std["scaled"]):
        # 64,000 samples: the std of a sample std is about 0.3% of it; 5% is a generous bound
        assert raw == pytest.approx(math.sqrt(d), rel=0.05)
        assert scaled == pytest.approx(1.0, rel=0.05)


def test_raw_softmax_saturates_and_scaled_does_not():
    study = scaling_study(max_log2_d=10, n_keys=16, n_draws=500, seed=1)
    assert study.entropy["raw"][-1] < 0.1 < 0.8 < study.entropy["scaled"][-1]
    assert study.max_weight["raw"][-1] > 0.9
    assert study.jacobian_norm["raw"][-1] < study.jacobian_norm["scaled"][-1] / 3


def test_jacobian_norm_closed_form_matches_autograd():
    logits = torch.randn(6, generator=torch.Generator().manual_seed(2)) * 3
    J = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, 0), logits)
    assert float(softmax_jacobian_norm(torch.softmax(logits, 0))) == pytest.approx(float(torch.linalg.norm(J)), rel=1e-5)


def test_entropy_of_uniform_and_one_hot():
    assert float(softmax_entropy(torch.full((8,), 1 / 8))) == pytest.approx(math.log(8))
    assert float(softmax_entropy(torch.tensor([0.0, 1.0, 0.0]))) == 0.0


def test_sample_logits_shape_and_chunking_agree():
    logits = sample_logits(5, 3, 300, torch.Generator().manual_seed(0))
    assert logits.shape == (300, 3)
    with pytest.raises(InputError):
        scaling_study(3, 1, 10, 0)


def test_nested_logits_are_prefix_sums_of_one_draw():
    from engine.attention.scaling import nested_logits
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    logits = nested_logits([1, 4, 8], 3, 2, g1)
    q, K = torch.randn(2, 1, 8, generator=g2), torch.randn(2, 3, 8, generator=g2)
    for i, d in enumerate([1, 4, 8]):
        torch.testing.assert_close(logits[i], (q[..., :d] * K[..., :d]).sum(-1))


def test_nested_logits_are_the_running_sums_to_the_bit():
    """The page's numbers are those of one running sum over every product (cumsum), at the default widths, drawn
    chunk by chunk as nested_logits draws."""
    from engine.attention.scaling import DRAW_CHUNK, nested_logits
    dims, n = [2**i for i in range(11)], 300
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    logits = nested_logits(dims, 16, n, g1)
    running = []
    for start in range(0, n, DRAW_CHUNK):
        b = min(DRAW_CHUNK, n - start)
        q, K = torch.randn(b, 1, 1024, generator=g2), torch.randn(b, 16, 1024, generator=g2)
        running.append((q * K).cumsum(dim=-1)[..., torch.tensor(dims) - 1])  # (b, m, len(dims))
    assert torch.equal(logits, torch.cat(running).permute(2, 0, 1))
