"""A live lecture's shared state (serve/lectures.py), the same tests over the in-process store and over a real
redis-server: only the lecturer's token changes the lecture, answers are checked and counted once per session,
a flood is refused, presence counts live replicas only, and a change made through one replica's client is heard by
another's listener."""
from __future__ import annotations

import csv
import io
import threading
import time

import pytest

from serve.lectures import (
    CODE_ALPHABET,
    CODE_LENGTH,
    MAX_CHANGES,
    REPLICA_S,
    LectureError,
    Lectures,
    LocalRedis,
    Question,
    View,
)
from serve.replicas import REDIS_SERVER, Store

TILES = Question(0, "flash_attention", "How many tiles are skipped?", "number", (), "6", 0.0)
ROPE = Question(0, "rope", "Does the score change?", "choice", ("Yes", "No"), "No", 0.0)


@pytest.fixture(scope="module")
def redis_url():
    if not REDIS_SERVER.exists():
        pytest.skip("redis-server is missing (apt-get install -y redis-server): the Redis half of these tests needs it")
    store = Store()
    yield store.url
    store.stop()


@pytest.fixture(params=["local", "redis"])
def make(request):
    """Lectures over one store: make(replica) gives a replica's view of it (the same dict, or the same server)."""
    if request.param == "local":
        store = LocalRedis()
        return lambda replica="a": Lectures(store, replica)
    import redis

    url = request.getfixturevalue("redis_url")
    redis.Redis.from_url(url).flushall()
    return lambda replica="a": Lectures(redis.Redis.from_url(url, decode_responses=True), replica)


def test_a_lecture_has_a_readable_code_and_only_its_token_leads_it(make):
    lectures = make()
    code, token = lectures.start()
    assert len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET)
    assert lectures.is_lecturer(code, token)
    other_code, other_token = lectures.start()
    assert other_code != code
    for wrong in ("", other_token, token + "x", token[:-1]):
        assert not lectures.is_lecturer(code, wrong)
        with pytest.raises(LectureError):
            lectures.show(code, wrong, View("rope", ()))
        with pytest.raises(LectureError):
            lectures.ask(code, wrong, TILES)
        with pytest.raises(LectureError):
            lectures.end(code, wrong)
    assert lectures.snapshot(code).view is None
    assert lectures.snapshot("AAAAA") is None


def test_the_view_moves_with_a_version_and_a_resumed_lecture_drops_the_old_token(make):
    lectures = make()
    code, token = lectures.start()
    assert lectures.show(code, token, View("rope", (("d", "32"),))) == 1
    assert lectures.show(code, token, View("rope", (("d", "16"),))) == 2
    lecture = lectures.snapshot(code)
    assert (lecture.version, lecture.view) == (2, View("rope", (("d", "16"),)))
    new_token = lectures.resume(code)
    assert lectures.is_lecturer(code, new_token) and not lectures.is_lecturer(code, token)
    lectures.end(code, new_token)
    assert lectures.snapshot(code).ended
    assert lectures.resume(code) is None


def test_answers_are_checked_changeable_until_the_reveal_and_counted_once_per_session(make):
    lectures = make()
    code, token = lectures.start()
    with pytest.raises(LectureError, match="closed"):
        lectures.answer(code, 1, "s1", "6")
    asked = lectures.ask(code, token, TILES)
    assert asked.number == 1
    for bad, message in (("six", "not a number"), ("nan", "out of range"), ("1e300", "out of range"), ("", "number")):
        with pytest.raises(LectureError, match=message):
            lectures.answer(code, 1, "s1", bad)
    lectures.answer(code, 1, "s1", "5")
    lectures.answer(code, 1, "s1", "6")  # changed: still one answer
    lectures.answer(code, 1, "s2", "6.0")
    assert lectures.answers(code, 1) == {"s1": "6.0", "s2": "6.0"}
    with pytest.raises(LectureError, match="closed"):
        lectures.answer(code, 2, "s1", "6")
    lectures.reveal(code, token)
    with pytest.raises(LectureError, match="closed"):
        lectures.answer(code, 1, "s3", "6")
    asked = lectures.snapshot(code).question
    assert asked.revealed and all(map(asked.right, lectures.answers(code, 1).values()))

    choice = lectures.ask(code, token, ROPE)
    with pytest.raises(LectureError, match="options"):
        lectures.answer(code, choice.number, "s1", "Maybe")
    lectures.answer(code, choice.number, "s1", "Yes")
    assert not lectures.snapshot(code).question.right("Yes")
    lectures.end(code, token)
    with pytest.raises(LectureError, match="ended"):
        lectures.answer(code, choice.number, "s2", "No")


