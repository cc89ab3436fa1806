"""Page conventions: header with the seed citation, controls mirrored in the URL, notices,
an equations panel and a guard that turns bad input into a short message.

Every control is bound to a query parameter of the same name (Streamlit's
`bind="query-params"`), so a copied URL reopens the same view. Streamlit already drops a
bad or out-of-range value and falls back to the default; this module says so on the page.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np
import streamlit as st
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.scriptrunner import get_script_run_ctx

from engine.checkpoint_files import ModelFileError
from engine.errors import InputError
from ui import code
from ui.catalog import BY_SLUG, SOURCE_CODES
from ui.figures import lecture_mode
from ui.tours import STOP_PARAM, TOUR_PARAM

BOUND_PARAMS = "_bound_params"  # session key: URL parameters this run's controls own
DRAWN_PARAMS = "_drawn_params"  # session key: URL parameters any control of this session has owned
SHOWN_PAGE = "_shown_page"  # session key: the url_path of the page the last run drew
JOIN = "join"  # URL parameter: the code of the live lecture a student is in (ui/lecture.py)
TAB = "tab"  # URL parameter: the open tab of a page drawn in tabs (Page.tabs)
# Whether every tab runs on each run, as st.tabs does by default, instead of the open one alone. tests/app sets it:
# AppTest cannot open a tab, and its tests read a page's every tab from one run (test_tabs.py runs the open one)
EVERY_TAB = False


def _denotes(raw: str, value: Any) -> bool:
    """Whether a URL string spells a widget value (Streamlit drops a value equal to the default)."""
    if isinstance(value, bool):
        return raw.lower() == str(value).lower()
    if isinstance(value, int | float):
        try:
            return float(raw) == float(value)
        except ValueError:
            return False
    return raw == str(value)


class Page:
    """One page's header, notices and URL-bound controls."""

    def __init__(self, slug: str):
        self.info = BY_SLUG[slug]
        # each note's number links to the Sources page, which names it; in small text, not a caption: a caption is
        # drawn at 60% opacity, which took its links to 2.95:1 on white
        citation = ":small[Follows " + SOURCE_CODES.sub(lambda code: f"[{code[0]}](sources)", self.info.follows) + "]"
        if lecture_mode():  # one row: the first figure must reach the projector's first screen
            title, cited, about = st.columns([3, 3, 1.3], vertical_alignment="center")
            title.title(self.info.title)
            cited.markdown(citation)
            self._about = about.popover("About this page", width="stretch")
        else:
            st.title(self.info.title)
            st.markdown(citation)
            self._about = st.container()
        self._notices = st.container()
        st.session_state.setdefault(BOUND_PARAMS, set())
        st.session_state.setdefault(DRAWN_PARAMS, set())
        self.code = code.begin(self.info)  # the run's engine calls, for the Code view (ui/code.py)

    def intro(self, text: str) -> None:
        """The page's opening paragraph; behind a button in lecture mode, so the first figure fits the screen."""
        self._about.markdown(text)

    def notice(self, message: str) -> None:
        # a fragment's own rerun may write outside itself only where it wrote in the last full run (else Streamlit
        # raises): a notice that first appears then, for a control inside the fragment, is drawn in its place
        ctx = get_script_run_ctx()
        where = st if ctx is not None and ctx.fragment_ids_this_run else self._notices
        where.info(message, icon=":material/info:")

    def _bound(self, widget: Callable[..., Any], name: str, expected: str, *args: Any, where: Any = None,
               **kwargs: Any) -> Any:
        """Draw `widget` (in the container `where`, if given) bound to URL parameter `name`."""
        raw = st.query_params.get(name)
        with where if where is not None else contextlib.nullcontext():
            value = widget(*args, key=name, bind="query-params", **kwargs)
        self.code.setting(name, value, args[0])
        st.session_state[BOUND_PARAMS].add(name)
        st.session_state[DRAWN_PARAMS].add(name)
        if raw is not None and not _denotes(raw, value):  # refused, or taken in part (5.5 as 5)
            self.notice(f"URL parameter `{name}={raw[:40]}` is not {expected}; using {value}.")
        return value

    def slider(self, label: str, name: str, low: float, high: float, default: float, step: float | None = None,
               **kwargs: Any) -> Any:
        if low >= high:  # a range that follows the data can hold one value: nothing to choose, no slider
            st.session_state[BOUND_PARAMS].add(name)
            if (raw := st.query_params.get(name)) is not None and not _denotes(raw, low):
                self.notice(f"URL parameter `{name}={raw[:40]}` is not used: {label} can only be {low} here.")
                # drawn in the last run (its range shrank since), the parameter is still bound to that slider and
                # Streamlit refuses to delete it: then it stays in the URL, and the notice says it is not used
                with contextlib.suppress(StreamlitAPIException):
                    del st.query_params[name]
            self.code.setting(name, low, label)
            return low
        # a range that follows the data (a step slider over N steps) can shrink under the value kept from the
        # last run; Streamlit refuses a value past its bounds, so the slider starts again from its default
        kept = st.session_state.get(name)
        if isinstance(kept, int | float) and not low <= kept <= high:
            del st.session_state[name]
        whole = all(isinstance(v, int) for v in (low, high, default))
        expected = f"a {'whole ' if whole else ''}number from {low} to {high}"
        return self._bound(st.slider, name, expected, label, low, high, default, step, **kwargs)

    def select(self, label: str, name: str, options: Sequence[str], default: str | None = None, **kwargs: Any) -> str:
        index = list(options).index(default) if default is not None else 0
        return self._bound(st.selectbox, name, f"one of {', '.join(options)}", label, options, index, **kwargs)

    def number(self, label: str, name: str, default: float, **kwargs: Any) -> float:
        return self._bound(st.number_input, name, "a number", label, value=default, **kwargs)

    def toggle(self, label: str, name: str, default: bool = False, **kwargs: Any) -> bool:
        return self._bound(st.toggle, name, "True or False", label, default, **kwargs)

    def text(self, label: str, name: str, default: str, max_chars: int, area: bool = False, **kwargs: Any) -> str:
        widget = st.text_area if area else st.text_input
        return self._bound(widget, name, f"text of at most {max_chars} characters", label, default,
                           max_chars=max_chars, **kwargs)

    def tabs(self, views: Mapping[str, tuple[Callable[[], None], Sequence[str]]]) -> None:
        """Tabs, each {label: (the function that draws it, the URL parameters of its own controls)}, of which only
        the open one runs: moving a control of the page then computes, sends and draws that tab alone, not all of
        them with their hidden figures (issue 47). The open tab is in the URL, so a link or a lecture shows it.

        A link naming a hidden tab's control (`?offset=7`, from before tabs ran alone) opens that tab. The other
        tabs' parameters are not flagged as unknown; once their tab is hidden they leave the URL, which shows what is
        drawn, and their controls keep their values for when the tab opens again."""
        labels = list(views)
        st.session_state[BOUND_PARAMS].add(TAB)
        st.session_state[DRAWN_PARAMS].add(TAB)  # another page opens at its own first tab
        raw = st.query_params.get(TAB)
        if raw is None and TAB not in st.session_state:
            linked = [label for label, (_, names) in views.items() if any(name in st.query_params for name in names)]
            if linked:
                st.session_state[TAB] = linked[0]
        containers = st.tabs(labels, key=TAB, bind="query-params")
        if raw is not None and raw not in labels:
            self.notice(f"URL parameter `{TAB}={raw[:40]}` is not one of {', '.join(labels)}; "
                        f"showing {st.session_state[TAB]}.")
        shown = [EVERY_TAB or container.open for container in containers]
        # a hidden tab's controls keep their parameters; an open tab's are bound as it draws them, as any control is
        # (one past a refused input is flagged, as on a page without tabs)
        st.session_state[BOUND_PARAMS].update(name for (_, names), on in zip(views.values(), shown) if not on
                                              for name in names)
        for (draw, _), container, on in zip(views.values(), containers, shown):
            if on:
                with container:
                    draw()

    def refuse(self, message: str) -> NoReturn:
        """Say why nothing more can be drawn, settle the URL's parameters as a finished run does, and stop."""
        st.warning(message, icon=":material/warning:")
        self.code.refuse(message)
        flag_unknown_params()
        st.stop()

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Input the user can fix shows as a short warning, a missing or damaged file as an error naming it;
        the rest of the page goes on. Any other exception is a bug and is left to surface."""
        try:
            yield
        except InputError as error:
            st.warning(str(error), icon=":material/warning:")
            self.code.refuse(str(error))
        except ModelFileError as error:
            st.error(str(error), icon=":material/broken_image:")
            self.code.refuse(str(error))


def equations(*items: tuple[str, str]) -> None:
    """The equations panel: (citation, LaTeX) pairs, each labelled with where the notes write it.

    Set a size smaller than the page's so most equations fit the side column; lecture mode enlarges the page.
    """
    with st.container(border=True):
        st.markdown("**Equations**")
        for citation, latex in items:
            code.recipe().equation(citation, latex)
            st.caption(citation)
            st.latex(r"\small " + latex)


def gaps(*comparisons: tuple[str, Any, Any]) -> list[float]:
    """A row of metrics, one per (label, a, b): the largest |a - b|, how every page shows a check."""
    values = []
    for column, (label, a, b) in zip(st.columns(len(comparisons)), comparisons):
        values.append(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))))
        column.metric(label, f"{values[-1]:.1e}")
    return values


def enter_page(url_path: str) -> None:
    """Before a page runs: if it is not the page the last run drew, forget the last page's control values.

    Streamlit hands a keyed widget the value its key held on the page before, so every page whose control
    shares a name with another's (`word`, `text`, `window`) opened with that page's value from the sidebar:
    hierarchical softmax after word2vec said "'music' is not among the 1,776 words". A page opens at its own
    defaults, or at what its URL says (a tour's stop, a shared link, Back and Forward)."""
    if st.session_state.get(SHOWN_PAGE) != url_path:
        forget_controls()
        st.session_state[SHOWN_PAGE] = url_path


def forget_controls() -> None:
    """Drop the values of every control this session has drawn, so the next run's take the URL's."""
    for name in st.session_state.get(DRAWN_PARAMS, set()):
        st.session_state.pop(name, None)
    st.session_state[DRAWN_PARAMS] = set()


def flag_unknown_params() -> None:
    """After a page ran: name and drop URL parameters that no control on it owns."""
    owned = st.session_state.get(BOUND_PARAMS, set()) | {"lecture", JOIN, TOUR_PARAM, STOP_PARAM}
    # a control this session has drawn but this run did not (hidden by another control, or past a refused
    # input) keeps its parameter: Streamlit owns it, and drawing the control again restores its value
    drawn = st.session_state.get(DRAWN_PARAMS, set())
    for name in [n for n in st.query_params if n not in owned and n not in drawn]:
        st.toast(f"Ignored URL parameter `{name[:40]}`: this page shows no such control.", icon=":material/link_off:")
        del st.query_params[name]
    st.session_state[BOUND_PARAMS] = set()
