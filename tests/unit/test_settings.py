"""The server's settings (ui/settings.py): one object, read from the environment in one place, each value checked;
the line of heavy work and SmolLM2's batch take theirs from it, and the engine reads no environment at all."""
from __future__ import annotations

import re
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from engine.llm import batching, serving
from ui import settings
from ui.settings import Settings, from_environment

ROOT = Path(__file__).resolve().parents[2]


def test_the_defaults_and_what_the_environment_sets():
    assert from_environment({}) == Settings()
    assert Settings().queue == serving.MAX_WAITING and Settings().batch_tokens == batching.MAX_TOKENS
    assert 1 <= Settings().jobs <= 4
    read = from_environment({"HOW_LMS_JOBS": "3", "HOW_LMS_QUEUE": "10", "HOW_LMS_PACE_SHARE": "0.5",
                             "HOW_LMS_BATCH_TOKENS": "1024", "HOW_LMS_WARM": "0", "HOW_LMS_LECTURE_KEY": "k" * 8,
                             "HOW_LMS_REDIS": "redis://h", "HOME": "/root"})
    assert read == Settings(jobs=3, queue=10, pace_share=0.5, batch_tokens=1024, warm=False, lecture_key="k" * 8,
                            redis="redis://h")
    with pytest.raises(FrozenInstanceError):
        read.jobs = 4


@pytest.mark.parametrize("variable, value", [("HOW_LMS_JOBS", "two"), ("HOW_LMS_JOBS", "0"),
                                             ("HOW_LMS_QUEUE", "1.5"), ("HOW_LMS_PACE_SHARE", "0"),
                                             ("HOW_LMS_BATCH_TOKENS", "-1"), ("HOW_LMS_WARM", "2"),
                                             ("HOW_LMS_LECTURE_KEY", "short"), ("HOW_LMS_REDIS", "")])
def test_a_value_nobody_could_mean_stops_the_server_with_its_name(variable, value):
    with pytest.raises(ValueError, match=variable):
        from_environment({variable: value})


def test_every_setting_has_its_variable_its_bounds_and_its_reason():
    source = (ROOT / "ui" / "settings.py").read_text()
    for name, (variable, _) in settings.VARIABLES.items():
        assert name in settings.BOUNDS and name in Settings.__dataclass_fields__
        assert re.search(rf"# {variable}: \S", source), f"{variable} has no comment saying why its default"
    assert set(settings.VARIABLES) == set(Settings.__dataclass_fields__)


def test_only_the_settings_module_reads_the_apps_variables_and_the_engine_reads_no_environment():
    readers = [p.relative_to(ROOT).as_posix() for folder in ("ui", "views", "engine")
               for p in (ROOT / folder).rglob("*.py") if "HOW_LMS_" in p.read_text()]
    assert readers == ["ui/settings.py"]
    environment = [p.relative_to(ROOT).as_posix() for p in (ROOT / "engine").rglob("*.py")
                   if re.search(r"os\.environ(?!\.items\(\))|getenv", p.read_text())]
    # SmolLM2's folder (SMOLLM2_DIR, a data path) and Triton's interpreter switch are the engine's only reads
    assert sorted(environment) == ["engine/efficiency/triton_flash.py", "engine/llm/files.py"]


def test_the_line_and_the_batch_take_their_caps_from_the_settings(monkeypatch):
    from ui import batching as ui_batching
    from ui import queued

    chosen = Settings(jobs=2, queue=5, batch_tokens=512)
    monkeypatch.setattr(settings, "current", lambda: chosen)
    queued.server_queue.clear()
    line = queued.server_queue()
    try:
        assert (line.workers, line.line.capacity) == (2, 5)
        server = ui_batching.batch_server.__wrapped__(object.__new__(batching.SmolLM))
        assert (server.batch.max_tokens, server.line.capacity) == (512, 5)
    finally:
        line.close()
        queued.server_queue.clear()
