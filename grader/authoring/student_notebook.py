"""The exercise as a notebook for students who work in Jupyter or Colab (``grade release`` writes it).

One section per module: its statement (the stub's docstring) as markdown, then the stub's code as a
code cell marked ``# grade: MODULE`` (see :mod:`grader.notebook.cells`), and a last cell that grades
what the kernel has run with ``notebook.check()``. The stub's ``if __name__ == "__main__":`` block is
left out: in a notebook ``__name__`` is ``"__main__"`` and ``__file__`` does not exist.
"""

from __future__ import annotations

import ast
import json
import os

from grader.course import Exercise
from grader.submission import expected_modules

INTRO = """# {title}

Each section below is one module of {exercise}: read the statement, fill in the code cell under it
(keep its first line, `# grade: MODULE`: it tells the grader which module the cell is), and run it.
The last cell grades the cells you have run; `notebook.check("dot")` grades one task. On a machine
with one CPU, start your own experiments with `jax.config.update("jax_num_cpu_devices", 4)` before
the first JAX call to get 4 devices, as the grader does.
"""
GRADE_CELL = "from grader import notebook\n\nnotebook.check()  # or notebook.check(\"dot\"): one task"


def _cell(kind: str, number: int, source: str) -> dict:
    cell = {"cell_type": kind, "id": f"{kind}-{number}", "metadata": {}, "source": source.strip("\n").splitlines(True)}
    return {**cell, "execution_count": None, "outputs": []} if kind == "code" else cell


def split_stub(source: str) -> tuple[str, str]:
    """(statement, code) of a stub: its docstring, and the code between it and its ``__main__`` block."""
    tree = ast.parse(source)
    statement = ast.get_docstring(tree) or ""
    body = tree.body[1:] if statement else tree.body
    if body and isinstance(body[-1], ast.If) and ast.unparse(body[-1].test) == "__name__ == '__main__'":
        body = body[:-1]
    lines = source.splitlines(True)
    start = tree.body[0].end_lineno if statement else 0
    end = body[-1].end_lineno if body else start
    return statement, "".join(lines[start:end]).strip("\n")


def build(exercise: Exercise, stubs: str) -> str:
    """The notebook (nbformat 4 JSON) for ``exercise``, whose stubs are in the folder ``stubs``."""
    cells = [_cell("markdown", 0, INTRO.format(title=exercise.title, exercise=exercise.name))]
    for number, module in enumerate(exercise.in_task_order(expected_modules(stubs)), 1):  # as the course lists them
        with open(os.path.join(stubs, module + ".py"), encoding="utf-8") as f:
            statement, code = split_stub(f.read())
        cells.append(_cell("markdown", number, f"## {module}.py\n\n{statement}"))
        cells.append(_cell("code", number, f"# grade: {module}\n{code}"))
    cells.append(_cell("markdown", len(cells), "## Grade"))
    cells.append(_cell("code", len(cells), GRADE_CELL))
    notebook = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                            "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=1) + "\n"
