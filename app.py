"""Entry point: sections of built pages, lecture mode, then the chosen page."""
import streamlit as st

from ui.catalog import pages_by_section
from ui.frame import home, lecture_toggle
from ui.page import flag_unknown_params

st.set_page_config(page_title="How language models compute", page_icon=":material/hub:", layout="wide")
navigation = {"": [st.Page(home, title="The arc", icon=":material/home:", default=True)]}
for section, pages in pages_by_section().items():
    navigation[section] = [st.Page(p.path, title=p.title, icon=p.icon, url_path=p.slug) for p in pages]
page = st.navigation(navigation, expanded=True)  # every section visible, none behind "View more"
lecture_toggle()
page.run()
flag_unknown_params()
