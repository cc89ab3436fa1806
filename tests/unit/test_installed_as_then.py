"""benchmarks.installed_as_then: an earlier commit's server, in a before-and-after benchmark, runs without the
accelerators its own requirements.txt did not install, and Streamlit then starts as it would have without them."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchmarks import ACCELERATORS, ROOT, installed_as_then

# what Streamlit's server does at start: uvloop's loop if it imports, else asyncio's; httptools if it imports
STARTS = ("import streamlit.web.bootstrap as b\n"
          "print(b._get_uvloop_loop_factory() is not None)\n"
          "try:\n    import httptools\n    print(True)\n"
          "except ModuleNotFoundError:\n    print(False)\n")


def checkout_asking(folder: Path, requirements: str) -> Path:
    checkout = folder / "checkout"
    checkout.mkdir()
    (checkout / "requirements.txt").write_text(requirements)
    return checkout


def what_streamlit_finds(env: dict[str, str] | None) -> list[str]:
    out = subprocess.run([sys.executable, "-c", STARTS], env={**os.environ, **(env or {})}, capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return out.stdout.split()


def test_this_checkout_asks_for_every_accelerator(tmp_path):
    assert installed_as_then(ROOT, tmp_path) == (None, [])
    assert what_streamlit_finds(None) == ["True", "True"]  # the set-up installed them


def test_an_older_requirements_file_runs_its_server_without_them(tmp_path):
    checkout = checkout_asking(tmp_path, "streamlit>=1.67,<2\norjson>=3.8,<4  # plotly's JSON\n")
    env, hidden = installed_as_then(checkout, tmp_path)
    assert hidden == list(ACCELERATORS)
    assert what_streamlit_finds(env) == ["False", "False"]  # and Streamlit starts on asyncio's loop, not an error


def test_only_what_the_file_leaves_out_is_hidden(tmp_path):
    checkout = checkout_asking(tmp_path, "streamlit>=1.67,<2\nuvloop>=0.19  # the event loop\n")
    env, hidden = installed_as_then(checkout, tmp_path)
    assert hidden == ["httptools"]
    assert what_streamlit_finds(env) == ["True", "False"]
