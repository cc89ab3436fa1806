"""Scripts that print ratios measured in one run and record them in benchmarks/results/<name>.json."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from engine.checkpoint_files import ModelFileError
from engine.llm import files

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"  # what the app reads recorded results from (ui.loaders.RESULTS)
RSS_WITH_SMOLLM_MB = 2048  # issue 13: the whole app with SmolLM2's 135M float32 weights loaded
ACCELERATORS = ("uvloop", "httptools")  # Streamlit's "performance" extra beside orjson: used by a server that has them


def smollm_present() -> bool:
    """Whether SmolLM2's file is there: then a server's start-up thread loads the model and its pages show it."""
    try:
        files.checked_path()
    except ModelFileError:
        return False
    return True


def installed_as_then(checkout: Path, folder: Path) -> tuple[dict[str, str] | None, list[str]]:
    """The environment a checkout's server runs in as its own requirements.txt installs it: Streamlit's accelerators
    that the file does not ask for are hidden from it (a folder on PYTHONPATH whose stand-ins cannot be imported, as
    if absent). The environment to add, and what it hides."""
    asked = (checkout / "requirements.txt").read_text()
    hidden = [] if "streamlit[performance]" in asked else [
        name for name in ACCELERATORS if not re.search(rf"^{name}\b", asked, re.MULTILINE)]
    if not hidden:
        return None, []
    for name in hidden:
        (folder / "hidden" / name).mkdir(parents=True)
        (folder / "hidden" / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r} (not in that requirements.txt)'!r}, "
            f"name={name!r})\n")
    # in front of any path the environment already names, which the server keeps
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(folder / "hidden"), os.environ.get("PYTHONPATH")]))}, hidden


def memory_targets(targets: dict, with_smollm: bool) -> dict:
    """targets, with issue 13's memory bound in place of rss_mb when SmolLM2 is loaded."""
    return targets | ({"rss_mb": RSS_WITH_SMOLLM_MB} if with_smollm else {})


def write_result(name: str, result: dict) -> None:
    """benchmarks/results/<name>.json, said on the console, and the docs' tables generated again from it."""
    from benchmarks import tables

    out = RESULTS / f"{name}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    for page in tables.write():
        print(f"  and its tables in {page.relative_to(ROOT)}")


def finish(name: str, result: dict, failures: list[str]) -> int:
    """Record result, name each target it missed, and give the exit status: 1 when any was missed."""
    write_result(name, result)
    for failure in failures:
        print("over target:", failure)
    return 1 if failures else 0
