"""What surrounds every page: lecture mode, the browser-side helpers, guided tours and the home page's map
of the arc."""
from __future__ import annotations

import copy
import textwrap
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from ui import arc_map
from ui.catalog import BY_SLUG, START, pages_by_section
from ui.figures import LECTURE
from ui.tours import BY_KEY, STOP_PARAM, TOUR_PARAM, TOURS, stop_params

CLIENT_JS = (Path(__file__).parent / "client.js").read_text()
TOUR_MOVED = "tour_moved"  # session state: the notice for a stop that was opened on another page
# a row of columns that holds no figure, equation or metric: a row of controls
CONTROL_ROW = ("[data-testid='stHorizontalBlock']:not(:has([data-testid='stPlotlyChart'], .katex-display, "
               "[data-testid='stDataFrame'], [data-testid='stTable'], [data-testid='stMetric']))")
# control rows fold two to a row on a phone instead of one under another; a swipe over a chart scrolls the page
# (plotly's drag layer would take it)
BASE_CSS = f"""<style>
.katex-display {{ overflow-x: auto; overflow-y: hidden; padding: 0.2em 0; }}
/* sub- and superscripts reach a few px past KaTeX's box: room for them, so they need no scrollbar */
.katex-display > .katex {{ padding: 0 6px; }}
.js-plotly-plot .main-svg, .js-plotly-plot .nsewdrag, .js-plotly-plot .draglayer * {{ touch-action: pan-y !important; }}
/* what has the keyboard's focus is outlined, everywhere: Streamlit marks some controls by a border's colour alone,
   some (a link in the sidebar, a table's toolbar) not at all; a chart's toolbar shows while focus is in it */
:focus-visible {{ outline: 3px solid #1f4fbf !important; outline-offset: 2px; }}
.js-plotly-plot .plotly:focus-within .modebar {{ opacity: 1 !important; }}
/* a folded sidebar (lecture mode, a phone) is out of Tab's way: its 38 links stayed focusable off screen */
[data-testid='stSidebar'][data-collapsed='true'] [data-testid='stSidebarContent'] {{ visibility: hidden; }}
/* a metric's label wraps rather than being cut to an ellipsis: at 320 px a long one lost most of its words */
[data-testid='stMetricLabel'] :is(div, p) {{ white-space: normal !important; overflow: visible !important;
                                            text-overflow: clip !important; }}
/* code (the Code view) in colours of at least 4.5:1 on its background: Streamlit's own highlighting drew comments,
   keywords and strings at 2.9 to 3.7:1 */
[data-testid='stCode'] .token:is(.comment, .prolog, .doctype, .cdata) {{ color: #555a6b !important; }}
[data-testid='stCode'] .token:is(.keyword, .atrule, .important) {{ color: #1f4fbf !important; }}
[data-testid='stCode'] .token:is(.string, .char, .attr-value, .regex) {{ color: #176f2c !important; }}
[data-testid='stCode'] .token:is(.number, .boolean, .constant, .symbol) {{ color: #9a3412 !important; }}
[data-testid='stCode'] .token:is(.function, .class-name) {{ color: #6b21a8 !important; }}
[data-testid='stCode'] .token:is(.builtin, .decorator, .annotation) {{ color: #0b6e99 !important; }}
[data-testid='stCode'] .token:is(.operator, .punctuation) {{ color: #111111 !important; }}
/* forced colours (Windows high contrast) paint backgrounds away, and with them a slider's track and thumb and a
   toggle's switch: those keep their own colours */
@media (forced-colors: active) {{
  [data-testid='stSlider'], [data-testid='stCheckbox'] label > div:first-child {{ forced-color-adjust: none; }}
}}
/* no movement the reader did not ask for: Streamlit's transitions and spinners stop, and an animated figure
   offers its step slider without Play */
@media (prefers-reduced-motion: reduce) {{
  *, *::before, *::after {{ animation-duration: 0.01ms !important; animation-iteration-count: 1 !important;
                            transition-duration: 0.01ms !important; scroll-behavior: auto !important; }}
  .js-plotly-plot .updatemenu-container {{ display: none; }}
}}
@media (max-width: 640px) {{
  [data-testid='stMainBlockContainer'] {{ padding-top: 3.5rem; }}
  [data-testid='stMainBlockContainer'] h1 {{ font-size: 2rem; }}
  {CONTROL_ROW} {{ flex-wrap: wrap; gap: 0.5rem; }}
  {CONTROL_ROW} > [data-testid='stColumn'] {{
    min-width: calc(50% - 0.25rem) !important; flex: 1 1 calc(50% - 0.25rem) !important; }}
}}
</style>"""
# projector: larger text, the page's top band and title made compact so the first figure is on the first screen
LECTURE_CSS = """<style>
html { font-size: 22px; }
[data-testid='stMainBlockContainer'] { max-width: 100%; padding: 3.4rem 1.5rem 2rem; }
[data-testid='stMainBlockContainer'] h1 { font-size: 1.6rem; padding: 0 0 0.2rem; }
[data-testid='stMainBlockContainer'] :is(h2, h3) { font-size: 1.2rem; }
[data-testid='stMainBlockContainer'] [data-testid='stVerticalBlock'] { gap: 0.55rem; }
[data-testid='stMainBlockContainer'] :is(.stSlider, .stSelectbox, .stTextInput, .stTextArea, .stNumberInput,
    .stCheckbox, .stRadio, .stMultiSelect, .stButton) { zoom: 0.85; }
</style>"""


