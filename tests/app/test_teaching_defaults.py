"""Defaults that show the idea working: each page opened as a shared link with no parameters."""
from __future__ import annotations

import json

from tests.app.conftest import assert_clean, metric, open_page


def test_objectives_classifier_prefers_the_sentence_as_written_at_the_defaults():
    at = open_page("objectives")
    assert_clean(at)
    as_written = float(metric(at, "P(as written)").rstrip("%")) / 100
    at.selectbox(key="version").set_value("Words shuffled").run()
    assert_clean(at)
    shuffled = float(metric(at, "P(as written)").rstrip("%")) / 100
    assert as_written > 0.5 > shuffled, (as_written, shuffled)


def test_multi_head_shows_one_head_with_numbers_and_every_head_as_a_small_pattern():
    at = open_page("multi_head", C="12", H="6", T="6")
    assert_clean(at)
    specs = [s for s in (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
             if s["layout"].get("title", {}).get("text", "").startswith("head ")]
    assert [s["layout"]["title"]["text"] for s in specs] == ["head 1"] + [f"head {h}" for h in range(1, 7)]
    large, small = specs[0], specs[1:]
    assert large["data"][0].get("texttemplate") and large["layout"]["height"] >= 300
    assert all(not s["data"][0].get("texttemplate") for s in small)
    at.slider(key="head").set_value(5).run()
    assert_clean(at)
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"] == "head 5"
