"""Files of gensim's test data that the engine reads (corpora, analogy questions, rated word pairs), each
checked against the sha256 it had when our numbers were measured, so a damaged install is named instead of
silently changing a result."""
from __future__ import annotations

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
REINSTALL = ('reinstall gensim, whose test data it is, with `python -m pip install --force-reinstall --no-deps '
             '"gensim>=4.3,<5"`; every other page works without it')


def gensim_file(name: str) -> Path:
    """The path of a checked file of gensim's test data; a ModelFileError if it is missing or damaged."""
    from gensim.test.utils import datapath  # late: only the pages and scripts that read these need gensim

    path = Path(datapath(name))
    check_file(path, SHA256[name], f"The gensim data file {name}", REINSTALL)
    return path
