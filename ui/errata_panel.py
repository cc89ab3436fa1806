"""Where the notes disagree or err (engine/errata.py): one panel, drawn on the page each finding concerns and
again on the page that gathers them all."""
from __future__ import annotations

import streamlit as st

from engine import errata
from engine.errata import Erratum
from ui import figures, tables
from ui.catalog import BY_SLUG

GATHERED = "notes_errata"  # the page that lists every finding


def show(erratum: Erratum, gathered: bool = False) -> None:
    """The finding, its numbers side by side and a link: to the page that computes it when `gathered`, else
    to the page that gathers them all."""
    heading = f"{'Erratum' if erratum.kind == 'error' else 'The notes disagree'}: {erratum.title} ({erratum.where})"
    with st.container(border=True) if gathered else st.expander(heading, expanded=True):
        if gathered:
            st.markdown(f"**{heading}**")
        st.markdown(erratum.text)
        first, second = erratum.columns
        tables.dataframe({"": list(erratum.rows), first: [a for a, _ in erratum.rows.values()],
                          second: [b for _, b in erratum.rows.values()]}, hide_index=True)
        target = BY_SLUG[erratum.page] if gathered else BY_SLUG[GATHERED]
        st.markdown(f"{'Computed on' if gathered else 'Every finding'}: [{target.title}]({target.slug})")


def rotation_figure(ends: dict[str, tuple[float, float]] | None = None) -> None:
    """000 eq. 109's two lines drawn (`ends`: errata.rotation_of_the_row_form(), computed here if not given): the
    row form turns q the other way."""
    ends = errata.rotation_of_the_row_form() if ends is None else ends
    figures.show(figures.points_and_curves({}, {name: ([0.0, x], [0.0, y]) for name, (x, y) in ends.items()},
                                           title="000 eq. 109 at θ = 30°: R q turns q by +θ, the printed q R by −θ",
                                           equal_axes=True, paired=True, height=340))
