"""Not by colour alone (issue 30, item 4): the series of every figure stay apart for people with colour-vision
deficiencies, colour scales keep their order, and colours hold WCAG's contrast on white.

Colour blindness is simulated with colorspacious (Machado, Oliveira and Fernandes 2009 at severity 100, which is
dichromacy: deuteranopia, protanopia, tritanopia); colour differences are CIEDE2000, computed by coloraide.
tests/app/test_pages.py runs assert_not_by_colour_alone on every figure every page draws at its defaults."""
from __future__ import annotations

import functools
import itertools
import math
from typing import NamedTuple

import numpy as np
import plotly.express as px
import plotly.io as pio
import pytest
import torch
from coloraide import Color
from colorspacious import cspace_convert

from engine.efficiency.flash import tile_kind, tiled_example
from engine.efficiency.online_softmax import online_softmax
from ui import efficiency, figures, palette, projector

# The least CIEDE2000 difference between two series of one figure, with normal colour vision and under each
# simulated dichromacy. A ΔE00 of 1 is about the least difference seen between large patches side by side; thin
# lines and small markers, matched to a legend, need an order of magnitude more. Okabe and Ito's palette, made for
# colour-blind readers, keeps 10.9 between its closest pair (orange and reddish purple under tritanopia): 10 asks
# for what it gives. plotly's default palette has 0.7 (its blue and purple under protanopia).
SMALLEST_DE00 = 10.0
PALETTE_DE00 = 12.0  # what ui/palette.py states its own colours keep
DEFICIENCIES = ("deuteranomaly", "protanomaly", "tritanomaly")  # colorspacious' names; severity 100 makes them -opias
GRAPHIC_CONTRAST = 3.0  # WCAG 1.4.11: graphical objects against their background
TEXT_CONTRAST = 4.5  # WCAG 1.4.3: text of normal size
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000")
HEATMAP_TEXT = ("#ffffff", "#444444")  # what plotly.js writes cell text in (Color.contrast): its background or line
ALLOWED_SCALES = {name: [[float(stop), colour] for stop, colour in figures.HEATMAP_SCALE.validate_coerce(name)]
                  for name in (palette.SEQUENTIAL, *palette.DIVERGING)}


def simulated(rgb: np.ndarray, deficiency: str | None) -> np.ndarray:
    """(..., 3) sRGB in [0, 1] as someone with the deficiency sees it (None: no deficiency), clipped to sRGB."""
    if deficiency is None:
        return rgb
    return np.clip(cspace_convert(rgb, {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}, "sRGB1"), 0, 1)


@functools.lru_cache(maxsize=None)
def seen(colour: str, deficiency: str | None) -> Color:
    """A colour string as someone with the deficiency sees it."""
    return Color("srgb", simulated(np.asarray(Color(colour).convert("srgb").coords()), deficiency).tolist())


def closest_pair(colours) -> tuple[float, str, str, str]:
    """The least ΔE00 between two of the distinct colours, over normal vision and each deficiency, and where."""
    return min((seen(a, d).delta_e(seen(b, d), method="2000"), a, b, d or "normal vision")
               for a, b in itertools.combinations(sorted(set(colours)), 2) for d in (None, *DEFICIENCIES))


def contrast(colour: str, background: str = "white") -> float:
    return Color(colour).contrast(background, method="wcag21")


class Series(NamedTuple):
    name: str
    colour: str  # "#rrggbb", its opacity left out
    kind: tuple[str, str | None]  # trace type and mode: bars, lines, markers
    dash: str
    symbol: str
    hatch: str

    @property
    def shape(self) -> tuple:
        """What tells it apart besides colour."""
        return self.kind, self.dash, self.symbol, self.hatch


def _hex(colour: str) -> str:
    return Color(colour).convert("srgb").set("alpha", 1).to_string(hex=True)


