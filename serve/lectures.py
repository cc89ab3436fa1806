"""A live lecture's shared state: its join code, the view the lecturer shows, the question open and its answers,
who follows. One server keeps it in the process (LocalRedis, the few Redis commands used here over a dict); replicas
keep it in Redis (`python -m serve` starts redis-server beside HAProxy), so a follower on one replica follows a
lecturer on another and a killed replica loses nothing. Changes are announced on one pub/sub channel; each process
reruns its own sessions that watch the lecture (ui/lecture.py). No streamlit here: the tests and the lecture benchmark
drive it directly.
"""
from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import logging
import math
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I/L: read off a projector at the back of a hall
CODE_LENGTH = 5  # 31^5 = 28 million codes: a guessed code is one of a handful of live lectures by chance only
KEEP_S = 12 * 3600  # a lecture's keys outlive a day's teaching, then Redis drops them
CHANNEL = "how-lms:lectures"  # messages "<code> <what changed>": view, question, count, end; code * is every lecture
REPLICA_S = 6  # a process that has not said it is alive for this long is gone, and its sessions with it
MAX_CHANGES = 20  # answers one session may give to one question: more is a flood, refused
LOG = logging.getLogger("how_lms.lectures")


class LectureError(ValueError):
    """A request the lecture refuses, with the message the page shows."""


@dataclass(frozen=True)
class View:
    """What the class sees: a page and its URL parameters (the app's whole state, as a shared link has it)."""
    page: str
    params: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Question:
    """A question as asked: its right answer computed by the engine at the page's settings when it was opened."""
    number: int  # 1, 2, ... in the lecture
    page: str
    text: str
    kind: str  # "choice" (one of options) or "number" (within tolerance of answer)
    options: tuple[str, ...]
    answer: str
    tolerance: float
    revealed: bool = False

    def check(self, raw: str) -> str:
        """The answer as stored, or LectureError saying what is wrong with it."""
        if self.kind == "choice":
            if raw not in self.options:
                raise LectureError("Choose one of the options.")
            return raw
        try:
            value = float(raw)
        except ValueError:
            raise LectureError(f"{raw[:20]!r} is not a number.") from None
        if not math.isfinite(value) or abs(value) > 1e12:
            raise LectureError("That number is out of range.")
        return repr(value)

    def shown(self, stored: str) -> str:
        """An answer as the class reads it: 6 for 6.0."""
        return stored if self.kind == "choice" else f"{float(stored):g}"

    def right(self, stored: str) -> bool:
        if self.kind == "choice":
            return stored == self.answer
        return abs(float(stored) - float(self.answer)) <= self.tolerance


@dataclass(frozen=True)
class Snapshot:
    """A lecture as a follower's run reads it."""
    code: str
    version: int  # of the view: a follower moves when it is past the one it applied
    view: View | None
    question: Question | None  # the last asked; open until revealed
    ended: bool


class LocalRedis:
    """The commands Lectures uses, on dicts under one lock, for a single server with no Redis: what `streamlit run
    app.py` uses. Expiry is kept as redis does it, lazily on access."""

    def __init__(self):
        self._lock = threading.Lock()
        self._data: dict[str, dict[str, str]] = {}
        self._expires: dict[str, float] = {}
        self._listeners: list[Callable[[str], None]] = []

    def _hash(self, name: str) -> dict[str, str]:
        if self._expires.get(name, math.inf) < time.monotonic():
            self._data.pop(name, None)
        return self._data.setdefault(name, {})

    def hsetnx(self, name: str, key: str, value: str) -> bool:
        with self._lock:
            return self._hash(name).setdefault(key, value) is value

    def hset(self, name: str, key: str | None = None, value: str | None = None, mapping: dict | None = None) -> int:
        with self._lock:
            fields = self._hash(name)
            new = (mapping or {}) | ({key: value} if key is not None else {})
            added = len(new.keys() - fields.keys())
            fields.update({k: str(v) for k, v in new.items()})
            return added

    def hget(self, name: str, key: str) -> str | None:
        with self._lock:
            return self._hash(name).get(key)

    def hgetall(self, name: str) -> dict[str, str]:
        with self._lock:
            return dict(self._hash(name))

    def hdel(self, name: str, *keys: str) -> int:
        with self._lock:
            fields = self._hash(name)
            return sum(fields.pop(key, None) is not None for key in keys)

    def hincrby(self, name: str, key: str, amount: int = 1) -> int:
        with self._lock:
            fields = self._hash(name)
            fields[key] = str(int(fields.get(key, 0)) + amount)
            return int(fields[key])

    def expire(self, name: str, seconds: int) -> None:
        with self._lock:
            self._expires[name] = time.monotonic() + seconds

    def publish(self, channel: str, message: str) -> None:
        for listener in list(self._listeners):
            listener(message)

    def listen(self, channel: str, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)


