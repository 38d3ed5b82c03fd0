"""The engine's layout holds: the worker side imports nothing of the grader side, and no import circles.

The import graph is read from the source with ``ast`` (every import statement, at any depth, except
those only for type checkers), so a lazy import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

ENGINE = ROOT / "grader"
WORKER_SIDE = "grader.sandbox"
BASE = {"grader", "grader.errors", "grader.course", "grader.layout", "grader.protocol", "grader.processes",
        "grader.submission", "grader.cgroups"}
ENTRY = "grader.__main__"  # python -m grader: the command line, like the console script
MAX_TOP_LEVEL_MODULES = 9  # cgroups: made by the worker's holder, read and removed by whoever collects it


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def import_graph() -> dict[str, set[str]]:
    """module -> the engine modules it imports."""
    modules = {_module_name(p): p for p in ENGINE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(tree):
            if _type_checking_only(node, parents):
                continue
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_import_graph_has_no_circle():
    cycle = _cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_worker_side_imports_only_itself_and_the_base_modules():
    graph = import_graph()
    bad = {(m, i) for m, imports in graph.items() if m.startswith(WORKER_SIDE)
           for i in imports if not i.startswith(WORKER_SIDE) and i not in BASE}
    assert not bad, f"the worker side imports grader-side code: {sorted(bad)}"


def test_the_base_modules_import_no_package():
    graph = import_graph()
    bad = {(m, i) for m in BASE for i in graph.get(m, ()) if i not in BASE}
    assert not bad, f"base modules must not depend on the engine's packages: {sorted(bad)}"


def test_grader_side_code_never_imports_the_worker_side():
    graph = import_graph()
    bad = {(m, i) for m, imports in graph.items() if not m.startswith(WORKER_SIDE) and m not in BASE
           for i in imports if i.startswith(WORKER_SIDE)}
    assert ENTRY in graph
    assert not bad, f"the grader process must not import worker-side code: {sorted(bad)}"


def test_the_top_level_holds_a_few_base_modules():
    modules = sorted(p.name for p in ENGINE.glob("*.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules
    assert {f"grader.{m[:-3]}" for m in modules if m != "__init__.py"} <= BASE | {ENTRY}


def test_the_graph_sees_lazy_imports():
    """A rule that could not fail would prove nothing: the graph must see imports inside functions."""
    assert "grader.cli.grade" in import_graph()["grader.cli"]


def test_the_circle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