def test_a_flood_from_one_session_is_refused_and_changes_nothing(make):
    lectures = make()
    code, token = lectures.start()
    lectures.ask(code, token, TILES)
    for value in range(MAX_CHANGES):
        lectures.answer(code, 1, "flooder", str(value))
    with pytest.raises(LectureError, match="too often"):
        lectures.answer(code, 1, "flooder", "6")
    assert lectures.answers(code, 1) == {"flooder": repr(float(MAX_CHANGES - 1))}


def test_a_hundred_students_answering_at_once_are_each_counted_exactly_once(make):
    lectures = make()
    code, token = lectures.start()
    lectures.ask(code, token, TILES)

    def student(i: int) -> None:
        for value in ("1", str(i % 7)):  # a first answer, then the one they keep
            lectures.answer(code, 1, f"s{i}", value)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    answers = lectures.answers(code, 1)
    assert len(answers) == 100
    assert answers == {f"s{i}": repr(float(i % 7)) for i in range(100)}


def test_presence_counts_followers_and_pages_of_live_replicas_only(make):
    a, b = make("a"), make("b")
    code, _ = a.start()
    a.alive()
    b.alive()
    a.present(code, "s1", True, "rope")
    a.present(code, "s2", False, "kv_cache")
    b.present(code, "s3", False, "kv_cache")
    b.present(code, "s4", True, "rope")
    following, away = a.presence(code)
    assert (following, dict(away)) == (2, {"kv_cache": 2})
    a.leave(code, "s1")
    assert a.presence(code)[0] == 1
    b.client.hset("replicas", "b", time.time() - REPLICA_S - 1)  # replica b stopped saying it is alive
    following, away = a.presence(code)
    assert (following, dict(away)) == (0, {"kv_cache": 1})
    heard = []
    a.listen(lambda code, what: heard.append((code, what)))
    time.sleep(0.2)
    a.alive()  # a notices, drops b and tells every lecturer, once
    a.alive()
    deadline = time.monotonic() + 5
    while not heard and time.monotonic() < deadline:
        time.sleep(0.05)
    assert heard == [("*", "count")] and "b" not in a.client.hgetall("replicas")


def test_a_change_through_one_replica_is_heard_by_another(make):
    a, b = make("a"), make("b")
    heard, arrived = [], threading.Event()

    def listener(code: str, what: str) -> None:
        heard.append((code, what))
        arrived.set()

    b.listen(listener)
    time.sleep(0.2)  # the subscription is in place (Redis: its thread has subscribed)
    code, token = a.start()
    a.show(code, token, View("rope", ()))
    assert arrived.wait(5), "replica b heard nothing"
    assert heard[0] == (code, "view")
    assert b.snapshot(code).view == View("rope", ())


def test_the_csv_lists_each_question_its_right_answer_and_counts(make):
    lectures = make()
    code, token = lectures.start()
    lectures.ask(code, token, TILES)
    for session, value in (("s1", "6"), ("s2", "6"), ("s3", "5")):
        lectures.answer(code, 1, session, value)
    lectures.reveal(code, token)
    lectures.ask(code, token, ROPE)
    lectures.answer(code, 2, "s1", "No")
    rows = list(csv.DictReader(io.StringIO(lectures.questions_csv(code))))
    assert [(r["question"], r["right answer"], r["answers"], r["right"]) for r in rows] == [
        ("1", "6", "3", "2"), ("2", "No", "1", "1")]
    assert rows[0]["counts"] == "5.0: 1; 6.0: 2"
