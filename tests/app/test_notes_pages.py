"""The errata panels on the pages they concern and the page that gathers them, read back against
engine/errata.py; the Decoupled RoPE page's base switch."""
from __future__ import annotations

import pytest

from engine import errata
from engine.positions.rope import rope_frequencies
from tests.app.conftest import assert_clean, open_page, texts

FINDINGS = 10


def panels(at) -> dict[str, dict[str, tuple[str, str]]]:
    """Each errata table on the page, keyed by its first row's label: {row label: (first side, second side)}."""
    found = {}
    for frame in at.dataframe:
        table = frame.value
        if list(table.columns)[0] == "" and len(table.columns) == 3:
            rows = {row[0]: (row[1], row[2]) for row in table.itertuples(index=False)}
            found[next(iter(rows))] = rows
    return found


def test_the_gathered_page_shows_every_finding_with_the_engines_numbers_and_a_link():
    at = open_page("notes_errata")
    assert_clean(at)
    tables = panels(at)
    assert len(tables) == FINDINGS
    assert tables["q = (1, 0), θ = 30°"] == errata.rope_row_vector().rows
    assert tables["α_t1"] == errata.worked_example_002().rows
    assert tables["o_N"] == errata.online_rescaling().rows
    said = " ".join(texts(at))
    for slug in ("rope", "decoupled_rope", "objectives", "seq2seq_attention", "scoring_functions", "online_softmax"):
        assert f"]({slug})" in said, slug
    only_errors = open_page("notes_errata", show="errors")
    assert_clean(only_errors)
    assert "The notes disagree:" not in " ".join(texts(only_errors))
    # disagreements: RoPE's base and pairing, the additive bias, the query's state, GloVe's biases
    assert len(panels(only_errors)) == FINDINGS - 4


@pytest.mark.parametrize("slug, params, first_row", [
    ("rope", {}, "q = (1, 0), θ = 30°"),
    ("rope", {}, "θ_1 … θ_4"),
    ("rope", {}, "q·k, interleaved pairs"),
    ("decoupled_rope", {}, "numbers cached per token and layer (H = 4, d_c = 16, d_h^R = 8)"),
    ("objectives", {}, "classification objective"),
    ("seq2seq_attention", {"score": "dot"}, "step 4: the character weighted most"),
    ("seq2seq_attention", {}, "bias inside the tanh"),
    ("scoring_functions", {"score": "Dot"}, "α_t1"),
    ("online_softmax", {}, "o_N"),
    ("glove_training", {}, "J per nonzero X_ij, last epoch"),
])
def test_each_finding_is_shown_on_the_page_it_concerns_with_a_link_to_them_all(slug, params, first_row):
    at = open_page(slug, **params)
    assert_clean(at)
    assert first_row in panels(at), list(panels(at))
    assert "](notes_errata)" in " ".join(texts(at))


def test_decoupled_rope_takes_the_base_as_the_rope_page_does():
    for base in (10000.0, 100000.0):
        at = open_page("decoupled_rope", base=str(base))
        assert_clean(at)
        turns = ", ".join(f"{float(f):.3g}" for f in rope_frequencies(8, base))
        assert any(f"base {base:g}" in t and turns in t for t in texts(at)), texts(at)
        assert at.number_input(key="base").value == base