def series(spec: dict) -> list[Series]:
    """The series of a figure's JSON, each in the colour plotly draws it: its own (line, else marker), else the
    colorway's next, counting every trace not hidden, coloured or not (plotly.js, plots.supplyDataDefaults).
    Traces coloured by value through a colour scale are colour_scales' to check."""
    layout = spec["layout"]
    colorway = layout.get("colorway") or layout["template"]["layout"]["colorway"]
    found = []
    for index, trace in enumerate(t for t in spec["data"] if t.get("visible") is not False):
        line, marker = trace.get("line") or {}, trace.get("marker") or {}
        own = line.get("color") or marker.get("color")
        if trace.get("type") == "heatmap" or (own is not None and not isinstance(own, str)):
            continue
        found.append(Series(trace.get("name", ""), _hex(own or colorway[index % len(colorway)]),
                            (trace.get("type", "scatter"), trace.get("mode")), line.get("dash") or "solid",
                            marker.get("symbol") or "circle", (marker.get("pattern") or {}).get("shape") or ""))
    return found


def is_reference(s: Series) -> bool:
    """A dashed grey line: a bound or an exact value, told from the series by dash and greyness."""
    r, g, b = (s.colour[i:i + 2] for i in (1, 3, 5))
    return r == g == b and s.dash != "solid"


def colour_scales(spec: dict) -> list[list]:
    """The colour scale of each trace coloured by value (a heatmap's, or its markers')."""
    scales = [trace.get("colorscale") or (trace.get("marker") or {}).get("colorscale") for trace in spec["data"]]
    return [[[float(stop), colour] for stop, colour in figures.HEATMAP_SCALE.validate_coerce(scale)]
            for scale in scales if scale is not None]


def font_colours(node) -> list[str]:
    """Every text colour a figure's JSON sets, at any depth (title, legend, annotations, traces' text)."""
    if isinstance(node, list):
        return [colour for item in node for colour in font_colours(item)]
    if not isinstance(node, dict):
        return []
    own = [value["color"] for key, value in node.items()
           if key.endswith("font") and isinstance(value, dict) and isinstance(value.get("color"), str)]
    return own + [colour for key, value in node.items() if key != "template" for colour in font_colours(value)]


def assert_not_by_colour_alone(spec: dict) -> None:
    """Series apart by colour for every kind of colour vision, or by shape where they share a colour;
    references apart by dash; colour scales perceptually ordered (palette's) or made of colours apart; text
    readable on white; cell text ringed so that it reads on any cell."""
    title = (spec["layout"].get("title") or {}).get("text") or "untitled figure"
    drawn = series(spec)
    references = [s for s in drawn if is_reference(s)]
    coloured = [s for s in drawn if not is_reference(s)]
    if len({s.colour for s in coloured}) > 1:
        difference, a, b, vision = closest_pair(s.colour for s in coloured)
        assert difference >= SMALLEST_DE00, f"{title}: {a} and {b} {difference:.1f} ΔE00 apart ({vision})"
    for a, b in itertools.combinations(coloured, 2):
        assert a.colour != b.colour or a.shape != b.shape, f"{title}: {a.name} and {b.name} differ by nothing"
    dashes = [s.dash for s in references]
    assert len(set(dashes)) == len(dashes), f"{title}: references {[s.name for s in references]} share a dash"
    for scale in colour_scales(spec):
        if scale not in ALLOWED_SCALES.values():  # states drawn in a few colours, one a stop each
            difference, a, b, vision = closest_pair(colour for _, colour in scale)
            assert difference >= SMALLEST_DE00, f"{title}: states {a}, {b} {difference:.1f} ΔE00 apart ({vision})"
    for colour in font_colours(spec):
        assert contrast(colour) >= TEXT_CONTRAST, f"{title}: text in {colour}"
    for trace in spec["data"]:
        if trace.get("type") == "heatmap" and trace.get("texttemplate"):
            assert trace["textfont"]["shadow"] == "auto", f"{title}: cell text without its ring"


