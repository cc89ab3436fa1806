"""The README's pictures: each one it shows is there and says in its alt text what it shows, they are the ones
benchmarks.screenshots takes, and together they stay well under 1 MB."""
from __future__ import annotations

import re
from pathlib import Path

from benchmarks.screenshots import SHOTS, picture

ROOT = Path(__file__).resolve().parents[2]
IMAGES = re.findall(r"!\[([^\]]*)\]\(([^)\s]+)\)", (ROOT / "README.md").read_text())  # (alt text, path)
LIMIT = 1024 * 1024  # issue 27: a README that loads quickly


def test_every_picture_is_there_and_its_alt_text_says_what_it_shows():
    assert IMAGES, "the README shows no picture"
    for alt, path in IMAGES:
        assert (ROOT / path).is_file(), f"{path} is missing: run python -m benchmarks.screenshots"
        assert len(alt.split()) >= 6, f"{path}: the alt text should say what the picture shows, not {alt!r}"


def test_the_readme_shows_exactly_the_pictures_the_script_takes():
    assert sorted(path for _, path in IMAGES) == sorted(picture(shot).relative_to(ROOT).as_posix() for shot in SHOTS)


def test_the_pictures_together_stay_under_1_mb():
    total = sum((ROOT / path).stat().st_size for _, path in IMAGES)
    assert total < LIMIT, f"{total / 1024:.0f} KB"
