"""ui/margins.py against what plotly.js drew in chromium (Streamlit 1.67, the page's Source Sans): the labels' boxes,
the colour bars' ticks and the margins automargin asked for, read from the app's own heatmaps at 13 and 20 px."""
import numpy as np
import pytest

from ui import margins

# (label, font px): the width of plotly's drawn box, px
DRAWN_LABELS = {
    ("mat", 13): 22.15, ("the", 13): 17.92, ("−0.5", 13): 22.62, ("t6", 13): 10.86, ("0.2", 13): 16.17,
    ("10 ■", 13): 23.33, ("q1", 13): 13.69, ("0.14", 13): 23.16, ("step 7", 13): 32.14, ("good", 13): 27.69,
    ("K, V 2", 13): 29.12, ("mat", 20): 33.39, ("the", 20): 27.64, ("−0.5", 20): 34.81, ("t6", 20): 16.76,
    ("0.2", 20): 24.92, ("10 ■", 20): 35.89, ("q1", 20): 21.05, ("0.14", 20): 34.86, ("step 7", 20): 49.49,
    ("good", 20): 42.59, ("K, V 2", 20): 44.86,
}


@pytest.mark.parametrize(("label", "font_px"), DRAWN_LABELS)
def test_a_label_is_as_wide_as_plotly_draws_it(label, font_px):
    drawn = DRAWN_LABELS[label, font_px]
    assert drawn - 2.6 <= margins.label_px(label, font_px) <= drawn + 1.0


# (low, high, the bar's length in px) -> the ticks plotly wrote on the colour bar of the app's heatmap
DRAWN_TICKS = [
    ((0, 2, 213.8), ["0", "0.5", "1", "1.5", "2"]),  # one-hot distances, 350 px high
    ((-1, 1, 213.8), ["−1", "−0.5", "0", "0.5", "1"]),
    ((0, 6.2, 213.8), ["0", "1", "2", "3", "4", "5", "6"]),
    ((0, 1, 199.8), ["0", "0.2", "0.4", "0.6", "0.8", "1"]),  # a head's weights, 336 px
    ((0, 1, 63.8), ["0", "0.5", "1"]),  # scoring functions, 200 px: 0.2 is exactly the rough step, so 0.5
    ((0, 1, 123.8), ["0", "0.5", "1"]),  # decoding lab's coverage, 260 px
    ((0, 1, 165.2), ["0", "0.2", "0.4", "0.6", "0.8", "1"]),  # the same in lecture mode, 325 px
    ((0, 0.19, 383.8), ["0", "0.02", "0.04", "0.06", "0.08", "0.1", "0.12", "0.14", "0.16", "0.18"]),
]


@pytest.mark.parametrize(("span", "drawn"), DRAWN_TICKS)
def test_a_colour_bar_gets_plotlys_ticks(span, drawn):
    assert margins.linear_tick_labels(*span) == drawn


def test_ticks_plotly_writes_with_suffixes_or_exponents_are_left_to_plotly():
    assert margins.linear_tick_labels(0, 20_000, 200) is None
    assert margins.linear_tick_labels(0, 1e-4, 200) is None
    assert margins.linear_tick_labels(1, 1, 200) is None
    assert margins.linear_tick_labels(0, float("nan"), 200) is None


def test_the_colour_range_is_the_data_s_where_not_given_and_centred_on_zmid():
    matrix = np.array([[np.nan, -0.5], [2.0, 0.25]])
    assert margins.colour_range(matrix, None, None, None) == (-0.5, 2.0)
    assert margins.colour_range(matrix, 0.0, None, None) == (0.0, 2.0)
    assert margins.colour_range(matrix, None, None, 0.0) == (-2.0, 2.0)


