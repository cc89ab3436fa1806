"""Our shipped checkpoints on disk: saved with their sha256 written to a SHA256SUMS file beside them, and
loaded only when the file still has it, so a truncated, altered or missing file is named and explained
instead of failing deep inside torch's unpickler."""
from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import torch

MANIFEST = "SHA256SUMS"  # `sha256sum` format: "<hex digest>  <file name>" per line
ROOT = Path(__file__).resolve().parents[1]


class ModelFileError(RuntimeError):
    """A model, data file or checkpoint that is missing or damaged; the message says which and how to restore it."""


def check_file(path: Path, expected: str, what: str, restore: str) -> None:
    """A ModelFileError naming `what` and how to `restore` it unless `path` exists with sha256 `expected`."""
    if not path.exists():
        raise ModelFileError(f"{what} is missing: {restore}.")
    with path.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    if digest != expected:
        raise ModelFileError(f"{what} is damaged ({path.stat().st_size:,} bytes, sha256 {digest[:12]}…, "
                             f"expected {expected[:12]}…): {restore}.")


def _manifest(directory: Path) -> dict[str, str]:
    path = directory / MANIFEST
    if not path.exists():
        return {}
    return {name: digest for digest, name in (line.split(maxsplit=1) for line in path.read_text().splitlines())}


def git_restore(path: Path) -> str:
    """The command that puts a tracked file back as the repository has it."""
    return f"git checkout -- {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"


def _restore(path: Path) -> str:
    return (f"restore it with `{git_restore(path)}`, or retrain it (README, “Data and models we train”); "
            "every other page works without it")


def save(checkpoint: dict, path: Path) -> None:
    """torch.save, then record the file's sha256 in its directory's SHA256SUMS."""
    path = Path(path)
    torch.save(checkpoint, path)
    sums = _manifest(path.parent) | {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}
    (path.parent / MANIFEST).write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items())))


def load(path: Path) -> dict:
    """torch.load(weights_only=True) of a file whose sha256 matches its SHA256SUMS line."""
    path = Path(path)
    expected = _manifest(path.parent).get(path.name)
    if expected is None and path.exists():
        raise ModelFileError(f"The checkpoint {path.name} has no sha256 in {MANIFEST} beside it: {_restore(path)}.")
    check_file(path, expected, f"The checkpoint {path.name}", _restore(path))
    return torch.load(path, map_location="cpu", weights_only=True)


def run_asked(runs: list[str], description: str, checkpoints: Path) -> str | None:
    """A training script's command line: `--only NAME` trains one of `runs`, none given trains them all. The
    checkpoints' folder is made, and torch runs on one thread, so that every machine trains the same weights."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(runs))
    only = parser.parse_args().only
    checkpoints.mkdir(exist_ok=True)
    torch.set_num_threads(1)
    return only
