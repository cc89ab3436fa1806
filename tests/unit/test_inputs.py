import numpy as np
import pytest

from engine.errors import InputError
from ui.inputs import format_matrix, parse_matrix, parse_order, parse_tokens


def test_matrix_round_trip():
    M = np.array([[0.5, -1.0], [2.0, 3.25]])
    np.testing.assert_array_equal(parse_matrix(format_matrix(M), "M"), M)
    np.testing.assert_array_equal(parse_matrix("1, 2\n3 4", "M"), [[1, 2], [3, 4]])


@pytest.mark.parametrize("text,message", [
    ("", "empty"), ("  ;  ", "empty"), ("1 2; 3", "different lengths"), ("1 x", "not a list of numbers"),
    ("1 nan", "finite"), ("inf 1", "finite"), (";".join(["1"] * 13), "at most 12"),
])
def test_matrix_errors_say_what_is_wrong(text, message):
    with pytest.raises(InputError, match=message):
        parse_matrix(text, "Q")


def test_tokens_and_orders():
    assert parse_tokens("  I feel   good ") == ["I", "feel", "good"]
    with pytest.raises(InputError, match="empty"):
        parse_tokens("   ")
    with pytest.raises(InputError, match="at most 16"):
        parse_tokens("a " * 17)
    assert parse_order("2, 0 1", 3) == [2, 0, 1]
    with pytest.raises(InputError, match="3 tokens"):
        parse_order("1 0", 3)
    with pytest.raises(InputError, match="whole numbers"):
        parse_order("a b c", 3)