# the palette itself ---------------------------------------------------------------------------------------------

def test_palette_colours_stay_apart_under_every_simulated_deficiency():
    difference, a, b, vision = closest_pair(palette.SERIES_COLOURS)
    assert difference >= PALETTE_DE00, (a, b, vision)


def test_the_threshold_passes_okabe_ito_and_fails_plotlys_default_palette():
    """The measure against the palettes it must tell apart: the one designed for colour-blind readers passes,
    plotly's default (what every figure drew before) does not."""
    assert closest_pair(OKABE_ITO[:-1])[0] >= SMALLEST_DE00
    difference, a, b, vision = closest_pair(px.colors.qualitative.Plotly)
    assert difference < SMALLEST_DE00 / 10, (a, b, vision)


@pytest.mark.parametrize("colour", [*palette.SERIES_COLOURS, palette.REFERENCE_GREY, *palette.REFERENCE_GREYS])
def test_every_series_and_reference_colour_holds_3_to_1_on_white(colour):
    assert contrast(colour) >= GRAPHIC_CONTRAST


def test_okabe_itos_own_light_colours_are_why_the_palette_is_darkened():
    """Orange, sky blue, yellow: under 3:1 as Okabe and Ito give them; their reddish purple just passes."""
    short = [c for c in OKABE_ITO if contrast(c) < GRAPHIC_CONTRAST]
    assert short == ["#E69F00", "#56B4E9", "#F0E442"]


def test_every_figure_uses_the_palette_by_default():
    """A figure made without colours, by hand or by a builder, takes them from the template set as default."""
    assert pio.templates.default == palette.TEMPLATE
    assert pio.templates[palette.TEMPLATE].layout.colorway == palette.SERIES_COLOURS
    assert contrast(pio.templates[palette.TEMPLATE].layout.font.color) >= TEXT_CONTRAST


def test_heatmap_cell_text_and_its_ring_contrast():
    white, line = HEATMAP_TEXT
    assert contrast(white, line) >= TEXT_CONTRAST


# colour scales --------------------------------------------------------------------------------------------------

def uniform_space_along(name: str, deficiency: str | None) -> np.ndarray:
    """(65, 3) CAM02-UCS J', a', b' at 65 points along a named scale as plotly.js draws it (its stops, blended in
    RGB), as someone with the deficiency sees it."""
    stops = [list(stop) for stop in figures.HEATMAP_SCALE.validate_coerce(name)]
    rgb = np.array(px.colors.sample_colorscale(stops, np.linspace(0, 1, 65), colortype="tuple"))  # (65, 3) in [0, 1]
    return cspace_convert(simulated(rgb, deficiency), "sRGB1", "CAM02-UCS")


def unevenness(name: str, deficiency: str | None) -> float:
    """The largest step along a scale over its smallest, in CAM02-UCS: 1 is perfectly even."""
    steps = np.linalg.norm(np.diff(uniform_space_along(name, deficiency), axis=0), axis=1)
    return float(steps.max() / steps.min())


@pytest.mark.parametrize("deficiency", [None, *DEFICIENCIES])
def test_sequential_scale_keeps_its_order_and_even_steps_for_every_kind_of_colour_vision(deficiency):
    """Lightness rises all along it, so larger values read as lighter whichever hues are lost; and its steps stay
    within the factor 3 of each other that ui/palette.py states."""
    assert np.all(np.diff(uniform_space_along(palette.SEQUENTIAL, deficiency)[:, 0]) > 0)
    assert unevenness(palette.SEQUENTIAL, deficiency) < 3


def test_viridis_steps_are_the_less_even_under_deficiencies():
    """Why cividis, not viridis (ui/palette.py)."""
    assert min(unevenness("Viridis", d) for d in DEFICIENCIES) > 3


