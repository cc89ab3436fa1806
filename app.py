"""Entry point: the home page and Sources, the sections of built pages, lecture mode, a tour's bar, then the
chosen page."""
import sys

import streamlit as st

# first, before any other import: every library whole before any session's page imports one (ui/server.py);
# on a cold server the first visitors wait here, and are told why (a spinner is a thread and a message: on a
# warm server, where the import is a lookup, none)
if not getattr(sys.modules.get("ui.server"), "READY", False):
    with st.spinner("Starting up: importing torch and the engine, once per server (about 5 s)…"):
        import ui.server  # noqa: F401
from engine.checkpoint_files import ModelFileError
from ui import lecture
from ui.boundary import contained
from ui.code import code_view, finish
from ui.frame import lecture_requested, lecture_toggle, navigation_pages, tour_bar
from ui.pace import paced
from ui.page import enter_page, flag_unknown_params

st.set_page_config(page_icon=":material/hub:", layout="wide",
                   initial_sidebar_state="collapsed" if lecture_requested() else "auto")
pages, navigation = navigation_pages()
page = st.navigation(navigation, expanded=True)  # every section visible, none behind "View more"
# each page its own title, the page's name first (WCAG 2.4.2): what a tab, a bookmark and a screen reader say
st.set_page_config(page_title=f"{page.title} · How language models compute")
enter_page(page.url_path)
lecture_toggle()
lecture.control(pages, page)  # a follower moves to the lecturer's view here, before drawing anything of its own
tour_bar(pages, page)
lecture.bar(page)
with paced(), contained(page.url_path):  # waits between a flooding session's runs; an unexpected error stays here
    try:
        page.run()
    except ModelFileError as error:  # a missing or damaged checkpoint: this page says which, every other page works
        st.error(str(error), icon=":material/broken_image:")
    finally:
        recorded = finish()
        lecture.settle(page.url_path)  # the lecturer's view to the class; a follower who touched a control is away
    # neither is reached when the page stopped (a refused state has no code; Page.refuse settles the URL) or failed
    # (its URL keeps every parameter, for the run again)
    code_view(recorded)
    flag_unknown_params()
