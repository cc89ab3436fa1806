"""Files of gensim's test data that the engine reads (corpora, analogy questions, rated word pairs), each
checked against the sha256 it had when our numbers were measured, so a damaged install is named instead of
silently changing a result."""
from __future__ import annotations

import importlib
import importlib.util
import threading
from pathlib import Path

from engine.checkpoint_files import check_file

SHA256 = {
    "lee_background.cor": "5d78d6dafd953bbf65797bef09a9ffb9ec430583381be705f8fd460000f370fb",
    "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2":
        "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d",
    "questions-words.txt": "8c29b3332afc46f3fb8be04cb5297bf96f39aa7131272dff57869b4485b22a36",
    "wordsim353.tsv": "f92a022fc2537793a15bc3a8c162ebcd74990e033a228bb6388cb71e4c0b1e1d",
    "simlex999.txt": "d5e0501971478a511430ee880bd0121e94ac701ba86d90544d83e6d2ba3db05d",
}
# What the engine uses of gensim (and of scipy.stats, which gensim imports): 1.5 s of a server's start-up, so the
# app imports them after its first pages (ui/defaults.py) instead of before (ui/server.py)
MODULES = ("gensim.corpora.wikicorpus", "gensim.models", "scipy.stats")
# Two threads importing a package for the first time at once can deadlock on each other's module locks, and
# Python then hands one of them a half-initialised module: one thread at a time imports these
_IMPORTING = threading.Lock()
REINSTALL = ('reinstall gensim, whose test data it is, with `python -m pip install --force-reinstall --no-deps '
             '"gensim>=4.3,<5"`; every other page works without it')


def gensim_module(name: str):
    """One of MODULES, imported by one thread at a time. Every use of them in the engine goes through here."""
    if name not in MODULES:
        raise ValueError(f"{name} is not one of {MODULES}")
    with _IMPORTING:
        return importlib.import_module(name)


def data_folder() -> Path:
    """Where gensim keeps its test data (gensim.test.utils.datapath's folder), found without importing gensim."""
    spec = importlib.util.find_spec("gensim")
    return (Path(spec.submodule_search_locations[0]) if spec else Path("gensim")) / "test" / "test_data"


def gensim_file(name: str) -> Path:
    """The path of a checked file of gensim's test data; a ModelFileError if it is missing or damaged."""
    path = data_folder() / name
    check_file(path, SHA256[name], f"The gensim data file {name}", REINSTALL)
    return path
