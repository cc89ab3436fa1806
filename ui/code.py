"""A page's computation as Python a student can take home: the Code view and its notebook.

A page records its engine calls as it makes them (`recipe().call`), so the page and its code cannot drift: the
page's value is what the recorded call returned, and the snippet is that call written out, its settings as
literals and every earlier value by the name it was given. This module is the recorder; ui/snippet.py the writer.
Nothing is rendered until the Code view is opened; recording keeps references only, for the length of one run.

The snippet imports `engine` alone (never `streamlit` or `ui`), so it runs after `pip install .` of the project.

A line of plain Python between engine calls is a `let` with its name given and its value computed by the page's own
code, a lambda (`code.let("same", lambda: cached == plain)`): ui/snippet.py writes the lambda's body from the view's
source, each name it reads as the snippet spells it.

A page's run neither parses nor compiles: CPython 3.11 keeps `ast.parse`'s recursion depth in one per-process
counter, and two threads parsing at once corrupt it ("SystemError: AST constructor recursion depth mismatch",
python/cpython#106905), which under a class of 300 showed one or two students an error page. A `let` is read off
its lambda's bytecode positions and the source file's text, and the figure's names are found by parsing it only when
the Code view is written out, under one lock (ui/snippet.py's PARSING).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ui.catalog import PageInfo
from ui.snippet import DATA, INSTALL, Names, Snippet, Step, Unwritable

VIEW_KEY = "_code_view"  # session key of the Code view's expander: open or closed
KEPT: dict[str, Recipe] | None = None  # tests set a dict: each finished run's recipe, by page slug

_this_run = threading.local()  # the recipe of the script run in this thread (one thread per run)


class Recipe:
    """The recorder: one page's engine calls at its current settings, in order, with the names it gave their
    values (ui/snippet.py writes them out)."""

    def __init__(self, info: PageInfo):
        self.info = info
        self.steps: list[Step] = []
        self.names = Names()
        self.equations: list[tuple[str, str]] = []
        self.figure_code: str | None = None  # run only in the notebook
        self.figure_named = 0  # how many values were named when the figure was given (it may read settings)
        self.slow_note: str | None = None
        self.refusal: str | None = None
        self.unwritable: str | None = None  # the first step the recipe could not write, and why
        self.loaders: list[str] = []
        self.finished = False  # the run ended: a fragment's own rerun calls it, and it only computes

    @property
    def values(self) -> dict[str, Any]:
        """name -> the page's value, for every value a step named."""
        return self.names.values

    def _recording(self) -> bool:
        """Whether this call belongs to the run being recorded. A fragment's own rerun calls a finished recipe;
        with the Code view open the whole page reruns instead, so the code follows the fragment's controls."""
        if not self.finished:
            return True
        ctx = get_script_run_ctx()
        if ctx is not None and ctx.fragment_ids_this_run and st.session_state.get(VIEW_KEY):
            st.rerun(scope="app")
        return False

    def setting(self, name: str, value: Any, label: str) -> None:
        """A control's value (Page does this for every control): written as a literal at the snippet's top."""
        if self._recording() and name.isidentifier() and name not in self.values:
            self.names.setting(name, value, label)

    def call(self, target: str, fn: Callable, *args: Any, via: Callable | None = None, note: str | None = None,
             **kwargs: Any) -> Any:
        """`target = fn(*args, **kwargs)`: run on the page (through `via`, a cached or queued path to the same
        value, when given: it takes the same arguments), recorded for the snippet."""
        if not self._recording():
            return (via or fn)(*args, **kwargs)
        try:
            value = (via or fn)(*args, **kwargs)
        except Exception as error:
            self.refusal = str(error)
            raise
        qualified = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"
        if qualified in DATA and qualified not in self.loaders:
            self.loaders.append(qualified)
        self._add(target, value, *self._written(fn, lambda: self.names.call(fn, args, kwargs)), note)
        return value

    def _written(self, what: Any, write: Callable[[], tuple[str, tuple[str, ...]]]) -> tuple[str, tuple[str, ...]]:
        """A step's text as the snippet writes it with the names given so far, and its imports. A step the recipe
        cannot write leaves the page working and the Code view saying so (tests/app/test_code_views.py fails on
        it)."""
        try:
            return write()
        except Unwritable as error:
            self.unwritable = self.unwritable or f"{getattr(what, '__name__', what)}: {error}"
            return "...", ()

    def later(self, target: str, fn: Callable, *args: Any, note: str | None = None, **kwargs: Any) -> None:
        """`target = fn(*args, **kwargs)` written into the snippet but not run here: the long work behind one of
        the page's buttons (training, timing), at the settings on screen. Its result has no page value; a later
        call reads it as `Name(target)`."""
        if self._recording():
            self.steps.append(Step(target, *self._written(fn, lambda: self.names.call(fn, args, kwargs)), note))

    def let(self, target: str, compute: Callable[[], Any], note: str | None = None) -> Any:
        """`target = <compute's body>`: a line of plain Python over earlier names, a lambda the page runs as its
        own code; the snippet writes its body, each name it reads by the step or setting of that name holding
        that value, or as a literal."""
        value = compute()
        if self._recording():
            self._add(target, value, *self._written(target, lambda: self.names.expression(compute)), note)
        return value

    def note(self, comment: str) -> None:
        """A comment line before the next step: the equation it computes."""
        if self._recording():
            self.steps.append(Step("", "", (), comment))

    def figure(self, code: str) -> None:
        """The notebook's last cell: plotly code over the recipe's names that draws the page's main figure."""
        if self._recording():
            self.figure_code, self.figure_named = code, len(self.values)

    def slow(self, note: str) -> None:
        """The snippet's first comment: how long its work takes at these settings on a laptop CPU."""
        self.slow_note = note

    def refuse(self, message: str) -> None:
        if self._recording():
            self.refusal = message

    def equation(self, citation: str, latex: str) -> None:
        if self._recording():
            self.equations.append((citation, latex))

    def _add(self, target: str, value: Any, text: str, imports: tuple[str, ...], note: str | None) -> None:
        self.names.name(target, value)
        self.steps.append(Step(target, text, imports, note))


