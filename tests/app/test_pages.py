"""Every page through the navigation; numbers read back from the page (controls: test_controls.py)."""
from __future__ import annotations

import json
import math
import re

import pytest

from engine.attention import kernel_regression as kr
from engine.positions import decoupled, sinusoidal
from tests.app.conftest import assert_clean, compiles, count_calls, open_page
from tests.unit.test_palettes import assert_not_by_colour_alone
from ui.catalog import PAGES, SOURCE_CODES

SLUGS = [p.slug for p in PAGES]


def test_home_links_every_built_page():
    at = open_page()
    assert_clean(at)
    linked = {link.proto.page for link in at.get("page_link")}
    assert linked == set(SLUGS)


@pytest.mark.parametrize("slug", SLUGS)
def test_page_renders_with_its_header(slug):
    at = open_page(slug)
    assert_clean(at)
    info = next(p for p in PAGES if p.slug == slug)
    assert at.title[0].value == info.title
    # the citation as the catalog writes it, in small text, each note's number a link to the Sources page
    citation = next(m.value for m in at.markdown if m.value.startswith(":small[Follows "))
    assert re.sub(r"\[([^][]+)\]\(sources\)", r"\1", citation) == f":small[Follows {info.follows}]"
    assert re.findall(r"\[([^][]+)\]\(sources\)", citation) == SOURCE_CODES.findall(info.follows)
    charts = at.get("plotly_chart")
    assert len(charts) > 0
    for chart in charts:  # every figure the page draws at its defaults, read by colour-blind eyes too
        assert_not_by_colour_alone(json.loads(chart.proto.spec))
    with compiles() as compiled:  # a warm run, as most of a class's: no parse, no compile (conftest says why)
        at.run()
    assert_clean(at)
    assert compiled == []


def test_lecture_mode_is_a_url_parameter_on_every_page():
    at = open_page("scaling", lecture="True")
    assert at.sidebar.toggle(key="lecture").value is True
    assert_clean(at)


def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def test_kernel_regression_error_matches_the_engine():
    at = open_page("kernel_regression", kernel="Epanechnikov", h="0.8", n="60", noise="0.3", seed="4")
    data = kr.make_regression_data(60, 0.3, 4)
    fit = kr.nadaraya_watson(data.x_query, data.x_train, data.y_train, "epanechnikov", 0.8)
    assert float(metric(at, "Mean squared error")) == pytest.approx(float(((fit.predictions - data.y_true) ** 2).mean()),
                                                                    abs=1e-4)


def test_narrow_boxcar_says_where_the_curve_has_gaps():
    at = open_page("kernel_regression", kernel="Boxcar", h="0.05", n="5")
    assert_clean(at)
    assert int(metric(at, "Queries with no key")) > 0
    assert "gaps" in at.warning[0].value


def test_scoring_page_reproduces_the_worked_example():
    at = open_page("scoring_functions", score="Dot")
    table = at.dataframe[1].value  # the erratum panel, after the output O
    assert [float(x) for x in table["printed in 002"]] == [0.3374, 0.2501, 0.4125, 0.7499, 0.6626]
    assert [float(x) for x in table["computed"]] == [0.3376, 0.2501, 0.4123, 0.7499, 0.6624]


def test_scoring_page_explains_bad_typed_input_and_keeps_working():
    at = open_page("scoring_functions", inputs="Typed", score="Dot")
    at.text_area(key="Q").set_value("1 2 3").run()
    assert_clean(at)
    assert "same width" in at.warning[0].value
    at.selectbox(key="score").set_value("Additive").run()  # additive accepts different widths
    assert_clean(at)
    assert not at.warning
    at.text_area(key="K").set_value("1 nan").run()
    assert "finite" in at.warning[0].value
    at.text_area(key="K").set_value("").run()
    assert "empty" in at.warning[0].value
    assert at.title[0].value == "Scoring functions"


def test_scoring_page_masks_padding_and_refuses_to_mask_everything():
    at = open_page("scoring_functions", pad="2")
    assert_clean(at)
    at.slider(key="pad").set_value(3).run()
    assert "leaves none" in at.warning[0].value


def test_scaling_page_measures_sqrt_d_k():
    at = open_page("scaling", maxlog2="8", draws="1000", m="32")
    assert float(metric(at, "Raw logit spread")) == pytest.approx(math.sqrt(256), rel=0.05)
    assert float(metric(at, "Scaled logit spread")) == pytest.approx(1.0, rel=0.05)


def test_multi_head_checks_and_bad_head_count():
    at = open_page("multi_head", B="2", T="5", C="12", H="3", causal="False")
    assert_clean(at)
    assert float(metric(at, "max |batched")) < 1e-5
    assert float(metric(at, "max |matrix form")) < 1e-5
    shapes = at.dataframe[0].value["shape"].tolist()
    assert shapes[0] == "(2, 5, 12)" and "(2, 3, 5, 4)" in shapes
    at.slider(key="H").set_value(5).run()
    assert_clean(at)
    assert "choose one of 1, 2, 3, 4, 6, 12" in at.warning[0].value


