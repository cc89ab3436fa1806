"""`streamlit run`, with the one-hot page's engine call broken on purpose: the server of the browser test of a page's
boundary (tests/e2e/test_boundary_browser.py). The page imports `one_hot` from its module at every run, so every run
of it meets this one.
Usage: python -m tests.e2e.broken_server run app.py [streamlit options]
"""
from __future__ import annotations

import sys

from streamlit.web import cli

from engine.embeddings import pairs

BROKEN = "broken on purpose by tests/e2e/broken_server.py"


def one_hot(*args, **kwargs):
    raise RuntimeError(BROKEN)


if __name__ == "__main__":
    pairs.one_hot = one_hot
    sys.argv[0] = "streamlit"
    sys.exit(cli.main())
