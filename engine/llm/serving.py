"""A server's generations decoded as one continuous batch (batching.py), for every session that asks.

Sessions submit requests from their own threads and read their tokens as they come; one loop, on a thread of
the server's choosing, does all the work: between steps it drops the sequences nobody waits for any more and
lets the waiting requests join, first come first served, as long as the batch's caps allow (MAX_SEQUENCES
sequences, MAX_TOKENS tokens of cache); then it draws every sequence's next token and runs the step. A request
past the caps waits in line, its place known; one the batch could never take, or with settings out of range, is
refused at once and alone. Identical requests share one sequence, as identical jobs share one job in ui/jobs.py:
the line, its watchers and its cap are engine/waiting_line.py's, which that line shares.

The loop runs while there is work and ends when there is none; the next request starts it again through
`start` (a thread by default; the app hands it to its line of heavy jobs, and its `yielding` says when other
heavy work waits: the loop then lets nobody new in, finishes the batch and starts again behind that work).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.efficiency.measure import own_thread_count
from engine.llm.batching import MAX_SEQUENCES, MAX_TOKENS, DecodeBatch, Request, Sequence
from engine.llm.generation import Generated
from engine.llm.smollm import SmolLM
from engine.waiting_line import Entry, State, WaitingLine

MAX_WAITING = 64  # requests in line at most; past it a new one is refused with a message


@dataclass(eq=False, kw_only=True)
class Ticket(Entry):
    """A request as the server tracks it (its key), shared by every session (watcher) that asked for it. Running:
    its prompt being read, then, with a sequence, decoding."""
    request: Request
    sequence: Sequence | None = None  # once it has joined the batch
    submitted: float = field(default_factory=time.monotonic)
    first_token: float | None = None  # monotonic time its first token was drawn

    @property
    def decoding(self) -> bool:
        return self.state is State.RUNNING and self.sequence is not None

    @property
    def steps(self) -> list[Generated]:
        """Its tokens so far; the loop appends to the list as it draws them."""
        return self.sequence.steps if self.sequence is not None else []


def _in_a_thread(loop: Callable[[], None]) -> None:
    threading.Thread(target=loop, name="decode-batch", daemon=True).start()


class BatchServer:
    def __init__(self, lm: SmolLM, max_sequences: int = MAX_SEQUENCES, max_tokens: int = MAX_TOKENS,
                 max_waiting: int = MAX_WAITING, start: Callable[[Callable[..., None]], None] = _in_a_thread):
        self.batch = DecodeBatch(lm, max_sequences, max_tokens)
        self._start = start
        self.line: WaitingLine[Ticket] = WaitingLine(max_waiting, lambda n: (
            f"{n} generations already wait for the server's batch, its limit: try again in a minute."))
        self._lock = threading.Lock()
        self._decoding: dict[Sequence, Ticket] = {}
        self._cancelled: set[Ticket] = set()  # joining or decoding tickets nobody watches any more
        self._looping = False  # a loop is started or about to start

    @property
    def decoding(self) -> int:
        """Sequences in the batch now."""
        return len(self._decoding)

    @property
    def waiting(self) -> int:
        return len(self.line)

    def submit(self, request: Request, watcher) -> Ticket:
        """The ticket for request, shared if the same request waits or decodes already. Raises InputError for
        settings the batch refuses, or when the line is full."""
        self.batch.check(request)
        with self._lock:
            queued = len(self.line)
            ticket = self.line.join(watcher, request, lambda: Ticket(key=request, request=request))
            start = len(self.line) > queued and not self._looping
            self._looping = self._looping or start
        if start:
            self._start_loop()
        return ticket

    def _start_loop(self) -> None:
        """Start the loop. If it cannot be (the app's line of jobs is full), the requests waiting for it fail with
        the reason, which is raised again, and the next request tries afresh."""
        try:
            self._start(self.loop)
        except Exception as error:  # noqa: BLE001  (handed to the requests that waited for the loop)
            with self._lock:
                self._looping = False
                self.line.end_all(State.FAILED, error)
            raise

    def cancel(self, ticket: Ticket, watcher) -> None:
        """The watcher no longer waits: a ticket left alone leaves the line now, or the batch at the next step."""
        with self._lock:
            if self.line.leave(watcher, ticket):  # joining or decoding, and nobody waits for it any more
                self._cancelled.add(ticket)

    def place(self, ticket: Ticket) -> int:
        """1 for the next ticket to join the batch; 0 once it has joined (or ended)."""
        with self._lock:
            return self.line.place(ticket)

    def loop(self, yielding: Callable[[], bool] = lambda: False) -> None:
        """Decode until no request is left. With `yielding` true, let nobody new join once the requests waiting
        when this loop began have joined, and end once the batch is empty, starting again (behind the other work)
        if requests still wait: each turn serves at least the line it found, so steady other work cannot starve
        it."""
        own_thread_count()  # the loop's thread is new: its matrix products would otherwise spread over every core
        try:
            again = self._serve(yielding)
        except BaseException as error:  # the loop itself broke: nobody must wait for a loop that is gone
            with self._lock:
                self._looping = False
                self.batch.sequences.clear()
                self.line.end_all(State.FAILED, error)
                for ticket in self._decoding.values():
                    self.line.end(ticket, State.FAILED, error)
                self._decoding.clear(), self._cancelled.clear()
            raise
        if again:
            self._start_loop()

    def _serve(self, yielding: Callable[[], bool]) -> bool:
        """The loop's steps; whether requests still wait when it ends."""
        fresh = True  # this turn's first admission: whoever waits now joins, other work or not
        while True:
            with self._lock:
                for ticket in self._cancelled:
                    if not ticket.done.is_set():  # its join may have failed meanwhile
                        self.batch.drop(ticket.sequence)
                        del self._decoding[ticket.sequence]
                        self.line.end(ticket, State.DROPPED)
                self._cancelled.clear()
                joining = []
                stepping_aside = len(self.line) > 0 and not fresh and yielding()
                # first come first served: nobody overtakes the head of the line, however small
                while (len(self.line) and not stepping_aside
                       and self.batch.fits([t.request for t in joining] + [self.line.first().request])):
                    joining.append(self.line.take())
                fresh = False
                if not joining and not self._decoding:
                    self._looping = len(self.line) > 0
                    return self._looping
            if joining:
                self._join(joining)
            self._step()

    def _join(self, tickets: list[Ticket]) -> None:
        """Read the tickets' prompts (together, outside the lock); if that fails, each alone, so that a request
        that cannot be read fails by itself."""
        try:
            sequences = self.batch.join_all([t.request for t in tickets])
        except Exception as error:  # noqa: BLE001  (retried one by one below)
            if len(tickets) == 1:
                with self._lock:
                    self.line.end(tickets[0], State.FAILED, error)
                return
            for ticket in tickets:
                self._join([ticket])
            return
        with self._lock:
            for ticket, sequence in zip(tickets, sequences):
                ticket.sequence = sequence
                self._decoding[sequence] = ticket

    def _step(self) -> None:
        try:
            drawn = self.batch.draw()
            now = time.monotonic()
            with self._lock:
                for sequence, _ in drawn:
                    ticket = self._decoding[sequence]
                    ticket.first_token = ticket.first_token or now
                    if sequence.finished:
                        del self._decoding[sequence]
                        self._cancelled.discard(ticket)
                        self.line.end(ticket, State.DONE)
            self.batch.advance()
        except Exception as error:  # noqa: BLE001  (a fault in the step: its requests fail, the server goes on)
            with self._lock:
                self.batch.sequences.clear()
                for ticket in self._decoding.values():
                    self.line.end(ticket, State.FAILED, error)
                self._decoding.clear()
                self._cancelled.clear()
