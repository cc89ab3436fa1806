"""The decoding lab, read back against the engine's search run here."""
from __future__ import annotations

from engine.decoding.models import Seq2SeqStepper
from engine.decoding.penalties import Scoring
from engine.decoding.ranking import ranked_hypotheses, winners
from engine.decoding.search import search
from engine.seq2seq.model import load_seq2seq
from engine.seq2seq.train import CHECKPOINTS
from tests.app.conftest import assert_clean, figures, open_page


def test_default_search_table_and_winners_match_the_engine():
    at = open_page("decoding_lab", W="3", T="12", alpha="0.6", beta="0.2")
    assert_clean(at)
    model = Seq2SeqStepper(load_seq2seq(CHECKPOINTS / "additive.pt")[0], "march 3rd, 2021 at 4 pm")
    tree = search(model, "beam", 3, 12, pruned_shown=6)
    found = ranked_hypotheses(tree, Scoring(0.6, 0.2, 0.0), model.source_length)
    table = at.dataframe[1].value
    assert len(table) == len(found)
    assert list(table["hypothesis"]) == ["".join(model.label(t) for t in h.tokens) for h in found]
    outputs = at.dataframe[0].value
    gnmt = winners(found)["gnmt"]
    assert outputs["output"].iloc[2] == "".join(model.label(t) for t in tree.tokens(gnmt))
    assert any(title.startswith(f"beam search: {len(tree.nodes):,} nodes") for title in figures(at))


def test_eq40_matrices_show_minus_infinity_and_zero():
    at = open_page("decoding_lab")
    titles = list(figures(at))
    assert any(t.startswith("minimised cp: cp = −∞") for t in titles)
    assert any(t.startswith("maximised cp: cp = 0.000") for t in titles)


def test_without_penalties_every_rule_outputs_the_same():
    at = open_page("decoding_lab", alpha="0.0", beta="0.0", gamma="0.0")
    assert_clean(at)
    assert at.dataframe[0].value["output"].nunique() == 1


def test_bad_settings_get_messages():
    for params, message in [({"W": "0"}, "at least 1"), ({"T": "0"}, "maximum length"),
                            ({"method": "exhaustive", "T": "12"}, "would expand"), ({"text": ""}, "empty")]:
        at = open_page("decoding_lab", **params)
        assert_clean(at)
        assert message in at.warning[0].value, (params, [w.value for w in at.warning])


def test_small_exhaustive_search_and_the_language_model():
    at = open_page("decoding_lab", method="exhaustive", T="3", model="dot")
    assert_clean(at)
    model = Seq2SeqStepper(load_seq2seq(CHECKPOINTS / "dot.pt")[0], "march 3rd, 2021 at 4 pm")
    tree = search(model, "exhaustive", 0, 3)
    assert len(tree.nodes) > 15 ** 2  # every prefix expanded, not a beam
    assert any(t.startswith(f"exhaustive search: {len(tree.nodes):,} nodes") for t in figures(at))
    lm = open_page("decoding_lab", model="lm", text="The government", W="2", T="8")
    assert_clean(lm)
    assert any("no attention matrix" in i.value for i in lm.info)