# font px, figure height, top margin, the rows' labels, the colour range (None: no bar) -> what plotly pushed:
# the y axis's left, the colour bar's right, the x axis's bottom
PUSHED = [
    (13, 350, 62, ["mat", "on", "sit", "cat", "the"], (0, 2), (58.75, 76.17, 54.2)),
    (13, 350, 62, ["mat", "on", "sit", "cat", "the"], (-1, 1), (58.75, 82.62, 54.2)),
    (13, 336, 62, ["t6", "t5", "t4", "t3", "t2", "t1"], (0, 1), (48.06, 76.7, 54.2)),
    (13, 220, 62, ["t6", "t5", "t4", "t3", "t2", "t1"], None, (48.06, 10, 54.2)),
    (13, 560, 62, ["10 ■", "9 3", "8 0", "0 2"], (0, 1), (60.53, 76.7, 54.2)),
    (13, 476, 62, [f"step {i}" for i in range(8)], (0, 1), (69.34, 76.7, 54.2)),
    (13, 266, 62, ["K, V 2", "K, V 1", "K, V 0"], None, (66.33, 10, 54.2)),
    (13, 200, 62, ["q1"], (0, 1), (50.89, 76.17, 54.2)),
    (20, 437, 70, ["mat", "on", "sit", "cat", "the"], (-1, 1), (75.96, 94.81, 69.8)),
    (20, 420, 70, ["t6", "t5", "t4", "t3", "t2", "t1"], (0, 1), (59.5, 84.92, 69.8)),
    (20, 600, 70, ["10 ■", "9 3", "8 0", "0 2"], (0, 1), (78.69, 84.92, 69.8)),
    (20, 595, 70, [f"step {i}" for i in range(8)], (0, 1), (92.24, 84.92, 69.8)),
    (20, 332, 70, ["good", "feel", "I"], None, (85.39, 10, 69.8)),
]


@pytest.mark.parametrize(("font_px", "height", "top", "rows", "colours", "pushed"), PUSHED)
def test_a_heatmap_gets_the_margins_plotly_would_push_to_and_a_few_px_more(font_px, height, top, rows, colours,
                                                                          pushed):
    given = margins.heatmap(font_px, height - top, rows, colours)
    for side, push in zip("lrb", pushed):
        # never short (plotly would draw the figure again), never wider than the slack, a px of the label's
        # estimate and the rounding
        assert push <= given[side] <= push + margins.SLACK_EM * font_px + 2, side


def test_a_numeric_row_axis_and_an_unknown_bar_are_left_to_plotly():
    given = margins.heatmap(13, 300, None, (0, 20_000))
    assert "l" not in given and "r" not in given and given["b"] >= 54.2


def test_a_numeric_axis_through_several_ranges_gets_room_for_the_widest_of_their_labels():
    # 0 to 1.05 over 200 px: 0, 0.2, ..., 1, whose widest label is three characters, as plotly's bar charts here
    # pushed 53.37 px for them at 13 px
    assert 53.37 <= margins.left_of_ranges(13, [(0, 0.5), (0, 1.05)], 200) <= 53.37 + 2.6 + 2
    wider = margins.left_of_ranges(13, [(0, 0.5), (-1.05, 1.05)], 200)  # "−0.5" is wider than "0.2"
    assert wider > margins.left_of_ranges(13, [(0, 0.5)], 200)
    assert margins.left_of_ranges(13, [(0, 1), (0, 50_000)], 200) is None
    assert margins.left_of_ranges(13, [], 200) is None


def test_a_stepped_figure_whose_frames_set_the_y_range_is_sent_with_room_for_every_frames_labels():
    from ui import figures

    bars = figures.bars(["a", "b"], {"c^t": [0.1, 0.2]}, title="t", y_title="weight")
    ranges = [[0, 0.5], [-2.1, 2.1], [0, 1.05]]
    stepped = figures.animate(bars, [[dict(y=[0.1, 0.2])]] * 3, ["0", "1", "2"], 0,
                              layouts=[{"yaxis": {"range": r}} for r in ranges])
    layout = stepped.to_dict()["layout"]
    length = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    assert layout["margin"]["l"] == margins.left_of_ranges(13, [tuple(r) for r in ranges], length)
    plain = figures.animate(bars, [[dict(y=[0.1, 0.2])]] * 3, ["0", "1", "2"], 0)
    assert "l" not in plain.to_dict()["layout"]["margin"] or plain.to_dict()["layout"]["margin"]["l"] == 10


