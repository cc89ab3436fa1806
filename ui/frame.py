"""What surrounds every page: lecture mode and the home page's map of the arc."""
from __future__ import annotations

import streamlit as st

from ui.catalog import pages_by_section
from ui.figures import LECTURE

# a long equation scrolls inside its panel instead of running under the next column
BASE_CSS = "<style>.katex-display { overflow-x: auto; overflow-y: hidden; padding: 0.2em 0; }</style>"
LECTURE_CSS = "<style>html { font-size: 22px; } [data-testid='stMainBlockContainer'] { max-width: 96rem; }</style>"


def lecture_toggle() -> None:
    """A sidebar switch for projectors: larger text everywhere, kept in the URL as `lecture`."""
    lecture = st.sidebar.toggle("Lecture mode", key=LECTURE, bind="query-params",
                                help="Larger text and figures for projectors")
    st.html(BASE_CSS + (LECTURE_CSS if lecture else ""))


def home() -> None:
    st.title("How language models compute")
    st.markdown(
        "Every figure here is computed live, in your browser session, by the `engine` package, "
        "following the lecture notes equation by equation. Pick a topic; each page names the "
        "sections and equations it follows, and every control is kept in the URL so a link "
        "reopens exactly what you see."
    )
    for section, pages in pages_by_section().items():
        st.subheader(section)
        for info in sorted(pages, key=lambda p: p.year):
            st.page_link(info.path, label=f"**{info.year} · {info.title}**: {info.summary}", icon=info.icon)
            st.caption(f"Follows {info.follows}")
