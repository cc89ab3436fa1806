"""RoPE and sinusoidal pages: quantities constant in exact arithmetic are drawn as rounding, in units of ε."""
from __future__ import annotations

import json

import pytest

from engine.positions import rope
from tests.app.conftest import assert_clean, open_page


def charts(at) -> dict[str, dict]:
    """Each plotly chart's spec by its title."""
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    return {spec["layout"]["title"]["text"]: spec for spec in specs}


def caption(at, start: str) -> str:
    return next(c.value for c in at.caption if c.value.startswith(start))


def test_rope_draws_the_relative_property_as_rounding_and_the_bases_apart():
    at = open_page("rope")
    assert_clean(at)
    specs = charts(at)
    relative = specs["Score at offset 3 minus its exact value, across 256 positions"]
    assert "ε" in relative["layout"]["yaxis"]["title"]["text"]
    assert {trace["name"] for trace in relative["data"]} == {"float64 (ε = 2.2e-16)", "float32 (ε = 1.2e-07)"}
    for trace in relative["data"]:  # a few units of ε‖q‖‖k‖, not a score printed to 16 digits
        assert max(abs(y) for y in trace["y"]) < 10

    rotation = specs["Where pairs of q travel for positions 0..m"]["data"]
    dots, paths = rotation[:4], rotation[4:]
    assert [d["marker"]["color"] for d in dots] == [p["line"]["color"] for p in paths]

    decay = specs["RoFormer §3.4.3 bound on |q · k| against distance"]
    assert decay["layout"]["xaxis"]["type"] == "log" and max(decay["data"][0]["x"]) > 1e5
    distances, low = rope.banded_decay_bound(64, rope.BASES[0])
    gap = rope.compare_bases(distances, low, rope.banded_decay_bound(64, rope.BASES[1])[1])
    text = caption(at, "Each point is the bound's mean")
    assert f"{gap.widest_ratio:.2f}× base 10000's" in text
    assert f"r ≈ {gap.settled[1]:,.0f} against {gap.settled[0]:,.0f}" in text


@pytest.mark.parametrize("d", ["2", "128"])
def test_rope_captions_read_at_the_ends_of_d(d):
    at = open_page("rope", d=d)
    assert_clean(at)
    assert "ε‖q‖‖k‖" in caption(at, "Every cell is within")
    if d == "2":
        assert "bound is 1 at every distance" in caption(at, "With one pair")


def test_sinusoidal_draws_the_offset_property_as_float32_rounding():
    at = open_page("sinusoidal")
    assert_clean(at)
    deviation = charts(at)["… minus Σ cos(k ω_i): rounding only"]
    assert "ε" in deviation["layout"]["yaxis"]["title"]["text"]
    assert all(max(abs(y) for y in trace["y"]) < 1 for trace in deviation["data"])
    assert "ε (float32" in caption(at, "That is")