def _redis_listen(client, listener: Callable[[str], None]) -> None:
    """Call listener with each message on CHANNEL, from a thread that blocks on the connection (no polling) and
    subscribes again when Redis comes back after a restart."""
    import redis

    pause = threading.Event()  # never set: its wait is the pause between tries (time.sleep may be patched in tests)

    def run() -> None:
        while True:
            try:
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(CHANNEL)
                for message in pubsub.listen():
                    listener(message["data"])
            except redis.ConnectionError:
                pause.wait(1.0)

    threading.Thread(target=run, name="lecture-listen", daemon=True).start()


class Lectures:
    """Every lecture, over a Redis client (redis.Redis with decode_responses=True) or a LocalRedis."""

    def __init__(self, client, replica: str = "local"):
        self.client = client
        self.replica = replica  # this process, in the presence entries it writes

    # --- the lecturer ---------------------------------------------------------------------------------------
    def start(self) -> tuple[str, str]:
        """A new lecture: its join code, and the token only the lecturer's session holds (its hash is stored)."""
        token = secrets.token_urlsafe(32)
        while True:
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            if self.client.hsetnx(f"lecture:{code}", "token", _digest(token)):
                break
        self.client.hset(f"lecture:{code}", mapping={"version": 0, "asked": 0, "ended": 0})
        self.client.expire(f"lecture:{code}", KEEP_S)
        return code, token

    def resume(self, code: str) -> str | None:
        """A new token for a lecture still going (the lecturer's page was reloaded, or moved to another screen):
        the old token stops working. None if no lecture is going with that code."""
        lecture = self.snapshot(code)
        if lecture is None or lecture.ended:
            return None
        token = secrets.token_urlsafe(32)
        self.client.hset(f"lecture:{code}", "token", _digest(token))
        return token

    def is_lecturer(self, code: str, token: str) -> bool:
        stored = self.client.hget(f"lecture:{code}", "token")
        return stored is not None and hmac.compare_digest(stored, _digest(token))

    def _lecturer(self, code: str, token: str) -> None:
        if not self.is_lecturer(code, token):
            raise LectureError("Only the lecturer can do that.")

    def show(self, code: str, token: str, view: View) -> int:
        """The lecturer's view, for every follower: its new version, announced."""
        self._lecturer(code, token)
        version = int(self.client.hget(f"lecture:{code}", "version") or 0) + 1
        self.client.hset(f"lecture:{code}", mapping={"view": json.dumps(asdict(view)), "version": version})
        self.client.publish(CHANNEL, f"{code} view")
        return version

    def ask(self, code: str, token: str, question: Question) -> Question:
        self._lecturer(code, token)
        asked = Question(**(asdict(question) | {"number": self.client.hincrby(f"lecture:{code}", "asked", 1)}))
        self.client.hset(f"lecture:{code}:questions", str(asked.number), json.dumps(asdict(asked)))
        self.client.expire(f"lecture:{code}:questions", KEEP_S)
        self.client.publish(CHANNEL, f"{code} question")
        return asked

    def reveal(self, code: str, token: str) -> None:
        self._lecturer(code, token)
        if (asked := self.snapshot(code).question) is not None:
            revealed = asdict(asked) | {"revealed": True}
            self.client.hset(f"lecture:{code}:questions", str(asked.number), json.dumps(revealed))
            self.client.publish(CHANNEL, f"{code} question")

    def end(self, code: str, token: str) -> None:
        self._lecturer(code, token)
        self.client.hset(f"lecture:{code}", "ended", 1)
        self.client.publish(CHANNEL, f"{code} end")

    # --- anyone in it -----------------------------------------------------------------------------------------
    def snapshot(self, code: str) -> Snapshot | None:
        """The lecture as it stands, or None for a code that names none."""
        fields = self.client.hgetall(f"lecture:{code}")
        if "token" not in fields:
            return None
        question = None
        if asked := int(fields.get("asked", 0)):
            question = _question(self.client.hget(f"lecture:{code}:questions", str(asked)))
        view = json.loads(fields["view"]) if "view" in fields else None
        return Snapshot(code, int(fields["version"]), view and View(view["page"], tuple(map(tuple, view["params"]))),
                        question, fields["ended"] == "1")

    def answer(self, code: str, number: int, session: str, raw: str) -> None:
        """One session's answer to question `number`, which it may change until the reveal."""
        lecture = self.snapshot(code)
        if lecture is None or lecture.ended:
            raise LectureError("This lecture has ended.")
        if lecture.question is None or lecture.question.number != number or lecture.question.revealed:
            raise LectureError("That question is closed.")
        stored = lecture.question.check(raw)
        if self.client.hincrby(f"lecture:{code}:changes:{number}", session, 1) > MAX_CHANGES:
            raise LectureError("You have changed this answer too often; it stays as it was.")
        self.client.expire(f"lecture:{code}:changes:{number}", KEEP_S)
        self.client.hset(f"lecture:{code}:answers:{number}", session, stored)
        self.client.expire(f"lecture:{code}:answers:{number}", KEEP_S)
        self.client.publish(CHANNEL, f"{code} count")

    def answers(self, code: str, number: int) -> dict[str, str]:
        """Each session's answer to question `number` (sessions are random ids: no names are kept)."""
        return self.client.hgetall(f"lecture:{code}:answers:{number}")

    def present(self, code: str, session: str, following: bool, page: str) -> None:
        """Where a session in the lecture is: following, or exploring `page` on its own."""
        entry = json.dumps({"replica": self.replica, "following": following, "page": page})
        if self.client.hget(f"lecture:{code}:present", session) != entry:
            self.client.hset(f"lecture:{code}:present", session, entry)
            self.client.expire(f"lecture:{code}:present", KEEP_S)
            self.client.publish(CHANNEL, f"{code} count")

    def leave(self, code: str, *sessions: str) -> None:
        if sessions and self.client.hdel(f"lecture:{code}:present", *sessions):
            self.client.publish(CHANNEL, f"{code} count")

    def alive(self) -> None:
        """This process is serving: its sessions' presence entries count for REPLICA_S more seconds. A replica
        silent for longer is dropped, and every lecturer told (message "* count"): its students no longer count."""
        now = time.time()
        self.client.hset("replicas", self.replica, now)
        gone = [name for name, said in self.client.hgetall("replicas").items() if now - float(said) > REPLICA_S]
        if gone and self.client.hdel("replicas", *gone):  # only the first replica to notice announces it
            self.client.publish(CHANNEL, "* count")

    def presence(self, code: str) -> tuple[int, Counter]:
        """How many follow, and how many explore on their own on each page, counting live replicas' sessions."""
        now, replicas = time.time(), self.client.hgetall("replicas")
        following, away = 0, Counter()
        for entry in map(json.loads, self.client.hgetall(f"lecture:{code}:present").values()):
            if now - float(replicas.get(entry["replica"], 0)) > REPLICA_S:
                continue
            if entry["following"]:
                following += 1
            else:
                away[entry["page"]] += 1
        return following, away

    def questions_csv(self, code: str) -> str:
        """Every question asked, its right answer and the answers' counts: the lecturer's download."""
        out = io.StringIO()
        table = csv.writer(out)
        table.writerow(["question", "page", "text", "right answer", "answers", "right", "counts"])
        asked_all = map(_question, self.client.hgetall(f"lecture:{code}:questions").values())
        for asked in sorted(asked_all, key=lambda q: q.number):
            given = list(self.answers(code, asked.number).values())
            counts = Counter(given)
            table.writerow([asked.number, asked.page, asked.text, asked.answer, len(given),
                            sum(map(asked.right, given)), "; ".join(f"{k}: {v}" for k, v in sorted(counts.items()))])
        return out.getvalue()

    def listen(self, listener: Callable[[str, str], None]) -> None:
        """Call listener(code, what) for every change to any lecture, from whichever replica made it."""
        def heard(message: str) -> None:
            code, _, what = message.partition(" ")
            try:
                listener(code, what)
            except Exception:  # one listener's fault must not stop every later message
                LOG.exception("A listener failed on %r", message)
        if isinstance(self.client, LocalRedis):
            self.client.listen(CHANNEL, heard)
        else:
            _redis_listen(self.client, heard)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _question(raw: str | None) -> Question | None:
    if raw is None:
        return None
    fields = json.loads(raw)
    return Question(**fields | {"options": tuple(fields["options"])})
