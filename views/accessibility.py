"""The accessibility statement, as universities publish one: the standard aimed at, how it is checked, what is
known not to conform, and how to report a problem. The measured part is read from the latest
benchmarks.accessibility run, so the statement says what the checks last found, with their date."""
import json

import streamlit as st

from ui import figures
from ui.loaders import RESULTS

# a small chart of the KV cache page's kind, named by the same code that names every chart, so the example quoted
# below is what a screen reader hears
named = figures.lines([1, 2, 3, 4], {"cache size": [2.0, 4.0, 6.0, 8.0]}, markers=False, x_title="position",
                      y_title="KiB", title="The cache grows by one K and V row per layer").layout.meta[figures.ALT]

st.title("Accessibility")
st.markdown(
    "This site aims at **WCAG 2.1 level AA**, the standard US public universities must meet under the ADA's Title II "
    "rule, and the level of EN 301 549, the standard Directive (EU) 2016/2102 holds public-sector bodies' websites "
    "to. It was built and is tested to be used by keyboard, with a screen reader, zoomed to 400%, on a phone, and "
    "by readers who cannot tell red from green or blue from yellow."
)
st.subheader("How it is checked")
st.markdown(
    "- **axe-core** (WCAG 2.0 and 2.1 A and AA rules) on every page at its defaults, on a desktop screen, in "
    "lecture mode at 1280 × 720, at 320 CSS px wide and with a guided tour's bar shown, in the test suite.\n"
    "- **Keyboard:** a test presses Tab through every page and checks that it reaches every control in reading "
    "order, that focus is outlined and that nothing traps it. Sliders move with the arrow keys; an animated "
    "figure's Play, Pause and step slider answer Enter, Space and the arrows; a tour moves with Page Up and "
    "Page Down.\n"
    f"- **Charts** are each a figure named by what they show, for example “{named}”, written from the chart's "
    "own data when it is drawn. Each chart's toolbar downloads its numbers as CSV, beside PNG and SVG.\n"
    "- **Colour:** series use a palette derived from Okabe and Ito's, darkened to 3:1 or more on white, and a "
    "second channel (dash or marker) where lines overlap. Heatmaps of values use cividis, a perceptually uniform "
    "scale, and of signed values ColorBrewer's red-blue, colour-blind safe but not perceptually uniform. A test "
    "checks that every pair of series in a figure stays apart (CIEDE2000) under simulated deuteranopia, "
    "protanopia and tritanopia. Text, links and chart text are at 4.5:1 or more.\n"
    "- **Motion and zoom:** with *reduce motion* set in your system, transitions stop and animated figures offer "
    "their step slider without Play. At 320 px and at 200% zoom text reflows without sideways scrolling; wide "
    "charts and tables may scroll.\n"
    "- Each page has its own title, the document's language is set, and controls are labelled."
)
latest = RESULTS / "accessibility.json"
if latest.exists():
    run = json.loads(latest.read_text())
    states = run["states"]
    blocking = sum(state["blocking_nodes"] for state in states.values())
    pages = max(state["pages"] for state in states.values())
    others = {rule: n for state in states.values() for rule, n in state["nodes_by_rule"].items()}
    st.markdown(
        f"**Last measured {run['date'][:10]}** with axe-core {run['axe_core'].split()[0]}: {pages} pages in "
        f"{len(states)} states, **{blocking} serious or critical findings**"
        + (f"; others: {', '.join(f'{rule} ×{n}' for rule, n in others.items())}." if others else ", and no others.")
    )
st.subheader("Known exceptions")
st.markdown(
    "- A chart's description gives its kind, axes, series and extremes, not every value; every value is in its "
    "CSV download. Plotly's hover labels show values under the pointer only, not from the keyboard.\n"
    "- Tables are Streamlit's data grid, drawn on a canvas with an accessible grid layer over it; screen readers "
    "differ in how well they read it. Download as CSV gives the same data as a plain file.\n"
    "- Streamlit's sidebar navigation puts its section headers inside its list; this site repairs the markup in "
    "your browser, so the links are read as plain links rather than as a list.\n"
    "- Equations are KaTeX, which includes MathML for screen readers; how they are spoken depends on the reader."
)
st.subheader("Report a problem")
st.markdown(
    "Tell whoever gave you the link (your lecturer, or the site's operator), or open an issue in this project's "
    "repository. Include the page's link (every control is kept in it, so the link reopens what you saw), what "
    "you used (browser, screen reader, zoom) and what got in your way. We aim to answer within five working days."
)
