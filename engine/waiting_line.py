"""A waiting line shared by many watchers, the part every scheduler of shared work writes: identical requests merged
by their key, the watchers of each, a request nobody watches any more dropped from the line (or left to its owner
to stop, once taken), each request's place, and a cap on the line's length.

The server's line of heavy jobs (ui/jobs.py) and SmolLM2's continuous batch (engine/llm/serving.py) each keep only
their own rules around it: which entry runs next and when, and what running means. Not thread-safe by itself: its
owner calls it under the owner's own lock, which also guards the owner's state. No streamlit.
"""
from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from engine.errors import InputError


class State(enum.Enum):
    WAITING = "waiting"  # in line
    RUNNING = "running"  # taken from the line by its owner
    DONE = "done"
    FAILED = "failed"
    DROPPED = "dropped"  # every watcher left before it ended: taken out of the line, or stopped while running


class LineFull(InputError):
    """Too many requests already wait: the message says so and what to do (a page shows it as a notice)."""


@dataclass(eq=False)
class Entry:
    """One request as the line tracks it; schedulers subclass it with what their work needs."""
    key: Hashable  # identical keys share one entry
    watchers: set[Hashable] = field(default_factory=set)
    state: State = State.WAITING
    error: BaseException | None = None
    ended: float | None = None  # monotonic time it ended
    done: threading.Event = field(default_factory=threading.Event)  # set once it has ended, however


E = TypeVar("E", bound=Entry)


class WaitingLine(Generic[E]):
    """Entries in order of arrival, at most `capacity` waiting; `full(n)` words the refusal when n already wait."""

    def __init__(self, capacity: int, full: Callable[[int], str]):
        self.capacity, self._full = capacity, full
        self._line: deque[E] = deque()
        self._by_key: dict[Hashable, E] = {}  # waiting and running entries that a new watcher can still join

    def join(self, watcher: Hashable, key: Hashable, make: Callable[[], E]) -> E:
        """The entry for key, joined if it waits or runs, else make()'s, at the end of the line. Raises LineFull
        when a new entry would not fit; joining one that exists is never refused, since it adds no work."""
        entry = self._by_key.get(key)
        if entry is None:
            if len(self._line) >= self.capacity:
                raise LineFull(self._full(len(self._line)))
            entry = make()
            self._line.append(entry)
            self._by_key[key] = entry
        entry.watchers.add(watcher)
        return entry

    def leave(self, watcher: Hashable, entry: E) -> bool:
        """The watcher no longer waits on the entry. Whether the entry is now left alone while running, for its
        owner to stop; left alone while waiting, it is dropped here. A request asked again afterwards starts anew."""
        entry.watchers.discard(watcher)
        if entry.watchers or entry.done.is_set():
            return False
        self.forget(entry)
        if entry.state is State.WAITING:
            self._line.remove(entry)
            self.end(entry, State.DROPPED)
            return False
        return True

    def place(self, entry: E) -> int:
        """1 for the next entry to be taken, 2 for the one after it; 0 once taken (or ended)."""
        return self._line.index(entry) + 1 if entry.state is State.WAITING else 0

    def take(self) -> E:
        """The first entry in line, now running (its owner checks that the line is not empty)."""
        entry = self._line.popleft()
        entry.state = State.RUNNING
        return entry

    def first(self) -> E:
        return self._line[0]

    def forget(self, entry: E) -> None:
        """No new watcher joins the entry any more: a request asked again from now on gets an entry of its own."""
        if self._by_key.get(entry.key) is entry:
            del self._by_key[entry.key]

    def end(self, entry: E, state: State, error: BaseException | None = None) -> None:
        """The entry has ended, with state (and the error it failed with); its watchers are woken."""
        self.forget(entry)
        entry.state, entry.error, entry.ended = state, error, time.monotonic()
        entry.done.set()

    def end_all(self, state: State, error: BaseException | None = None) -> list[E]:
        """Empty the line, every waiting entry ended with state (its owner shuts down, or cannot run them)."""
        ended = list(self._line)
        self._line.clear()
        for entry in ended:
            self.end(entry, state, error)
        return ended

    def __len__(self) -> int:
        return len(self._line)

    def __iter__(self) -> Iterator[E]:
        """The waiting entries, first in line first."""
        return iter(self._line)
