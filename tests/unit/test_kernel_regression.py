import pytest
import torch

from engine.attention import kernel_regression as kr
from engine.errors import InputError


def data():
    return kr.make_regression_data(n_train=40, noise=0.3, seed=0)


def test_gaussian_weights_are_a_softmax_of_negative_squared_distance():
    d = data()
    h = 0.7
    fit = kr.nadaraya_watson(d.x_query, d.x_train, d.y_train, "gaussian", h)
    logits = -((d.x_query[:, None] - d.x_train[None, :]) ** 2) / (2 * h**2)
    torch.testing.assert_close(fit.weights, torch.softmax(logits, dim=1))
    torch.testing.assert_close(fit.predictions, torch.softmax(logits, dim=1) @ d.y_train)


def test_boxcar_estimate_is_the_mean_of_values_inside_the_window():
    d = data()
    h = 0.4
    fit = kr.nadaraya_watson(d.x_query, d.x_train, d.y_train, "boxcar", h)
    for q, estimate in zip(d.x_query.tolist(), fit.predictions.tolist()):
        inside = (d.x_train - q).abs() <= h
        if inside.any():
            assert estimate == pytest.approx(float(d.y_train[inside].mean()), abs=1e-5)
        else:
            assert estimate != estimate  # NaN: 0/0 where no key is inside


def test_epanechnikov_weights_by_hand():
    keys, values = torch.tensor([0.0, 0.5, 2.0]), torch.tensor([1.0, 3.0, 10.0])
    fit = kr.nadaraya_watson(torch.tensor([0.25]), keys, values, "epanechnikov", 1.0)
    raw = torch.tensor([1 - 0.25**2, 1 - 0.25**2, 0.0])  # max(0, 1 - u^2)
    torch.testing.assert_close(fit.weights[0], raw / raw.sum())
    assert float(fit.predictions[0]) == pytest.approx(2.0)


def test_limits_of_the_bandwidth():
    d = data()
    wide = kr.nadaraya_watson(d.x_query, d.x_train, d.y_train, "gaussian", 1e4)
    torch.testing.assert_close(wide.predictions, torch.full_like(wide.predictions, float(d.y_train.mean())),
                               atol=1e-4, rtol=0)
    narrow = kr.nadaraya_watson(d.x_train, d.x_train, d.y_train, "gaussian", 1e-3)
    torch.testing.assert_close(narrow.predictions, d.y_train, atol=1e-4, rtol=0)


def test_rows_sum_to_one_and_uncovered_queries_are_counted():
    d = data()
    fit = kr.nadaraya_watson(d.x_query, d.x_train, d.y_train, "boxcar", 0.02)
    sums = fit.weights.sum(dim=1)
    covered = ~torch.isnan(fit.predictions)
    torch.testing.assert_close(sums[covered], torch.ones(int(covered.sum())))
    assert fit.uncovered == int((~covered).sum()) > 0
    assert float(sums[~covered].abs().max()) == 0.0


def test_bad_kernel_and_bandwidth():
    with pytest.raises(InputError, match="positive"):
        kr.kernel("gaussian", torch.zeros(1), 0.0)
    with pytest.raises(ValueError, match="unknown kernel"):
        kr.kernel("cosine", torch.zeros(1), 1.0)


def test_bandwidth_sweep_finds_an_interior_optimum():
    errors = kr.bandwidth_sweep(kr.make_regression_data(100, 0.5, 1), torch.logspace(-1.3, 0.5, 15))["gaussian"]
    best = int(torch.argmin(errors))
    assert 0 < best < len(errors) - 1  # too small overfits the noise, too large flattens the curve