# line charts of the app as plotly.js drew them, sent with margins of 10: (font px, height, top margin, x span where
# autorange fits x tight (plain lines) else None, y span, log x, log y, markers, a legend) -> the left, right and
# bottom margins plotly pushed to (its legend one row), and the y labels it wrote. A right margin pushed by the last
# x label is half its drawn box (19.39 px for "100" at 13 px) and the 12 px plotly pads each push with once the
# margins sent are 12 or more, as they then are
PUSHED_LINES = [
    ((13, 360, 62, (0, 100), (-12.94, -5.545), False, False, False, True), (57, 19.39 / 2 + 12, 84),
     ["−12", "−10", "−8", "−6"]),
    ((13, 360, 62, None, (-0.9658, 0.8931), False, False, True, True), (60, 10, 84), ["−1", "−0.5", "0", "0.5", "1"]),
    ((13, 300, 62, (0, 200), (0, 1), False, False, False, True), (53, 19.39 / 2 + 12, 84), ["0", "0.5", "1"]),
    ((13, 320, 62, None, (0.02172, 0.09765), False, True, True, True), (53, 10, 84), ["0.1"]),
    ((13, 360, 62, None, (0, 0.2333), False, False, True, True), (60, 10, 84),
     ["0", "0.05", "0.1", "0.15", "0.2", "0.25"]),
    ((13, 360, 62, None, (0, 1.0000001), False, False, True, False), (53, 10, 54),
     ["0", "0.2", "0.4", "0.6", "0.8", "1"]),
    ((13, 360, 62, None, (0.04900, 1.1023), True, True, True, True), (53, 10, 84), ["0.1", "1"]),
    ((13, 300, 62, (1, 2385), (1.5488, 3.8088), False, False, False, False), (53, 10, 54),
     ["1.5", "2", "2.5", "3", "3.5"]),
    ((13, 300, 62, (272, 287), (1088, 1148), False, False, False, False), (63, 10, 54), ["1100", "1120", "1140"]),
    ((13, 300, 62, None, (-0.08307, 0.08875), False, False, True, True), (66, 10, 84), ["−0.05", "0", "0.05", "0.1"]),
    ((13, 360, 62, None, (0.1572, 2056), True, True, True, True), (63, 10, 84), ["0.1", "1", "10", "100", "1000"]),
    ((20, 450, 70, None, (-0.9658, 0.8931), False, False, True, True), (78, 10, 109), ["−1", "−0.5", "0", "0.5", "1"]),
    ((20, 375, 70, (0, 200), (0, 1), False, False, False, True), (68, None, 109),
     ["0", "0.2", "0.4", "0.6", "0.8", "1"]),
    ((20, 450, 70, None, (0, 0.3447), False, False, True, False), (78, 10, 70),
     ["0", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.35"]),
    ((20, 375, 70, (272, 287), (1088, 1148), False, False, False, False), (83, 10, 70),
     ["1090", "1100", "1110", "1120", "1130", "1140", "1150"]),
    ((20, 450, 70, None, (0.1572, 2056), True, True, True, True), (83, 10, 109), ["0.1", "1", "10", "100", "1000"]),
]


@pytest.mark.parametrize(("chart", "pushed", "labels"), PUSHED_LINES)
def test_a_line_chart_gets_plotlys_y_labels_and_the_margins_it_would_push_to(chart, pushed, labels):
    font_px, height, top, x_span, y_span, log_x, log_y, marked, legend = chart
    marker_px = margins.MARKER_PAD_PX if marked else 0
    given = margins.lines(font_px, height - top, x_span or [], y_span, log_x, log_y, marker_px, legend)
    assert margins.autorange_labels(y_span, log_y, marker_px, height - top - given["b"]) == labels
    # never short; wider by at most the slack, the 2 px more plotly pads every push once a margin sent is 12 or
    # more, and the rounding (in lecture mode plotly drew no label at the right end before a wider margin was sent)
    for side, push in zip("lrb", pushed):
        if push is not None:
            assert push <= given.get(side, margins.BASE_PX) <= push + margins.SLACK_EM * font_px + 2 + 1, side


def test_what_plotly_labels_otherwise_is_left_to_it():
    assert margins.autorange_labels([7e5, 1e6], False, 0, 200) is None  # "1e+6"
    assert margins.autorange_labels([1e-5, 1], True, 0, 200) is None  # "10μ"
    assert margins.autorange_labels([3, 3], False, 0, 200) is None
    assert margins.end_label([0, 97], False) is None
    assert margins.end_label([0, 150], False) is None  # a tick at 150 for 5 ticks (step 50), not for 8 (20)
    assert margins.end_label([0, 30], False) == "30"
    assert margins.end_label([1, 16_384], True) is None
    assert margins.end_label([1, 1e6], True) == "1M"
    assert "r" not in margins.lines(13, 300, [], [0, 1], False, False, 0, False)
