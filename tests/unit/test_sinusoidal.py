import pytest
import torch

from engine.errors import InputError
from engine.positions.sinusoidal import sinusoidal_encoding


def test_worked_example_of_002_section_2_3_2():
    pe = sinusoidal_encoding(2, 4)
    assert pe[0].tolist() == pytest.approx([0, 1, 0, 1], abs=1e-7)
    assert pe[1].tolist() == pytest.approx([0.84147, 0.54030, 0.00999983, 0.99995], abs=5e-6)


def test_matches_the_formula_entry_by_entry():
    pe = sinusoidal_encoding(50, 16, base=100.0)
    for pos in (0, 7, 49):
        for i in range(8):
            angle = pos / 100.0 ** (2 * i / 16)
            assert float(pe[pos, 2 * i]) == pytest.approx(torch.sin(torch.tensor(angle, dtype=torch.float64)).item(), abs=1e-6)
            assert float(pe[pos, 2 * i + 1]) == pytest.approx(torch.cos(torch.tensor(angle, dtype=torch.float64)).item(), abs=1e-6)


def test_rejects_odd_width_and_bad_base():
    with pytest.raises(InputError):
        sinusoidal_encoding(3, 5)
    with pytest.raises(InputError):
        sinusoidal_encoding(3, 4, base=0)


def test_shift_is_one_fixed_rotation_for_every_position():
    from engine.positions.sinusoidal import shift_matrix
    pe = sinusoidal_encoding(64, 16).double()
    for k in (1, 5, 17):
        M = shift_matrix(k, 16)
        torch.testing.assert_close(pe[:-k] @ M.T, pe[k:], atol=1e-6, rtol=0)  # float32 table
        torch.testing.assert_close(M @ M.T, torch.eye(16, dtype=torch.float64))


def test_dot_product_depends_on_offset_alone():
    from engine.positions.sinusoidal import dot_products_by_offset, sinusoidal_frequencies
    dots = dot_products_by_offset(30, 10, 16)
    closed = torch.stack([torch.cos(k * sinusoidal_frequencies(16)).sum() for k in range(11)])
    torch.testing.assert_close(dots, closed.expand(30, 11), atol=1e-5, rtol=0)


def test_similarity_closed_form_and_deviation_in_float32_units():
    import math

    from engine.positions.sinusoidal import TABLE_EPS, similarity_by_offset, similarity_deviation
    closed = similarity_by_offset(5, 8, base=100.0)
    assert float(closed[3]) == pytest.approx(sum(math.cos(3 / 100.0 ** (2 * i / 8)) for i in range(4)), abs=1e-14)
    deviation = similarity_deviation(100, 64, 64)
    # units of float32 eps · d_model/2: seen up to 0.17; rounding of the float32 table, not float64's
    assert float(deviation.abs().max()) < 1
    assert float(deviation.abs().max()) * TABLE_EPS * 32 > 1e-10
