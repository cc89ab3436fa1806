"""The notes every page cites, named, with the pages that cite each."""
import streamlit as st

from ui.catalog import PAGES, SOURCE_CODES, SOURCES

st.title("Sources")
st.markdown("Each page names the notes and equations it computes, for example “000 eq. 35”: the number is the "
            "file below. Where the notes disagree, the page lets you choose and shows the difference.")
for source in SOURCES:
    citing = [info for info in PAGES if source.code in SOURCE_CODES.findall(info.follows)]
    with st.container(border=True, key=f"source_{source.code}"):
        st.markdown(f"**{source.code}: {source.title}**  \n{source.author}, {source.date}")
        st.caption(source.covers)
        st.markdown("Cited by: " + ", ".join(f"[{info.title}]({info.slug})" for info in citing))
