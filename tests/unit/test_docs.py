"""The README and docs/: every table of measurements is the one the results files give now, every relative link
resolves, and every command they show is one the project runs: its module exists and is a benchmark or is run by
CI, a test or the serving layer, and every option it passes is one that module (or Streamlit) takes."""
from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest
from streamlit import config as streamlit_config

from benchmarks import tables

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
INLINE = re.compile(r"`((?:python -m|streamlit run) [^`]+)`")
SYSTEM = {"apt-get", "systemctl"}  # an operator's own machine: installing HAProxy, restarting it
# where the project itself runs a command: CI, the tests, the benchmarks, the serving layer
RUNNERS = [ROOT / ".ci" / "run", *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py"),
           *(ROOT / "serve").glob("*.py")]


def shown_commands(text: str) -> list[str]:
    """Each command a page shows: the lines of its bash blocks (continuations joined, comments dropped, `&&` and
    `>` split) and its inline `python -m ...` and `streamlit run ...`."""
    commands = []
    for block in BASH_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].split(" # ")[0].strip()
            commands += [part.split(" > ")[0].strip() for part in line.split("&&") if part.strip()]
    return commands + INLINE.findall(text)


def run_by_the_project(module: str) -> bool:
    pattern = re.compile(rf"(?<![\w.]){re.escape(module)}(?![\w])")
    own = importlib.util.find_spec(module)
    return any(pattern.search(p.read_text()) for p in RUNNERS if own is None or Path(own.origin) != p)


def options(words: list[str]) -> list[str]:
    return [w.split("=")[0] for w in words if w.startswith("--")]


def check_command(command: str) -> str | None:
    """Why a shown command is not one the project runs, or None."""
    words = shlex.split(command)
    if words[0] in SYSTEM:
        return None
    if words[:2] == ["streamlit", "run"]:
        unknown = [o for o in options(words) if o[2:] not in streamlit_config.get_config_options()]
        return None if (ROOT / words[2]).is_file() and not unknown else f"no {words[2]} or unknown {unknown}"
    if words[:2] != ["python", "-m"]:
        return f"{words[0]} is not a command the project runs"
    module = words[2]
    if module == "pip":
        files = [words[i + 1] for i, w in enumerate(words) if w == "-r"]
        return None if all((ROOT / f).is_file() for f in files) else f"pip reads a missing file among {files}"
    if module == "pytest":
        return None if all((ROOT / w).exists() for w in words[3:] if w.startswith("tests/")) else "no such test"
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return f"no module {module}"
    source = Path(spec.origin if not spec.submodule_search_locations else Path(spec.origin).parent / "__main__.py")
    if not module.startswith("benchmarks.") and not run_by_the_project(module):
        return f"{module} is run by neither CI, a test nor a benchmark"
    text = "\n".join(p.read_text() for p in Path(source).parent.glob("*.py")) if source.name == "__main__.py" \
        else source.read_text()
    unknown = [o for o in options(words[3:]) if f'"{o}"' not in text]
    return f"{module} takes no {unknown}" if unknown else None


@pytest.fixture(scope="module")
def texts() -> dict[Path, str]:
    return {page: page.read_text() for page in PAGES}


def test_every_table_of_measurements_is_generated_from_the_results_files_as_they_are_now():
    assert tables.stale() == [], "run python -m benchmarks.tables"


def test_the_docs_have_their_tables():
    """The tables the docs quote are there to be generated: a page that lost its markers would pass the test above
    with a stale figure typed in their place."""
    markers = {name for page in PAGES for name in re.findall(r"<!-- table: (\w+) -->", page.read_text())}
    assert markers == set(tables.TABLES)


def test_every_relative_link_resolves(texts):
    for page, text in texts.items():
        for target in LINK.findall(text):
            if "://" in target or target.startswith("#"):
                continue
            assert (page.parent / target.split("#")[0]).exists(), f"{page.relative_to(ROOT)} links to {target}"


def test_every_command_shown_is_one_the_project_runs(texts):
    shown = {(page.relative_to(ROOT), c) for page, text in texts.items() for c in shown_commands(text)}
    assert len(shown) > 20  # the parser found the commands at all
    problems = [f"{page}: {command!r}: {why}" for page, command in sorted(shown) if (why := check_command(command))]
    assert not problems, "\n".join(problems)


def test_a_command_the_project_does_not_run_is_caught():
    assert check_command("python -m benchmarks.no_such_benchmark") == "no module benchmarks.no_such_benchmark"
    assert check_command("python -m benchmarks.class_size --no-such-option") is not None
    assert check_command("python -m serve --replicas 2 --port 8501") is None
    assert check_command("streamlit run app.py --server.no_such_option 1") is not None


def test_the_readme_stays_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