def lecture_requested() -> bool:
    """Lecture mode as this run will draw it: the toggle's state, else the URL's `lecture` on a first visit."""
    if LECTURE in st.session_state:
        return bool(st.session_state[LECTURE])
    return st.query_params.get(LECTURE, "").lower() == "true"


def lecture_toggle() -> None:
    """A sidebar switch for projectors: larger text, the sidebar folded away, kept in the URL as `lecture`."""
    raw = st.query_params.get(LECTURE)
    lecture = st.sidebar.toggle("Lecture mode", key=LECTURE, bind="query-params",
                                help="Larger text and figures for projectors; the sidebar folds away")
    if raw is not None and raw.lower() != str(lecture).lower():  # Streamlit drops any other value without a word
        # on the page, not beside the switch: a phone's sidebar is folded away
        st.info(f"URL parameter `{LECTURE}={raw[:40]}` is not true or false; using {str(lecture).lower()}.",
                icon=":material/info:")
    st.html(STYLES[lecture])
    st.html(SCRIPT, unsafe_allow_javascript=True)


@dataclass(frozen=True)
class Prepared:
    """HTML st.html takes as it is (through _repr_html_): given a string, it dedents and strips the frame's script
    and styles again at every run of every page, 0.3 ms each time."""
    html: str

    def _repr_html_(self) -> str:
        return self.html


def prepared(html: str) -> Prepared:
    return Prepared(textwrap.dedent(html).strip())  # what st.html does to a string


STYLES = {False: prepared(BASE_CSS), True: prepared(BASE_CSS + LECTURE_CSS)}  # by lecture mode
SCRIPT = prepared(f"<script>{CLIENT_JS}</script>")


@st.cache_resource(show_spinner=False)
def _built_pages() -> tuple[dict[str, st.Page], dict[str, list[st.Page]]]:
    """Every built page's st.Page by slug, and the navigation's sections of them, the home page, Sources and the
    accessibility statement first. Made once per server: each st.Page resolves its view's path on disk and infers
    a name from it, 38 of them on every run of every page, which was 5% of the server's GIL time under a class."""
    pages = {info.slug: st.Page(info.path, title=info.title, icon=info.icon, url_path=info.slug)
             for section_pages in pages_by_section().values() for info in section_pages}
    sections = {"": [st.Page(lambda: home(pages), title="The arc", icon=":material/home:", url_path="home",
                             default=True),
                     st.Page("views/sources.py", title="Sources", icon=":material/menu_book:", url_path="sources"),
                     st.Page("views/accessibility.py", title="Accessibility", icon=":material/accessibility:",
                             url_path="accessibility")]}
    for section, infos in pages_by_section().items():
        sections[section] = [pages[info.slug] for info in infos]
    return pages, sections


