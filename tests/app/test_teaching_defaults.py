"""Defaults that show the idea working: each page opened as a shared link with no parameters."""
from __future__ import annotations

from tests.app.conftest import assert_clean, metric, open_page


def test_objectives_classifier_prefers_the_sentence_as_written_at_the_defaults():
    at = open_page("objectives")
    assert_clean(at)
    as_written = float(metric(at, "P(as written)").rstrip("%")) / 100
    at.selectbox(key="version").set_value("Words shuffled").run()
    assert_clean(at)
    shuffled = float(metric(at, "P(as written)").rstrip("%")) / 100
    assert as_written > 0.5 > shuffled, (as_written, shuffled)
