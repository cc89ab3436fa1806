import math

import pytest
import torch
import torch.nn.functional as F

from engine.attention import scoring
from engine.errors import InputError


def test_worked_example_of_002_section_2_1():
    # s_{t-1} = [0.5, 0.2]; h_1..h_3 = [1,0], [0,1], [1,1]; dot-product scores 0.5, 0.2, 0.7.
    s = torch.tensor([[0.5, 0.2]])
    H = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    result = scoring.attention(s, H, H, "dot")
    assert result.scores[0].tolist() == pytest.approx([0.5, 0.2, 0.7])
    exps = torch.exp(result.scores[0])
    assert exps.tolist() == pytest.approx([1.6487, 1.2214, 2.0138], abs=1e-4)  # printed in 002
    assert float(exps.sum()) == pytest.approx(4.8839, abs=1e-4)
    # 002 prints 0.3374, 0.2501, 0.4125 and c = [0.7499, 0.6626]; its own ratios 1.6487/4.8839 etc.
    # round to 0.3376 and 0.4123, so the printed values hold to 3 decimals, the exact ones to 4.
    assert result.weights[0].tolist() == pytest.approx([0.3374, 0.2501, 0.4125], abs=3e-4)
    assert result.weights[0].tolist() == pytest.approx([1.6487 / 4.8839, 1.2214 / 4.8839, 2.0138 / 4.8839], abs=1e-4)
    assert result.output[0].tolist() == pytest.approx([0.7499, 0.6626], abs=3e-4)
    assert result.output[0].tolist() == pytest.approx([0.75, 0.66], abs=5e-3)  # "c_t is approximately"


@pytest.mark.parametrize("n,m,d,d_v", [(1, 1, 1, 1), (3, 5, 4, 2), (7, 9, 16, 8)])
def test_scaled_dot_matches_torch_sdpa(n, m, d, d_v):
    g = torch.Generator().manual_seed(n * 100 + m)
    Q, K, V = torch.randn(n, d, generator=g), torch.randn(m, d, generator=g), torch.randn(m, d_v, generator=g)
    ours = scoring.attention(Q, K, V, "scaled_dot").output
    ref = F.scaled_dot_product_attention(Q[None], K[None], V[None])[0]
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=1e-5)  # float32 rounding of one matmul chain


def test_masked_attention_matches_torch_sdpa_with_a_boolean_mask():
    g = torch.Generator().manual_seed(0)
    Q, K, V = torch.randn(4, 8, generator=g), torch.randn(6, 8, generator=g), torch.randn(6, 3, generator=g)
    valid = torch.tensor([1, 3, 6, 2])
    ours = scoring.attention(Q, K, V, "scaled_dot", valid_lens=valid).output
    keep = torch.arange(6)[None, :] < valid[:, None]  # (4, 6)
    ref = F.scaled_dot_product_attention(Q[None], K[None], V[None], attn_mask=keep[None])[0]
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=1e-5)


def test_masked_softmax_rows_sum_to_one_over_valid_keys_and_are_zero_elsewhere():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 5, 7, generator=g) * 10
    valid = torch.tensor([[1, 2, 3, 7, 4], [7, 6, 5, 1, 2]])
    weights = scoring.masked_softmax(logits, valid)
    for b in range(2):
        for i in range(5):
            n = int(valid[b, i])
            assert float(weights[b, i, :n].sum()) == pytest.approx(1.0, abs=1e-6)
            if n < 7:
                assert weights[b, i, n:].abs().max().item() == 0.0
            torch.testing.assert_close(weights[b, i, :n], torch.softmax(logits[b, i, :n], dim=0))


def test_masked_softmax_rejects_lengths_outside_the_keys():
    with pytest.raises(InputError, match="1..3"):
        scoring.masked_softmax(torch.zeros(2, 3), torch.tensor([0, 2]))
    with pytest.raises(InputError):
        scoring.masked_softmax(torch.zeros(2, 3), torch.tensor([4, 2]))


def test_general_and_additive_scores_match_their_formulas_element_by_element():
    g = torch.Generator().manual_seed(2)
    Q, K = torch.randn(3, 4, generator=g), torch.randn(5, 6, generator=g)
    p = scoring.init_scoring_params(4, 6, hidden=7, seed=3)
    general = scoring.scores(Q, K, "general", p)
    additive = scoring.scores(Q, K, "additive", p)
    for i in range(3):
        for j in range(5):
            assert float(general[i, j]) == pytest.approx(float(Q[i] @ p.W @ K[j]), abs=1e-5)  # 000 eq. 46
            direct = p.w_v @ torch.tanh(p.W_q @ Q[i] + p.W_k @ K[j])  # 000 eq. 47
            assert float(additive[i, j]) == pytest.approx(float(direct), abs=1e-5)


def test_dot_and_scaled_dot_differ_by_sqrt_d_and_need_equal_widths():
    g = torch.Generator().manual_seed(4)
    Q, K = torch.randn(2, 9, generator=g), torch.randn(3, 9, generator=g)
    torch.testing.assert_close(scoring.scores(Q, K, "scaled_dot") * math.sqrt(9), scoring.scores(Q, K, "dot"))
    with pytest.raises(InputError, match="same width"):
        scoring.scores(Q, torch.randn(3, 2), "dot")
    with pytest.raises(ValueError, match="unknown scoring"):
        scoring.scores(Q, K, "cosine")


def test_single_query_form_equals_a_row_of_the_matrix_form():
    g = torch.Generator().manual_seed(5)
    Q, K, V = torch.randn(4, 3, generator=g), torch.randn(6, 3, generator=g), torch.randn(6, 2, generator=g)
    matrix = scoring.attention(Q, K, V, "dot").output  # 000 eq. 62
    rows = torch.stack([scoring.single_query_attention(q, K, V) for q in Q])  # 000 eq. 55 per query
    torch.testing.assert_close(rows, matrix)


def test_keys_and_values_must_pair_up():
    with pytest.raises(InputError, match="every key needs one value"):
        scoring.attention(torch.zeros(1, 2), torch.zeros(3, 2), torch.zeros(2, 2))
