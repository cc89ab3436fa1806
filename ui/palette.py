"""The colours and shapes every figure tells its series apart by, chosen so that no one needs colour alone: people
with red-green or blue-yellow colour-vision deficiency (1 man in 12 has one) see the same figures.
tests/unit/test_palettes.py measures what is claimed here."""
from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

# Okabe and Ito's colour-blind-safe palette ("Color Universal Design", 2008) in its order, for lines and markers
# on white. Every colour is a graphic needing 3:1 against white (WCAG 1.4.11), which their orange (2.2:1) and sky
# blue (2.3:1) miss: each keeps its OKLCh hue and chroma and is darkened to 3:1. Darkening them brings them
# towards the vermillion and the bluish green under simulated colour blindness, so those two, the blue and the
# reddish purple are darkened as well, as little as keeps every pair at least 12 CIEDE2000 apart under simulated
# deuteranopia, protanopia and tritanopia (searched over each colour's OKLCh lightness for the least largest
# change: none moves more than 12.6 ΔE00 from Okabe and Ito's). Left out: their yellow, whose 1.3:1 only darkens
# to an olive that deuteranopes cannot tell from this orange, and their black, which reads as the dark grey
# dashed references and the text.
SERIES_COLOURS = (
    "#C48700",  # orange, 3.1:1 (Okabe-Ito #E69F00)
    "#3C9CD0",  # sky blue, 3.1:1 (#56B4E9)
    "#008A64",  # bluish green, 4.4:1 (#009E73)
    "#004F7E",  # blue, 8.7:1 (#0072B2)
    "#AA4900",  # vermillion, 5.7:1 (#D55E00)
    "#AC5C89",  # reddish purple, 4.5:1 (#CC79A7)
)
# a second channel beside colour, one per series: marker symbols for points, dashes for curves. Cycling through
# them at another period than the colours, a seventh series differs from the first in shape.
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "triangle-down", "cross", "star")
CURVE_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "5px,10px")
HATCHES = ("/", ".", "x", "\\", "+", "-")  # bars: the second round of colours hatched, the third otherwise, ...
# references (bounds, exact values) are grey and dashed, told from the series by both; several differ in dash
# and shade, each shade at least 3:1 against white
REFERENCE_GREY = "#666666"  # 5.7:1
REFERENCE_GREYS = ("#333333", "#5C5C5C", "#808080")  # 12.6, 6.7 and 3.9:1
# heatmaps and the colour of tree nodes: cividis (Nuñez, Anderton and Renslow 2018) is perceptually uniform and
# made to look the same to deuteranopes: sampled at 65 points, its steps in CAM02-UCS stay within a factor 3 of
# each other under each simulated deficiency (at most 2.6), where viridis' range 3.5-fold (deuteranopia), 4.3-fold
# (protanopia) and 15-fold (tritanopia), running some neighbouring values together
SEQUENTIAL = "Cividis"
# signed data: ColorBrewer's red-blue, one of its schemes marked colour-blind safe; either direction
DIVERGING = ("RdBu", "RdBu_r")

# plotly's white template with these colours as its colorway: a trace given no colour of its own takes the
# colorway's next, so figures made by hand start from the same palette
TEMPLATE = "plotly_white_cvd"
_template = go.layout.Template(pio.templates["plotly_white"])
_template.layout.colorway = SERIES_COLOURS
pio.templates[TEMPLATE] = _template
