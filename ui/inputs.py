"""Turning typed text into numbers, with messages a reader can act on."""
from __future__ import annotations

import math
import re

import numpy as np

from engine.errors import InputError

MAX_TYPED_ROWS = 12  # a typed matrix is for reading by eye; beyond this use random inputs
MAX_TOKENS = 16  # attention maps stop being readable past this many tokens


def parse_matrix(text: str, name: str) -> np.ndarray:
    """Rows separated by ';' or new lines, numbers by spaces or commas: '1 0; 0 1' -> (2, 2)."""
    rows = [r for r in re.split(r"[;\n]", text) if r.strip()]
    if not rows:
        raise InputError(f"{name} is empty: type rows such as `1 0; 0 1`")
    if len(rows) > MAX_TYPED_ROWS:
        raise InputError(f"{name} has {len(rows)} rows; type at most {MAX_TYPED_ROWS}")
    parsed = []
    for i, row in enumerate(rows, start=1):
        try:
            numbers = [float(x) for x in re.split(r"[,\s]+", row.strip())]
        except ValueError:
            raise InputError(f"{name}, row {i}: `{row.strip()[:30]}` is not a list of numbers") from None
        if not all(math.isfinite(x) for x in numbers):
            raise InputError(f"{name}, row {i}: entries must be finite numbers (no nan or inf)")
        parsed.append(numbers)
    if len(widths := {len(r) for r in parsed}) > 1:
        raise InputError(f"{name}: rows have different lengths {sorted(widths)}; every row needs the same count")
    return np.array(parsed)


def format_matrix(matrix: np.ndarray) -> str:
    """The inverse of parse_matrix, for showing a generated matrix as editable text."""
    return "\n".join(" ".join(f"{x:g}" for x in row) for row in np.asarray(matrix))


def parse_tokens(text: str) -> list[str]:
    """Whitespace-separated tokens of a sentence, at most MAX_TOKENS."""
    tokens = text.split()
    if not tokens:
        raise InputError("the sentence is empty: type a few words")
    if len(tokens) > MAX_TOKENS:
        raise InputError(f"the sentence has {len(tokens)} tokens; use at most {MAX_TOKENS} so the map stays readable")
    return tokens


def parse_order(text: str, n: int) -> list[int]:
    """A new order typed as positions, e.g. '2 0 1' for three tokens."""
    try:
        order = [int(x) for x in re.split(r"[,\s]+", text.strip()) if x]
    except ValueError:
        raise InputError(f"`{text[:30]}` is not a list of whole numbers such as `2 0 1`") from None
    if len(order) != n:
        raise InputError(f"the order names {len(order)} positions but the sentence has {n} tokens")
    return order


def parse_numbers(text: str, most: int = 40) -> list[float]:
    """Numbers separated by commas or spaces; a clear message for anything else or too many."""
    values = []
    for token in text.replace(",", " ").split():
        try:
            values.append(float(token))
        except ValueError:
            raise InputError(f"{token[:20]!r} is not a number: type numbers separated by commas") from None
    if not all(math.isfinite(v) for v in values):
        raise InputError("numbers must be finite")
    if len(values) > most:
        raise InputError(f"{len(values)} numbers: use at most {most}")
    return values
