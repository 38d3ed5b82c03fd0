"""The release's last word: read back every file it wrote and look for what must not be there.

Worked out from the instructors' sources, not from what the release meant to write, so a bug in the
cutting (or a stub, probe or README that quotes too much) is still caught:

- solution code: a file equal to a solution file, or any longer line of a solution that is not
  also in the engine or in the stubs' docstrings and comments (those are public anyway);
- hidden tests: the name of any test whose visibility is not ``visible``, and any longer string
  that only hidden tests contain (their messages, docstrings, f-string pieces).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field, replace

from grader.course import Course, Exercise
from grader.authoring.public_suite import collected_tests, references

MIN_STRING = 16  # shorter strings ("wrong", "x") are too common to mean anything
MIN_LINE = 20
MAX_PROBLEMS = 12
_NOT_SOLUTION = ("import ", "from ", "def ", "async def ", "class ", "@")  # lines stubs share with solutions


@dataclass(frozen=True)
class Forbidden:
    solution_files: dict[str, str] = field(default_factory=dict)  # path for messages -> normalised text
    solution_lines: dict[str, str] = field(default_factory=dict)  # stripped line -> path it comes from
    hidden_tests: frozenset[str] = frozenset()
    hidden_strings: dict[str, str] = field(default_factory=dict)  # string -> hidden test it comes from

    def for_autograder(self) -> Forbidden:
        """The checks for the autograder, which only instructors see: it must hold the hidden tests,
        and its probes may share lines with a solution, but no solution file belongs in it."""
        return replace(self, solution_lines={}, hidden_tests=frozenset(), hidden_strings={})


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").strip()


def _read(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def tree_files(top: str):
    """Every file under ``top`` (none if it does not exist), caches left out, in a stable order."""
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".pyc"):
                yield os.path.join(root, name)


def _strings(node: ast.AST) -> set[str]:
    return {n.value.strip() for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _hidden(course: Course, exercise: Exercise, public_text: str) -> tuple[frozenset[str], dict[str, str]]:
    names, strings = set(), {}
    suite = os.path.join(course.root, exercise.suite)
    for task in exercise.tasks:
        names |= {t for t, rule in task.tests.items() if rule.visibility != "visible"}
        for filename in task.files:
            path = os.path.join(suite, filename)
            if not os.path.isfile(path):
                continue
            tree = ast.parse(_read(path))
            hidden = [n for n in collected_tests(tree) if task.rule(n.name).visibility != "visible"]
            names |= {n.name for n in hidden}
            elsewhere = "\n".join(references(tree.body, {id(n) for n in hidden}))
            for node in hidden:
                for s in _strings(node):
                    if len(s) >= MIN_STRING and s not in elsewhere and s not in public_text:
                        strings.setdefault(s, node.name)
    return frozenset(names), strings


def _prose(text: str) -> str:
    """The docstrings, strings and comments of a Python file: what a stub may share with a solution."""
    try:
        strings = _strings(ast.parse(text))
    except SyntaxError:
        return text
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    return "\n".join([*strings, *comments])


def forbidden(course: Course, exercise: Exercise, engine_dir: str) -> Forbidden:
    """What no student file may contain.

    The engine, the rubric's titles and hints and the stubs are public by definition, so their text
    never counts against a file; for solution lines only the stubs' prose counts (a stub's *code*
    sharing a line with the solution is a leak), and import, def and class lines never count.
    """
    rubric = "\n".join(f"{t.title}\n{t.hint}" for t in exercise.tasks)
    engine = "\n".join(_read(p) for p in tree_files(engine_dir)) + rubric
    stubs = {p: _read(p) for p in tree_files(os.path.join(course.root, exercise.stubs))}
    public_text = engine + "\n".join(stubs.values())
    prose = engine + "\n".join(_prose(t) if p.endswith(".py") else t for p, t in stubs.items())
    solutions = os.path.join(course.root, exercise.solutions)
    files, lines = {}, {}
    for path in tree_files(solutions):
        label = os.path.relpath(path, course.root)
        files[label] = _normalise(_read(path))
        if path.endswith(".py"):
            for line in files[label].splitlines():
                line = line.strip()
                if len(line) >= MIN_LINE and not line.startswith(_NOT_SOLUTION) and line not in prose:
                    lines.setdefault(line, label)
    hidden_tests, hidden_strings = _hidden(course, exercise, public_text)
    return Forbidden(files, lines, hidden_tests, hidden_strings)


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def scan(top: str, rules: Forbidden) -> list[str]:
    """One sentence per leak found in the files under ``top`` (empty when the tree is clean)."""
    problems = []
    names = re.compile(r"\b(" + "|".join(map(re.escape, sorted(rules.hidden_tests))) + r")\b") \
        if rules.hidden_tests else None
    solution_texts = {text: label for label, text in rules.solution_files.items() if text}
    for path in tree_files(top):
        rel = os.path.relpath(path, top)
        text = _read(path)
        if _normalise(text) in solution_texts:
            problems.append(f"{rel} is a copy of the solution {solution_texts[_normalise(text)]}")
            continue  # every line of it would be reported again
        lines = [f"{rel} contains a line of the solution {src}: {_short(line)!r}"
                 for line, src in rules.solution_lines.items() if line in text]
        problems += lines[:3] + ([f"{rel} contains {len(lines) - 3} more lines of solutions"] if len(lines) > 3 else [])
        if names:
            problems += [f"{rel} names the hidden test {m}" for m in sorted(set(names.findall(text)))]
        problems += [f"{rel} contains text only the hidden test {test} has: {_short(s)!r}"
                     for s, test in rules.hidden_strings.items() if s in text]
    return problems[:MAX_PROBLEMS] + ([f"... and {len(problems) - MAX_PROBLEMS} more"]
                                      if len(problems) > MAX_PROBLEMS else [])