def test_moving_the_head_shown_on_multi_head_does_not_run_the_layer_again(monkeypatch):
    """Every run computed the layer's forward and both checks again, though the Head shown slider only picks a
    figure (issue 47): a setting is computed once per server now."""
    from engine.attention import multihead
    forwards = count_calls(monkeypatch, multihead, "multi_head_steps")
    sessions = [open_page("multi_head", T="7", H="2", head=head) for head in ("1", "2")]
    for at in sessions:
        assert_clean(at)
    assert metric(sessions[0], "max |batched") == metric(sessions[1], "max |batched")
    assert len(forwards) <= 1


def test_permutation_holds_without_positions_and_breaks_with_them():
    at = open_page("permutation", text="the cat sat on the mat", order="Shuffled", seed="3")
    assert float(metric(at, "max |A′")) < 1e-6
    for encoding in ("Sinusoidal, added to X (002 §2.3.2)", "RoPE, rotating q and k (002 §2.3.3)"):
        at.selectbox(key="pos").set_value(encoding).run()
        assert float(metric(at, "max |A′")) > 1e-3
    at.text_input(key="text").set_value("   ").run()
    assert "empty" in at.warning[0].value
    assert_clean(at)


def test_permutation_typed_order_is_validated():
    at = open_page("permutation", order="Typed")
    at.text_input(key="perm").set_value("0 0 1").run()
    assert "not a permutation" in at.warning[0].value
    at.text_input(key="perm").set_value("2 0 1").run()
    assert not at.warning and float(metric(at, "max |A′")) < 1e-6


def test_sinusoidal_page_reproduces_002s_example_and_offsets():
    at = open_page("sinusoidal")
    rows = at.dataframe[0].value["computed here (d_model = 4, base 10000)"].tolist()
    assert [float(x) for x in rows[0].split(", ")] == [0, 1, 0, 1]
    assert [round(float(x), 5) for x in rows[1].split(", ")] == [0.84147, 0.5403, 0.01, 0.99995]
    assert float(rows[1].split(", ")[2]) == pytest.approx(0.00999983, abs=1e-8)
    assert float(metric(at, "Largest difference between starting")) < 1e-5  # float32 table
    assert float(metric(at, "max |M_k PE(p)")) < 1e-5


def test_moving_the_offset_on_sinusoidal_does_not_compute_the_offsets_table_again(monkeypatch):
    """The similarities of every start and offset depend on the table alone, not on the offset k shown (issue 47)."""
    tables = count_calls(monkeypatch, sinusoidal, "offset_similarities")
    sessions = [open_page("sinusoidal", n="77", k=k) for k in ("3", "9")]
    for at in sessions:
        assert_clean(at)
    assert metric(sessions[0], "Largest difference between starting") == \
        metric(sessions[1], "Largest difference between starting")
    assert len(tables) <= 1


@pytest.mark.parametrize("base", ["0", "-5"])
def test_sinusoidal_page_refuses_a_bad_base(base):
    at = open_page("sinusoidal", base=base)
    assert_clean(at)
    assert "positive" in at.warning[0].value


def test_rope_page_numbers():
    at = open_page("rope", base="100000", pairing="Half-split (i, i+d/2): Llama", offset="7")
    assert_clean(at)
    assert float(metric(at, "Spread of the score")) < 1e-9  # float64
    assert float(metric(at, "|q̃_i · k̃_j − qᵀ M(i, j) k|")) < 1e-12
    assert float(metric(at, "… after permuting")) < 1e-12
    assert float(metric(at, "max |interleaved − half-split|")) > 0.01


def test_rope_page_explains_bad_dimension_base_and_precision():
    assert "even" in open_page("rope", d="7").warning[0].value
    assert "positive" in open_page("rope", base="0").warning[0].value
    at = open_page("rope", logpos="7.0")
    assert_clean(at)
    assert "float32 loses" in at.warning[0].value


@pytest.mark.parametrize("source", ["from c^KV (000 eq. 117)", "from h (DeepSeek-V2)"])
def test_decoupled_rope_absorbed_equals_explicit(source):
    at = open_page("decoupled_rope", kr=source, T="9")
    assert_clean(at)
    assert float(metric(at, "Output gap")) < 1e-10
    assert float(metric(at, "Weights gap")) < 1e-10
    assert float(metric(at, "Score error if RoPE")) > 1e-2


def test_a_second_student_on_decoupled_rope_gets_the_same_numbers_without_building_the_weights(monkeypatch):
    """A setting's weights and both forms of attention are built once per server (issue 47)."""
    builds = count_calls(monkeypatch, decoupled, "init_mla")
    sessions = [open_page("decoupled_rope", T="11", dc="37") for _ in range(2)]
    for at in sessions:
        assert_clean(at)
    assert [m.value for m in sessions[0].metric] == [m.value for m in sessions[1].metric]
    assert len(builds) <= 1