class _Unrecorded:
    """Where a page's calls go outside a full run (a fragment's own rerun, a test calling a view's helper): run,
    not recorded; every other method of Recipe does nothing."""

    def call(self, target: str, fn: Callable, *args: Any, via: Callable | None = None, note: str | None = None,
             **kwargs: Any) -> Any:
        return (via or fn)(*args, **kwargs)

    def let(self, target: str, compute: Callable[[], Any], note: str | None = None) -> Any:
        return compute()

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


def begin(info: PageInfo) -> Recipe:
    _this_run.recipe = Recipe(info)
    return _this_run.recipe


def recipe() -> Recipe | _Unrecorded:
    """This run's recipe; outside a page's full run (a fragment's own rerun, a helper called by a test), one that
    only computes. A page passes its own (`page.code`) to what it calls."""
    return getattr(_this_run, "recipe", None) or _Unrecorded()


def finish() -> Recipe | None:
    """End the run's recording; the recipe, if the page made one."""
    made = getattr(_this_run, "recipe", None)
    _this_run.recipe = None
    if made is not None:
        made.finished = True
    if made is not None and KEPT is not None:
        KEPT[made.info.slug] = made
    return made


def code_view(made: Recipe | None) -> None:
    """The Code view under a page that finished: opened, it renders the snippet and offers the notebook."""
    if made is None or not any(step.target for step in made.steps):
        return
    view = st.expander("Code: this view in Python, and as a notebook", icon=":material/code:", key=VIEW_KEY,
                       on_change="rerun")
    if not view.open:
        return
    with view:
        if made.refusal is not None:
            st.info(f"No code for these settings: {made.refusal}", icon=":material/info:")
            return
        try:
            written = Snippet(made)
            script, book = written.script(), written.notebook()
        except Unwritable as error:  # a description that misses a step: say so rather than show wrong code
            st.info(f"This view's code cannot be written out ({error}).", icon=":material/info:")
            return
        # small text, not a caption: a caption's 60% opacity took its inline code to 2.98:1
        st.markdown(f":small[What this page computed, at the settings on screen. It runs outside the app: in a "
                    f"checkout of the project, `{INSTALL}`, then run this with `python`.]")
        st.code(script, language="python", line_numbers=False)
        st.download_button("Download as a Jupyter notebook", data=book.encode(), file_name=f"{made.info.slug}.ipynb",
                           mime="application/x-ipynb+json", icon=":material/download:", on_click="ignore")
