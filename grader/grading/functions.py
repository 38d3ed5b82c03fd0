"""Which of a task's functions a failed case is about, so a report shows the first failure of each.

A task may ask for several functions (basics: square_plus_one, per_device_sum, per_device_matmul). When
only the task's first failure is shown, a second broken function appears only after the first is
fixed. Every failure message names the call it is about, as the student wrote it ("per_device_sum(x)
with x of shape (4, 3) ..."); the stub module lists the functions the task asks for. The earliest of
those names in a message is the function the case failed on.
"""

from __future__ import annotations

import ast
import os
import re

from grader.course import Exercise
from grader.submission import stub_sources


def _public_functions(source: str) -> tuple[str, ...]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    return tuple(node.name for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"))


def task_functions(stubs: str, exercise: Exercise) -> dict[str, tuple[str, ...]]:
    """task id -> the public functions of the stub module that holds it (from the stubs folder)."""
    found = {}
    if not os.path.isdir(stubs):
        return found
    for module, source in stub_sources(stubs).items():
        for task in exercise.tasks_of_module(module):
            found[task.id] = _public_functions(source)
    return found


def named_function(message: str, functions: tuple[str, ...]) -> str | None:
    """The function of ``functions`` that ``message`` names first (as a whole word), or None."""
    places = [(m.start(), name) for name in functions
              for m in [re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)] if m]
    return min(places)[1] if places else None