@pytest.mark.parametrize("name", palette.DIVERGING)
def test_diverging_scale_keeps_its_two_sides_and_middle_apart(name):
    stops = px.colors.sample_colorscale(name, [0.0, 0.5, 1.0])
    assert closest_pair(_hex(c) for c in stops)[0] >= SMALLEST_DE00


def test_heatmap_defaults_to_the_sequential_scale_and_rings_its_cell_text():
    fig = figures.heatmap.__wrapped__(np.eye(3), list("abc"), list("xyz"))
    trace = fig.to_dict()["data"][0]
    assert [[float(s), c] for s, c in trace["colorscale"]] == ALLOWED_SCALES[palette.SEQUENTIAL]
    assert trace["textfont"]["shadow"] == "auto"
    signed = figures.heatmap.__wrapped__(np.eye(3) - 0.5, list("abc"), list("xyz"), zmin=-1, zmid=0,
                                         colorscale="RdBu_r").to_dict()
    assert_not_by_colour_alone(signed)


def test_tree_colours_its_nodes_on_the_sequential_scale():
    nodes = [figures.TreeNode("0", None, "root", "root", 0.0), figures.TreeNode("1", "0", "a", "a", -1.0),
             figures.TreeNode("2", "0", "b", "b", -2.0, faded=True)]
    spec = figures.tree.__wrapped__(nodes).to_dict()
    assert colour_scales(spec) == [ALLOWED_SCALES[palette.SEQUENTIAL]]
    assert_not_by_colour_alone(spec)


# the shared builders, with more series than the palette has colours ---------------------------------------------

X = list(range(30))
MANY = {f"s{k}": [float(k + x % 3) for x in X] for k in range(9)}  # 9 curves: three repeat a colour
REFERENCES = {"bound": [0.0] * 30, "exact": [1.0] * 30, "limit": [2.0] * 30}


@pytest.mark.parametrize("markers", [True, False])
def test_lines_give_every_curve_its_own_symbol_and_references_their_own_dash(markers):
    spec = figures.lines.__wrapped__(X, MANY | REFERENCES, dashed=list(REFERENCES), markers=markers).to_dict()
    assert_not_by_colour_alone(spec)
    drawn = series(spec)
    curves = [s for s in drawn if not is_reference(s)]
    assert [s.name for s in curves] == list(MANY) and len([s for s in drawn if is_reference(s)]) == 3
    symbols = [s.symbol for s in curves]  # crossing curves need a second channel besides colour
    assert len(set(symbols[:len(palette.SYMBOLS)])) == len(palette.SYMBOLS)
    assert len({(s.colour, s.symbol) for s in curves}) == len(curves)
    for trace in spec["data"][:len(MANY)]:  # without markers, a dozen on each curve: enough to tell them apart
        assert "markers" in trace["mode"] and trace["marker"].get("maxdisplayed") == (
            None if markers else figures.SPARSE_MARKERS)


def test_a_single_curve_without_markers_stays_a_plain_line():
    spec = figures.lines.__wrapped__(X, {"loss": MANY["s0"]}, markers=False).to_dict()
    assert spec["data"][0]["mode"] == "lines"


@pytest.mark.parametrize("paired", [False, True])
def test_points_and_curves_apart_by_symbol_and_dash(paired):
    points = {f"p{k}": (X, MANY[f"s{k}"]) for k in range(4)}
    curves = {f"c{k}": (X, MANY[f"s{k}"]) for k in range(4)}
    spec = figures.points_and_curves.__wrapped__(points, curves, paired=paired).to_dict()
    assert_not_by_colour_alone(spec)
    drawn = series(spec)
    assert len({s.symbol for s in drawn[:4]}) == 4 and len({s.dash for s in drawn[4:]}) == 4
    if paired:
        assert [s.colour for s in drawn[:4]] == [s.colour for s in drawn[4:]]
    else:  # fill translucent where points pile up, outline whole
        assert all(t["marker"]["line"]["color"] == t["marker"]["color"][:7] for t in spec["data"][:4])


