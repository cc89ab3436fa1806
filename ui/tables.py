"""Tables shared by pages: any page's columns sent as Arrow, and ranked words with their scores."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import streamlit as st


def dataframe(columns: Mapping[str, Any] | pa.Table, **options: Any) -> None:
    """st.dataframe(columns, **options), its columns sent as an Arrow table (or the Arrow table given, as a page
    keeps a large one between runs). Given a dict, st.dataframe first builds a pandas DataFrame and converts that to
    Arrow, on every run of the page: 3 ms for a table of four rows, against 0.1 ms this way. Columns Arrow cannot
    type (numbers mixed with text) are left to st.dataframe. Every table here hides pandas' index, which an Arrow
    table does not have."""
    try:
        table = columns if isinstance(columns, pa.Table) else pa.table(dict(columns))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        table = columns
    st.dataframe(table, **options)


def neighbour_table(ranked: list[tuple[str, float]], title: str, word_title: str = "neighbour",
                    score_title: str = "cosine") -> None:
    """Words best first with their scores, under a bold title."""
    st.markdown(f"**{title}**")
    dataframe({word_title: [w for w, _ in ranked], score_title: [s for _, s in ranked]}, hide_index=True,
              column_config={score_title: st.column_config.NumberColumn(format="%.4f")})
