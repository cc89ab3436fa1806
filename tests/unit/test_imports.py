"""No import cycle among the project's own modules, counting imports inside functions too (a cycle hidden in a
function still makes two modules that cannot be read, tested or changed apart); and the engine imports neither
streamlit nor the app's own packages."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "ui", "serve", "harness", "benchmarks")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other project modules, wherever in the module they are made."""
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {m for m in found if m in modules and m != name and not name.startswith(m + ".")}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        path.pop()
        return None

    return next((found for node in sorted(graph) if node not in state and (found := visit(node))), None)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def test_no_import_cycle_among_the_projects_modules():
    assert cycle(project_imports(modules())) is None


def test_the_cycle_finder_finds_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_the_engine_imports_no_streamlit_and_none_of_the_apps_packages():
    for name, path in modules().items():
        if not name.startswith("engine"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            imported = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                        [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for module in imported:
                assert module.split(".")[0] not in {"streamlit", "ui", "views", "serve", "harness", "benchmarks"}, \
                    f"{name} imports {module}"


def test_the_engine_holds_no_path_into_the_checkout_beside_it():
    """`pip install .` ships the engine alone: a path to benchmarks/results (or any folder beside engine/) is the
    caller's to give, as ui.loaders and benchmarks give theirs."""
    for name, path in modules().items():
        if name.startswith("engine"):
            assert '"benchmarks"' not in path.read_text() and '"results"' not in path.read_text(), name
