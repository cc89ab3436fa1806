"""An unexpected error stays in one page and one student.

Whatever a page (or one of its fragments, rerunning alone) raises that it did not expect is logged with its traceback,
the page and the URL's parameters, and the student sees a short notice with a button that runs the page again, in
place of Streamlit's "This app has encountered an error" (client.showErrorDetails hides its traceback). The rest of
the app, and every other session, go on. Input a student can fix never reaches here: Page.guard and Page.refuse say
what to change.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import streamlit as st
from streamlit.logger import get_logger
from streamlit.runtime.scriptrunner import get_script_run_ctx

LOG = get_logger("how_lms.pages")
NOTICE = ("Something went wrong on this page, and it has been logged for the maintainers. The other pages work; "
          "this one may work if it runs again.")
AGAIN = "Run the page again"


def _where(page: str) -> str:
    """The page's path with the URL's parameters, as a student would share it."""
    params = st.query_params.to_dict()
    return f"/{page}" + (f"?{urlencode(params)}" if params else "")


@contextlib.contextmanager
def contained(page: str, part: str = "") -> Iterator[None]:
    """Run a page (`part`: one of its fragments) so that an unexpected exception is logged and shown as a notice.
    st.rerun, st.stop and st.switch_page raise Streamlit's own BaseExceptions, which pass through."""
    try:
        yield
    except Exception:
        LOG.exception("Unexpected error on page %s%s at %s", page, f" ({part})" if part else "", _where(page))
        st.error(NOTICE, icon=":material/error:")
        # the click reruns what failed: the whole page, or only the fragment it sits in
        st.button(AGAIN, key=f"_again_{part or 'page'}", icon=":material/refresh:")


def fragment(body: Callable[..., Any]) -> Callable[..., Any]:
    """st.fragment whose errors stay in it, in a full run and in its own reruns: the rest of the page draws on."""
    @functools.wraps(body)
    def contained_body(*args: Any, **kwargs: Any) -> Any:
        # imported by app.py long before (a lookup); not at the top, so that the browser tests and the simulated
        # class read NOTICE without importing the pages' modules and torch
        from ui import lecture
        from ui.page import SHOWN_PAGE

        shown = st.session_state.get(SHOWN_PAGE, "?")
        try:
            with contained(shown, body.__name__):
                return body(*args, **kwargs)
        finally:
            if get_script_run_ctx().fragment_ids_this_run:  # the fragment's own rerun: app.py's settle is not run
                lecture.settle(shown)

    return st.fragment(contained_body)
