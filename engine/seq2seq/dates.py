"""The seq2seq task: human-written dates to ISO form, from a seeded generator.

"the 3rd of march 2021", "3/3/21", "Wednesday, March 3, 2021" -> "2021-03-03". Numeric dates are read
day first (03/04/21 is the 3rd of April), as in the notes' Australia. The pointer task puts a name in
front ("call ximena on 3 march 2021" -> "ximena 2021-03-03"); names are random letter strings, and the
output vocabulary has no letters, so a name can only be copied (000 eq. 53).
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

import torch

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
FIRST, LAST = dt.date(1950, 1, 1).toordinal(), dt.date(2049, 12, 31).toordinal()
PAD, BOS, EOS, UNK = "\x00", "\x02", "\x03", "\x01"
SOURCE_CHARS = PAD + UNK + " abcdefghijklmnopqrstuvwxyz0123456789,./-'"
TARGET_CHARS = PAD + BOS + EOS + "0123456789- "
MAX_SOURCE = 48  # characters; longer input is clipped (with a notice on the page)
SYLLABLES = ("ka", "mi", "ro", "xe", "zu", "na", "to", "li", "qua", "ven", "dor", "sha", "bel", "yo", "fi", "gru")


def ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


FORMATS = (
    lambda d: f"the {ordinal(d.day)} of {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{MONTHS[d.month - 1][:3]} {ordinal(d.day)} {d.year}",
    lambda d: f"{WEEKDAYS[d.weekday()]}, {MONTHS[d.month - 1]} {ordinal(d.day)} {d.year}",
    lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}",
    lambda d: f"{d.day}/{d.month}/{d.year % 100:02d}",
    lambda d: f"{d.day}.{d.month}.{d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1][:3]} '{d.year % 100:02d}",
    lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",
)


@dataclass(frozen=True)
class Example:
    source: str
    target: str


def random_date(rng: random.Random) -> dt.date:
    """A day between 1950 and 2049 (two-digit years are then unambiguous: 50-99 -> 19xx, 00-49 -> 20xx)."""
    return dt.date.fromordinal(rng.randint(FIRST, LAST))


def date_example(rng: random.Random) -> Example:
    day = random_date(rng)
    text = rng.choice(FORMATS)(day)
    return Example(text.capitalize() if rng.random() < 0.2 else text, day.isoformat())


def name_example(rng: random.Random) -> Example:
    """A name to copy and a date to normalise: the pointer-generator's task."""
    name = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
    date = date_example(rng)
    verb = rng.choice(("call", "meet", "email", "visit"))
    return Example(f"{verb} {name} on {date.source}", f"{name} {date.target}")


def examples(task: str, n: int, seed: int) -> list[Example]:
    """n examples of "dates" or "names" from a seeded generator (held-out sets use another seed)."""
    rng = random.Random(seed)
    make = date_example if task == "dates" else name_example
    return [make(rng) for _ in range(n)]


DISTRACTIONS = (" at 4 pm", ", not the 4th", " or the day after", " 10 am", ", 9:30", " at noon", " - maybe")


def distracted_examples(n: int, seed: int) -> list[Example]:
    """Dates followed by words and numbers that are not part of them: inputs unlike any seen in training,
    where a decoder that loses track of what it has read repeats or skips."""
    rng = random.Random(seed)
    return [Example(e.source + rng.choice(DISTRACTIONS), e.target) for e in (date_example(rng) for _ in range(n))]


@dataclass(frozen=True)
class Alphabet:
    chars: str

    def __post_init__(self):
        object.__setattr__(self, "index", {c: i for i, c in enumerate(self.chars)})

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        return [self.index.get(c, self.index[UNK] if UNK in self.index else 0) for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids if self.chars[i] not in (PAD, BOS, EOS))

    def unknown(self, text: str) -> list[str]:
        return sorted({c for c in text if c not in self.index})


SOURCE, TARGET = Alphabet(SOURCE_CHARS), Alphabet(TARGET_CHARS)


def target_ids(text: str) -> list[int]:
    """Output ids over the extended vocabulary: TARGET's characters, then every SOURCE character at
    len(TARGET) + its source id, which only copying can produce."""
    return [TARGET.index[c] if c in TARGET.index else len(TARGET) + SOURCE.index.get(c, SOURCE.index[UNK])
            for c in text]


def decode_target(ids) -> str:
    """Output text; a copied unknown character shows as �."""
    return "".join(TARGET.decode([i]) if i < len(TARGET) else SOURCE.chars[i - len(TARGET)].replace(UNK, "�")
                   for i in ids)


def batch(pairs: list[Example]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded source ids (B, S) and target ids with BOS in front and EOS behind (B, T + 2)."""
    sources = [SOURCE.encode(p.source.lower()[:MAX_SOURCE]) for p in pairs]
    targets = [[TARGET.index[BOS]] + target_ids(p.target) + [TARGET.index[EOS]] for p in pairs]
    S, T = max(map(len, sources)), max(map(len, targets))
    x = torch.tensor([s + [0] * (S - len(s)) for s in sources])
    y = torch.tensor([t + [0] * (T - len(t)) for t in targets])
    return x, y
