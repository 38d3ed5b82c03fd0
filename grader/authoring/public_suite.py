"""Public copies of hidden suites: keep the visible tests and what they use, drop the rest.

A task's suite is one file holding tests of every visibility. Students get a copy that keeps only
the tests course.yaml calls ``visible``: hidden test functions (or methods of ``Test*`` classes) are
cut out with their decorators and the comments just above them, and so is every top-level helper
(function, class, constant) that only the dropped tests used. Everything else, imports and the
module docstring included, stays as the instructor wrote it, so the public tests read the same.
The release scans the result independently (:mod:`grader.authoring.release_scan`); this module only cuts.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class PublicCopy:
    text: str | None  # the public source; None when no test is left
    kept: tuple[str, ...]
    dropped: tuple[str, ...]


def is_test_function(node: ast.AST) -> bool:
    """What pytest collects by default: ``test*`` functions, at top level or in ``Test*`` classes."""
    return isinstance(node, _FUNCTIONS) and node.name.startswith("test")


def is_test_class(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and node.name.startswith("Test")


def collected_tests(tree: ast.Module):
    """Every test function node of a parsed suite file."""
    for node in tree.body:
        if is_test_function(node):
            yield node
        elif is_test_class(node):
            yield from (m for m in node.body if is_test_function(m))


def references(nodes, skip: set[int] = frozenset()) -> set[str]:
    """Names the code uses: identifiers, attributes, parameters (fixtures), imports and strings.

    Strings count because suites name code in strings ("probes.ring_step", usefixtures("data")); a
    string "a.b" also counts as "a".
    """
    out: set[str] = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if id(node) in skip:
            continue
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.alias):
            out.add(node.name.split(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.update((node.value, node.value.split(".")[0]))
        stack.extend(ast.iter_child_nodes(node))
    return out


def _bound(node: ast.stmt) -> set[str]:
    """Top-level names a helper statement defines (empty for statements that are never dropped)."""
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        names = {node.name}
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    else:
        return set()
    if any(n.startswith("pytest") or (n.startswith("__") and n.endswith("__")) for n in names):
        return set()  # pytest hooks, pytestmark, dunders: part of the file's machinery, always kept
    return names


def _span(node: ast.stmt, lines: list[str]) -> range:
    """0-based line indexes of a statement with its decorators and the comment lines just above."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())]) - 1
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return range(start, node.end_lineno)


def public_copy(text: str, is_visible: Callable[[str], bool]) -> PublicCopy:
    """The suite ``text`` with only the tests for which ``is_visible(name)`` holds."""
    tree = ast.parse(text)
    dropped_nodes: list[ast.stmt] = []
    kept: list[str] = []
    for node in tree.body:
        if is_test_function(node) and is_visible(node.name):
            kept.append(node.name)
        elif is_test_function(node):
            dropped_nodes.append(node)
        elif is_test_class(node):
            tests = [m for m in node.body if is_test_function(m)]
            hidden = [m for m in tests if not is_visible(m.name)]
            kept += [m.name for m in tests if is_visible(m.name)]
            dropped_nodes += [node] if tests and len(hidden) == len(tests) else hidden
    dropped = tuple(n.name for n in collected_tests(tree) if not is_visible(n.name))
    helpers = [n for n in tree.body if _bound(n) and not is_test_class(n)]
    changed = True
    while changed:
        changed = False
        skip = {id(n) for n in dropped_nodes}
        used_by_dropped = references(dropped_nodes)
        for helper in helpers:
            if id(helper) in skip or not _bound(helper) & used_by_dropped:
                continue
            if not _bound(helper) & references(tree.body, skip | {id(helper)}):
                dropped_nodes.append(helper)
                skip.add(id(helper))
                changed = True
    if not kept:
        return PublicCopy(None, (), dropped)
    lines = text.splitlines(keepends=True)
    cut = {i for n in dropped_nodes for i in _span(n, lines)}
    public = "".join(line for i, line in enumerate(lines) if i not in cut)
    public = re.sub(r"\n{4,}", "\n\n\n", public).rstrip("\n") + "\n"
    return PublicCopy(public, tuple(kept), dropped)
