"""Online softmax and online attention (000 §8.8) against torch.softmax, SDPA and hand-worked steps."""
import math

import pytest
import torch
import torch.nn.functional as F

from engine.efficiency.online_softmax import (
    naive_softmax,
    online_attention,
    online_softmax,
    prefix_softmax,
    three_pass_softmax,
)
from engine.errors import InputError


def test_hand_worked_steps_of_eq_130():
    # x = (1, 3, 2): m = 1, 3, 3; d_1 = 1, d_2 = 1·e^{1-3} + 1, d_3 = d_2 + e^{2-3}
    trace = online_softmax(torch.tensor([1.0, 3.0, 2.0]))
    assert trace.m.tolist() == [1.0, 3.0, 3.0]
    assert trace.d.tolist() == pytest.approx([1.0, math.exp(-2) + 1, math.exp(-2) + 1 + math.exp(-1)])
    three = three_pass_softmax(torch.tensor([1.0, 3.0, 2.0]))  # eq. 123 against m_N = 3 throughout
    assert three.d.tolist() == pytest.approx([math.exp(-2), math.exp(-2) + 1, math.exp(-2) + 1 + math.exp(-1)])
    assert trace.d[-1] == pytest.approx(three.d[-1])  # d'_N = d_N (below eq. 127)



@pytest.mark.parametrize("logits, settled", [([3, 1, 4, 1000, 5, 1004, 2, 998], 6), ([9, 1, 2], 1), ([1, 2, 3], 3),
                                             ([2, 5, 5, 1], 2)])
def test_online_and_three_pass_d_agree_exactly_from_the_step_the_maximum_is_reached(logits, settled):
    x = torch.tensor(logits, dtype=torch.float64)
    online, three = online_softmax(x), three_pass_softmax(x)
    assert online.first_step_at_maximum() == settled
    agree = torch.isclose(online.d, three.d, rtol=1e-12, atol=0).tolist()
    assert agree == [i + 1 >= settled for i in range(len(x))]
    # eq. 127 against eq. 126: d'_i = d_i e^{m_N - m_i} at every step (where e^{m_N - m_i} is finite)
    finite = online.m[-1] - online.m < 700
    torch.testing.assert_close(online.d[finite], (three.d * torch.exp(online.m[-1] - online.m))[finite])

@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", [1.0, 100.0, 1e4])
def test_online_and_three_pass_equal_torch_softmax_without_overflow(seed, scale):
    x = torch.randn(50, generator=torch.Generator().manual_seed(seed)) * scale
    reference = torch.softmax(x, dim=0)
    for trace in (online_softmax(x), three_pass_softmax(x)):
        assert torch.isfinite(trace.a).all() and torch.isfinite(trace.d).all()
        torch.testing.assert_close(trace.a, reference, atol=1e-6, rtol=1e-5)
        assert trace.m[-1] == x.max()


def test_naive_exp_overflows_where_the_maximum_saves_us():
    x = torch.tensor([1.0, 1000.0, 2.0])
    assert torch.isnan(naive_softmax(x)).any()
    assert torch.isfinite(online_softmax(x).a).all()


def test_prefix_softmax_is_the_softmax_of_the_first_steps():
    x = torch.tensor([0.5, -1.0, 4.0, 2.0, 7.0])
    trace = online_softmax(x)
    for step in range(1, 6):
        torch.testing.assert_close(prefix_softmax(trace, step), torch.softmax(x[:step], 0))
    with pytest.raises(InputError):
        prefix_softmax(trace, 6)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("magnitude", [1.0, 1e4])
def test_online_attention_equals_sdpa(seed, magnitude):
    g = torch.Generator().manual_seed(seed)
    q, K, V = torch.randn(8, generator=g) * magnitude, torch.randn(30, 8, generator=g), torch.randn(30, 3, generator=g)
    trace = online_attention(q, K, V)
    reference = F.scaled_dot_product_attention(q[None], K, V)[0]
    assert torch.isfinite(trace.o).all()
    torch.testing.assert_close(trace.o[-1], reference, atol=1e-5, rtol=1e-5)
    # every o_i is the attention over the first i keys (eq. 135's o'_i)
    for i in (1, 7, 19):
        torch.testing.assert_close(trace.o[i - 1], F.scaled_dot_product_attention(q[None], K[:i], V[:i])[0],
                                   atol=1e-5, rtol=1e-5)


def test_the_printed_rescaling_is_right_only_while_the_maximum_stays():
    V = torch.randn(4, 2, generator=torch.Generator().manual_seed(0))
    one = torch.ones(1)
    falling = torch.tensor([[5.0], [1.0], [0.0], [-2.0]])  # the first score is the maximum: m never moves
    exact = torch.softmax(falling[:, 0], 0) @ V
    torch.testing.assert_close(online_attention(one, falling, V, scale=1.0, as_printed=True).o[-1], exact)
    rising = torch.tensor([[0.0], [1.0], [5.0], [-2.0]])
    printed = online_attention(one, rising, V, scale=1.0, as_printed=True).o[-1]
    corrected = online_attention(one, rising, V, scale=1.0).o[-1]
    torch.testing.assert_close(corrected, torch.softmax(rising[:, 0], 0) @ V)
    assert (printed - corrected).abs().max() > 1.0


@pytest.mark.parametrize("bad", [torch.tensor([]), torch.ones(2, 2)])
def test_bad_logits_are_refused(bad):
    with pytest.raises(InputError):
        online_softmax(bad)
    with pytest.raises(ValueError):  # shapes come from the page, not the user: a bug, not an InputError
        online_attention(torch.ones(2), torch.ones(3, 3), torch.ones(3, 1))
