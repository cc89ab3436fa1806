"""Every setting of a running server in one place: read from the environment once, at start-up (ui/server.py), each
with its default and the reason for it, as vLLM's envs.py lists its variables. The ui modules read `current()`
and pass what the engine needs as arguments; the engine never reads the environment."""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from engine.llm import batching, serving


def spare_cores() -> int:
    """One core kept for the sessions' own reruns: one job on a 2-core server, at most 4."""
    return min(4, max(1, (os.cpu_count() or 1) - 1))


@dataclass(frozen=True)
class Settings:
    # HOW_LMS_JOBS: worker threads of the server's line of heavy work (ui/jobs.py). A heavy job keeps a core busy
    # (the compiled training loops and torch release the GIL); more at once would slow each other and the class.
    jobs: int = field(default_factory=spare_cores)
    # HOW_LMS_QUEUE: heavy jobs, and SmolLM2 generations, waiting at most; past it a request is refused with a
    # message. At 10 s a job on one worker, the last of 64 waits about 10 minutes.
    queue: int = serving.MAX_WAITING
    # HOW_LMS_PACE_SHARE: of the wall time, the share a session rerunning without pause may take once its burst is
    # spent (ui/pace.py); 1 lifts the limit (the test suite's sessions rerun without pause on purpose).
    pace_share: float = 0.2
    # HOW_LMS_BATCH_TOKENS: tokens of KV cache SmolLM2's continuous batch may hold (engine/llm/batching.py):
    # 4,096 x 45 KiB = 180 MiB in float32; a class of 200 already peaks at 2.4 of a hosted server's 2.7 GB.
    batch_tokens: int = batching.MAX_TOKENS
    # HOW_LMS_WARM: 1 computes the default views' slow results in a background thread as the server starts
    # (ui/defaults.py), so a class arriving later finds them ready; 0 leaves each to its first visitor (the test
    # suite's servers, most of which open a few pages, on two cores shared with everything else).
    warm: bool = True
    # HOW_LMS_LECTURE_KEY: the lecturer's key for live lectures (ui/lecture.py), or `lecture_key` in
    # .streamlit/secrets.toml; unset, there are no live lectures and every page is as it was. At least 8 characters:
    # a session may try 5 keys a minute, and a class has hundreds of sessions.
    lecture_key: str = ""
    # HOW_LMS_REDIS: where live lectures keep their state (redis://host:6379/0) when replicas serve one class, so a
    # follower on one follows a lecturer on another (`python -m serve` sets it); unset, in this process.
    redis: str = ""


# each setting's variable, and how its text is read
VARIABLES: dict[str, tuple[str, Callable[[str], float | str]]] = {
    "jobs": ("HOW_LMS_JOBS", int),
    "queue": ("HOW_LMS_QUEUE", int),
    "pace_share": ("HOW_LMS_PACE_SHARE", float),
    "batch_tokens": ("HOW_LMS_BATCH_TOKENS", int),
    "warm": ("HOW_LMS_WARM", int),
    "lecture_key": ("HOW_LMS_LECTURE_KEY", str),
    "redis": ("HOW_LMS_REDIS", str),
}
BOUNDS = {"jobs": (1, 64), "queue": (1, 10_000), "pace_share": (0.01, 1.0), "batch_tokens": (64, 1 << 20), "warm": (0, 1),
          "lecture_key": (8, 256), "redis": (9, 2048)}  # the texts' lengths: redis:// and a host at least


def from_environment(environ: Mapping[str, str] = os.environ) -> Settings:
    """The settings the environment sets, the defaults for the rest. A value that does not parse or is out of
    bounds stops the server with the variable's name, rather than running with a setting nobody chose."""
    values = {}
    for name, (variable, parse) in VARIABLES.items():
        if variable not in environ:
            continue
        low, high = BOUNDS[name]
        try:
            value = parse(environ[variable])
        except ValueError:
            raise ValueError(f"{variable}={environ[variable]!r} is not a number") from None
        if isinstance(value, str) and not low <= len(value) <= high:  # a secret: its length, never its text
            raise ValueError(f"{variable} is not {low} to {high} characters long")
        if not isinstance(value, str) and not low <= value <= high:
            raise ValueError(f"{variable}={environ[variable]} is outside {low} to {high}")
        values[name] = value
    return Settings(**values)


_read: list[Settings] = []  # the settings once read: a list, so that no `global` is needed


def current() -> Settings:
    """This server's settings, read from the environment at the first call (ui/server.py makes it at start-up,
    before any session, so no two threads read it at once)."""
    if not _read:
        _read.append(from_environment())
    return _read[0]