def navigation_pages() -> tuple[dict[str, st.Page], dict[str, list[st.Page]]]:
    """_built_pages for this run: st.navigation marks the page it returns as this run's to call, and the run
    unmarks it, so every run navigates copies of its own (shallow: the pages' paths and titles are shared) and
    no session's run can unmark another's. The pages by slug are the shared ones, to link to."""
    pages, sections = _built_pages()
    return pages, {section: [copy.copy(page) for page in section_pages] for section, section_pages in sections.items()}


def tour_bar(pages: dict[str, st.Page], current: st.Page) -> None:
    """On a tour's stop: where it is, its note, and Previous and Next (PageUp and PageDown, as presenters'
    clickers send them). A stop opened on a page not its own (a stale or edited link) moves to its own page,
    so a note never describes another page."""
    if (moved := st.session_state.pop(TOUR_MOVED, None)) is not None:
        st.toast(moved, icon=":material/route:")
    key, raw_stop = st.query_params.get(TOUR_PARAM), st.query_params.get(STOP_PARAM)
    if key is None:
        return
    tour = BY_KEY.get(key)
    if tour is None or not (raw_stop or "").isdigit() or not 1 <= int(raw_stop) <= len(tour.stops):
        st.toast(f"No such tour stop: `{key[:40]}` {str(raw_stop)[:10]}. The tours are on the home page.",
                 icon=":material/link_off:")
        del st.query_params[TOUR_PARAM]
        st.query_params.pop(STOP_PARAM, None)
        return
    index, lecture = int(raw_stop) - 1, lecture_requested()
    stop = tour.stops[index]
    if current.url_path != stop.slug:
        st.session_state[TOUR_MOVED] = (f"Stop {index + 1} of the {tour.title} tour is {BY_SLUG[stop.slug].title}, "
                                        f"not {current.title}: opened there.")
        st.switch_page(pages[stop.slug], query_params=stop_params(tour, index, lecture))
    with st.container(border=True, key="tour_bar"):
        note, buttons = st.columns([3, 2], vertical_alignment="center")
        note.markdown(f"**Tour: {tour.title} · {index + 1} of {len(tour.stops)}.** {stop.note}")
        # each button as wide as its label and key hint: stretched to a narrow column, the label was cut to nothing
        with buttons.container(horizontal=True, horizontal_alignment="right"):
            for label, shortcut, step in (("Previous", "PageUp", -1), ("Next", "PageDown", 1)):
                target = index + step
                if st.button(label, key=f"tour_{label}", shortcut=shortcut, width="content",
                             disabled=not 0 <= target < len(tour.stops)):
                    st.switch_page(pages[tour.stops[target].slug], query_params=stop_params(tour, target, lecture))


def tour_links(pages: dict[str, st.Page]) -> None:
    lecture = lecture_requested()
    for column, tour in zip(st.columns(len(TOURS)), TOURS):
        with column.container(border=True):
            st.page_link(pages[tour.stops[0].slug], label=f"**{tour.title}**", icon=":material/route:",
                         query_params=stop_params(tour, 0, lecture))
            st.caption(f"{tour.summary} {len(tour.stops)} stops.")


def home(pages: dict[str, st.Page]) -> None:
    st.title("How language models compute")
    st.markdown("From word vectors to FlashAttention, every figure here is computed live on the server by this "
                "project's own code, following lecture notes equation by equation (they are listed under Sources). "
                "Every control is kept in the URL, so a link reopens exactly what you see.")
    st.page_link(pages[START], label=f"**Start here: {BY_SLUG[START].title}**", icon=":material/flag:")
    st.subheader("Guided tours")
    tour_links(pages)
    st.subheader("The map")
    st.caption("One column per section, in the sidebar's order; an arrow points from a page to the pages that "
               "build on it. Click a box to open it.")
    st.markdown(arc_map.svg(), unsafe_allow_html=True)  # st.html would drop the SVG
    st.subheader("Every page")
    for section, infos in pages_by_section().items():
        st.markdown(f"**{section}**")
        for info in infos:
            st.page_link(pages[info.slug], label=f"{info.title} ({info.year})", icon=info.icon)
            st.caption(info.summary)
