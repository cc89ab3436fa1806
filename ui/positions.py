"""Controls shared by the pages that rotate by RoPE."""
from __future__ import annotations

from ui.page import Page


def rope_base(page: Page, where=None) -> float:
    """The RoPE base is a choice wherever RoPE is computed, because the notes disagree on it."""
    return page.number("Base", "base", 10000.0, step=10000.0, help="000's code: 100000; 001 and 002: 10000",
                       where=where)
