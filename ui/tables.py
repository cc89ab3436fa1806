"""Tables shared by pages: ranked words with their scores."""
from __future__ import annotations

import streamlit as st


def neighbour_table(ranked: list[tuple[str, float]], title: str, word_title: str = "neighbour",
                    score_title: str = "cosine") -> None:
    """Words best first with their scores, under a bold title."""
    st.markdown(f"**{title}**")
    st.dataframe({word_title: [w for w, _ in ranked], score_title: [s for _, s in ranked]}, hide_index=True,
                 column_config={score_title: st.column_config.NumberColumn(format="%.4f")})
