"""`pip install .` gives code outside the app the engine: the wheel holds the engine's modules and shipped
checkpoints and nothing of the app, and from another folder `import engine` loads a checkpoint from it."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_is_the_engine_and_runs_outside_the_checkout(tmp_path):
    # built from a copy (setuptools writes build/ and egg-info beside the sources), with this environment's
    # setuptools, so the test needs no network (pip's default isolation fetches one)
    source = tmp_path / "checkout"
    shutil.copytree(ROOT / "engine", source / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "requirements.txt"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist")], check=True, capture_output=True, cwd=tmp_path)
    wheel = next((tmp_path / "dist").glob("how_lms_compute-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"engine"}, tops
    sources = {str(p.relative_to(ROOT)) for p in (ROOT / "engine").rglob("*.py")}
    assert sources <= set(names), sources - set(names)
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "engine").rglob("checkpoints/*") if p.is_file()}
    assert shipped and shipped <= set(names), shipped - set(names)
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    loaded = subprocess.run(
        [sys.executable, "-c", "import engine, sys; from engine.transformer.model import load_checkpoint; "
         "from engine.transformer.train import CHECKPOINTS; model, extra = load_checkpoint(CHECKPOINTS / "
         "'char_causal.pt'); print(engine.__file__); assert 'streamlit' not in sys.modules"],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}, capture_output=True,
        text=True, check=True)
    assert loaded.stdout.startswith(str(tmp_path / "site")), loaded.stdout