@pytest.mark.parametrize("n", [3, 9])
def test_bars_take_the_palette_and_hatch_series_past_it(n):
    spec = figures.bars.__wrapped__(["a", "b"], {f"s{k}": [1.0, 2.0] for k in range(n)}).to_dict()
    assert_not_by_colour_alone(spec)
    assert [s.colour for s in series(spec)[:3]] == [c.lower() for c in palette.SERIES_COLOURS[:3]]


# the figures made by hand ---------------------------------------------------------------------------------------

def test_projection_neighbours_and_arrows_stay_apart_from_the_words():
    coords = np.random.default_rng(0).normal(size=(12, 2))
    words = tuple(f"w{i}" for i in range(12))
    fig = projector.projection.__wrapped__(coords, words, "T", labelled=(0, 1, 2, 3), centre=0, neighbours=(4, 5),
                                           arrows=(("b − a", 0, 1), ("d − c", 2, 3)))
    spec = fig.to_dict()
    assert len(series(spec)) == 5
    assert_not_by_colour_alone(spec)


def test_efficiency_animations_keep_their_states_apart():
    trace = online_softmax(torch.tensor([0.5, 2.0, -1.0, 3.0, 1.0]))
    assert_not_by_colour_alone(efficiency.online_softmax_figure(trace, 3).to_dict())
    N, B_r, B_c = 12, 4, 4
    T = math.ceil(N / B_r)
    kinds = [[tile_kind(i, j, B_r, B_c, N, True) for j in range(T)] for i in range(T)]
    steps = tiled_example(N, B_r, B_c, True, 0).steps
    spec = efficiency.tile_figure(kinds, steps, 2, B_r, N).to_dict()
    assert colour_scales(spec) and series(spec)[1].hatch == "/"  # l's bars hatched, as its title says
    assert_not_by_colour_alone(spec)
    grid = spec["data"][0]
    assert colour_scales(spec)[0] == [[k / 3, s.colour] for k, s in enumerate(efficiency.TILE_STATES)]
    assert grid["texttemplate"] == "%{text}"
    for frame in spec["frames"]:  # every tile of every step carries its state's mark
        z, text = frame["data"][0]["z"], frame["data"][0]["text"]
        assert text == [[efficiency.TILE_STATES[state].mark for state in row] for row in z]
    alt = spec["layout"]["meta"][figures.ALT]
    assert all(f"{k} {s.name} ({s.mark})" in alt for k, s in enumerate(efficiency.TILE_STATES))


def plotly_cell_text(fill: str) -> str:
    """The colour plotly.js writes a heatmap cell's text in over `fill` (Color.contrast): white where tinycolor
    calls the fill dark (brightness under 128), else its line grey."""
    r, g, b = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
    return HEATMAP_TEXT[0] if (299 * r + 587 * g + 114 * b) / 1000 < 128 else HEATMAP_TEXT[1]


def test_the_tile_grids_states_hold_3_to_1_where_they_touch_and_each_carries_a_readable_mark():
    """Issue 44: the grid told its states apart by colour alone, at 1.11 to 2.75:1 on white. Every state now touches
    every other somewhere, and below white 3:1 steps leave two levels of lightness: skipped (white, the background)
    and not yet share the light one, and are told apart by their marks; every other pair is 3:1 or more."""
    states = {s.name.split(",")[0]: s for s in efficiency.TILE_STATES}
    assert list(states) == ["skipped", "not yet", "done", "in SRAM now"]
    assert states["skipped"].colour == "#ffffff"  # the background between the tiles
    for a, b in itertools.combinations(states, 2):
        if {a, b} != {"skipped", "not yet"}:
            assert contrast(states[a].colour, states[b].colour) >= GRAPHIC_CONTRAST, (a, b)
    assert len({s.mark for s in states.values()}) == len(states), "each state its own mark"
    for name, state in states.items():
        assert contrast(plotly_cell_text(state.colour), state.colour) >= TEXT_CONTRAST, name
