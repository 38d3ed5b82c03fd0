"""A notebook as a submission: code cells marked ``# grade: MODULE`` become the exercise's modules.

Students who work in Jupyter, Colab or VS Code keep one notebook instead of one file per task. The
convention is one line: a code cell whose first line is ``# grade: dot`` is the module ``dot.py``;
unmarked cells (scratch work, plots) are not graded. The cell's text is the module as is, marker
included, so a line number in the report is a line of the cell. A marked cell must be plain Python
(no ``%magic`` or ``!shell`` lines), since it is imported like a file.

Notebooks are read as the JSON they are (nbformat 4, as Jupyter, Colab and VS Code save them), so
grading one needs no Jupyter package, in a batch or on Gradescope alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile

from grader.errors import UsageError

SUFFIX = ".ipynb"
MARKER = re.compile(r"#\s*grade:\s*(\S+)\s*$", re.I)
_NAME = re.compile(r"[A-Za-z_]\w*")


def module_of(source: str) -> str | None:
    """The module a cell's text is marked as (``# grade: dot`` on its first line), or None."""
    first = source.lstrip("\n").split("\n", 1)[0].strip()
    m = MARKER.fullmatch(first)
    return m.group(1).removesuffix(".py") if m else None


def _text(source) -> str:
    """A cell's source: nbformat stores it as one string or as a list of lines."""
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise TypeError(f"a cell's source is {type(source).__name__}, not text")


def code_cells(path: str) -> list[str]:
    """The text of every code cell of the notebook at ``path``, in order."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            notebook = json.load(f)
        return [_text(c["source"]) for c in notebook["cells"] if c.get("cell_type") == "code"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path} is not a notebook the grader can read (nbformat 4 JSON): "
                         f"{type(exc).__name__}: {exc}") from None


def modules(sources: list[str], expected: tuple[str, ...], where: str, latest_wins: bool = False) -> dict[str, str]:
    """module -> source from cell texts. Two cells marked alike are an error (``latest_wins``: the later
    one counts, as when a kernel ran an edited cell again); so is a marker naming no module of the exercise."""
    found: dict[str, tuple[int, str]] = {}
    for number, source in enumerate(sources, 1):
        name = module_of(source)
        if name is None:
            continue
        if not _NAME.fullmatch(name) or (expected and name not in expected):
            known = ", ".join(expected) or "(none)"
            raise UsageError(f"code cell {number} of {where} is marked '# grade: {name}', which is not a module of "
                             f"this exercise; mark each cell with one of: {known}")
        if name in found and not latest_wins:
            raise UsageError(f"code cells {found[name][0]} and {number} of {where} are both marked '# grade: {name}': "
                             "keep the module in one cell, or unmark the other")
        found[name] = (number, source)
    if not found:
        raise UsageError(f"no code cell of {where} is marked for grading: start each cell that holds a task's "
                         f"module with a line such as '# grade: {expected[0] if expected else 'dot'}'")
    return {name: source for name, (_, source) in found.items()}


def missing_note(found: dict[str, str], expected: tuple[str, ...]) -> str:
    """A sentence for the report naming the modules no cell holds (their tasks score zero)."""
    missing = [m for m in expected if m not in found]
    return f"the notebook has no cell marked for {', '.join(missing)}: those tasks are graded as missing" if missing \
        else ""


def write(found: dict[str, str], folder: str) -> None:
    for name, source in found.items():
        with open(os.path.join(folder, f"{name}.py"), "w", encoding="utf-8") as f:
            f.write(source if source.endswith("\n") else source + "\n")


def _the_notebook_in(path: str) -> str | None:
    """A folder holding no Python file and exactly one notebook (a Gradescope upload of work.ipynb): that notebook."""
    if not os.path.isdir(path):
        return None
    names = os.listdir(path)
    notebooks = [n for n in names if n.endswith(SUFFIX)]
    if any(n.endswith(".py") for n in names) or not notebooks:
        return None
    if len(notebooks) > 1:
        raise UsageError(f"{path} holds {len(notebooks)} notebooks ({', '.join(sorted(notebooks))}) and no module: "
                         "submit one notebook")
    return os.path.join(path, notebooks[0])


@contextlib.contextmanager
def as_folder(path: str, expected: tuple[str, ...]):
    """(folder, note): ``path`` itself when it is not a notebook, else a temporary folder of the notebook's
    modules (removed afterwards) and a note naming the modules it lacks."""
    notebook = path if path.endswith(SUFFIX) and os.path.isfile(path) else _the_notebook_in(path)
    if notebook is None:
        yield path, ""
        return
    found = modules(code_cells(notebook), expected, os.path.basename(notebook))
    folder = tempfile.mkdtemp(prefix="grade-notebook-")
    try:
        write(found, folder)
        yield folder, missing_note(found, expected)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
