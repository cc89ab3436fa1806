import pytest
import torch

from engine.attention.equivariance import check_equivariance, permutation_matrix, token_embeddings
from engine.attention.multihead import init_multihead
from engine.errors import InputError


def test_permutation_matrix_reorders_rows():
    X = torch.arange(6.0).view(3, 2)
    torch.testing.assert_close(permutation_matrix([2, 0, 1]) @ X, X[[2, 0, 1]])
    with pytest.raises(InputError, match="not a permutation"):
        permutation_matrix([0, 0, 1])


@pytest.mark.parametrize("order", [[2, 1, 0], [1, 2, 0], [0, 1, 2]])
def test_attention_is_equivariant_without_positions(order):
    X = token_embeddings("I feel good".split(), 8, seed=0)
    check = check_equivariance(X, init_multihead(8, 0), order)
    assert check.weights_error < 1e-6 and check.output_error < 1e-6  # float32 rounding only
    torch.testing.assert_close(check.A_permuted, check.P @ check.A @ check.P.T)


@pytest.mark.parametrize("encoding", ["sinusoidal", "rope"])
def test_positions_break_equivariance(encoding):
    tokens = "the cat sat on the mat".split()
    X = token_embeddings(tokens, 16, seed=0)
    check = check_equivariance(X, init_multihead(16, 0), [5, 4, 3, 2, 1, 0], encoding)
    assert check.weights_error > 1e-2


def test_unknown_encoding_is_refused():
    with pytest.raises(ValueError, match="unknown position encoding"):
        check_equivariance(torch.randn(3, 4), init_multihead(4, 0), [0, 1, 2], "learned")


def test_same_word_same_vector_in_every_process():
    X = token_embeddings(["the", "cat", "the"], 4, seed=3)
    torch.testing.assert_close(X[0], X[2])
    assert not torch.equal(X[0], X[1])
    # crc32("the") ^ 3 seeds torch's generator: pinned so a change of hashing is caught
    expected = torch.randn(4, generator=torch.Generator().manual_seed(0x3C456DE6 ^ 3))
    torch.testing.assert_close(X[0], expected)
