"""Pictures a case can attach for the student: what the program communicated, where the array lived.

This chapter is about what devices send each other and which device holds which data, so a verdict
reads better next to the evidence. A test attaches it while it runs; the report shows it under a
failing task (text) and keeps it with every case (JSON ``feedback``):

* :func:`communication`: the collectives a compiled program runs, with bytes per device, next to
  what the reference's program compiled the same way runs, measured, and the first difference that
  matters (grader.suite.structure), e.g. "ran: 1 all-reduce (psum) of 48 bytes per device; reference:
  1 all-reduce (psum) of 4 bytes per device; difference: your all-reduces move 48 bytes per device;
  the reference's move 4";
* :func:`layout`: which device holds which rows or block, expected against what the student's array
  had, as a small text grid (one grid row per mesh row; ``*`` marks a cell that differs);
  :func:`rows_held` names the rows of an input a block holds, for cells of such a grid.

Outside a grading run (a suite's own unit test) attaching does nothing. Everything here runs in the
grader's process on plain data.
"""

from __future__ import annotations

import contextlib

import numpy as np

from grader.layout import plural
from grader.suite import hlo, structure

_recording: list[list[dict]] = []


@contextlib.contextmanager
def recording():
    """Collect what the code inside attaches (the grader wraps each test call in this)."""
    notes: list[dict] = []
    _recording.append(notes)
    try:
        yield notes
    finally:
        _recording.remove(notes)


def _attach(note: dict) -> dict:
    if _recording:
        _recording[-1].append(note)
    return note


def ran(text: str, by_student: bool = True, mesh: tuple | None = None) -> list[str]:
    """The collectives of the HLO ``text`` as phrases: "2 all-reduces (psum) of 4 bytes per device", the
    program's own first, with the mesh axes they run over where ``mesh`` (axis names, sizes) is given; an
    idle one (grader.suite.hlo) is named as such, since it is counted nowhere."""
    return structure.listing(hlo.collectives(text), mesh, by_student)


def communication(program, needed: str | None = None, by_student: bool = True, mesh: tuple | None = None) -> dict:
    """Attach what the compiled ``program`` communicates (the collectives the student wrote, or all of them
    with ``by_student=False``). A program from ``student.program`` is shown next to what the reference's
    program compiled the same way runs, measured (grader.suite.structure), and the first difference between
    the two that matters; ``needed``, one phrase in the task's words, is added where it teaches more than
    the measured listing. ``program`` may be bare HLO text, shown next to ``needed`` alone. ``mesh``: (axis
    names, sizes) for naming axes, by default the one the program was compared on (``compare=``)."""
    text = program if isinstance(program, str) else program.hlo
    mesh = mesh or getattr(program, "mesh", None)
    phrases = ran(text, by_student, mesh)
    sent = hlo.bytes_moved(text, by_student=by_student)
    shown = (phrases or ["no collectives"]) + ([f"{plural(sent, 'byte')} per device in all"] if sent and len(phrases) > 1 else [])
    compared = not isinstance(program, str) and program.reference is not None
    reference = program.reference_collectives() if compared else None
    listed = None if reference is None else structure.listing(reference, mesh, by_student) or ["no collectives"]
    differs = program.difference(mesh) if compared else None
    lines = {"ran:": shown, "reference:": listed, "needed:": needed and [needed], "difference:": differs and [differs]}
    lines = {label: said for label, said in lines.items() if said}
    if not differs and listed == phrases and not needed:  # the same as the reference's: say so once
        text_lines = [f"ran:    {', '.join(shown)}, as the reference's program does"]
    elif not differs and listed is None and shown == [needed]:
        text_lines = [f"ran:    {needed}, as needed"]
    else:
        width = max(map(len, lines)) + 1
        text_lines = [(label.ljust(width) if i == 0 else " " * width) + said
                      for label, lines_of_label in lines.items() for i, said in enumerate(lines_of_label)]
    return _attach({"kind": "communication", "what": getattr(program, "what", ""), "ran": phrases,
                    "bytes_per_device": sent, "needed": needed, "reference": listed, "difference": differs,
                    "text": text_lines})


def ranges(indices: list[int]) -> str:
    """Indices as runs: "0-2, 6-8", the first three runs and "..." past four."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs]
    return ", ".join(parts if len(parts) <= 4 else parts[:3] + ["..."])


def rows_held(x, block) -> str:
    """Which rows of ``x`` the rows of ``block`` are, in order ("rows 0-2", "rows 0, 2, 4"); "?" marks a
    row that is none of x's (padding, or a value computed instead of moved)."""
    x, block = np.asarray(x), np.asarray(block)
    found = [next((i for i, r in enumerate(x) if np.array_equal(row, r)), None) for row in block] if block.ndim else []
    if not found:
        return "nothing"
    if None in found:
        known = [i for i in found if i is not None]
        return f"rows {ranges(known)} + {found.count(None)} other" if known else f"{len(found)} other rows"
    return f"row{'s' if len(found) > 1 else ''} {ranges(found)}"


def _grid_lines(grid: list[list[str]], width: int, marks: list[list[bool]] | None = None) -> list[str]:
    return ["| " + " | ".join(("*" if marks and marks[r][c] else "") + cell.ljust(width + 1 - bool(marks and marks[r][c]))
                              for c, cell in enumerate(row)) + " |" for r, row in enumerate(grid)]


def layout(what: str, expected: list[list[str]], got: list[list[str]]) -> dict:
    """Attach a device-layout picture of ``what``: ``expected`` and ``got`` are grids of cell labels such
    as "d0: rows 0-2", one grid row per mesh row (a line of devices: one device per grid row), drawn
    side by side with a ``*`` on each of the student's cells that differs; where the two are the same it
    shows nothing to change, so its text is empty (the report prints no picture; JSON keeps both grids)."""
    note = {"kind": "layout", "what": what, "expected": expected, "got": got}
    if expected == got:
        return _attach({**note, "text": []})
    width = max(len(cell) for grid in (expected, got) for row in grid for cell in row)
    same_shape = [len(r) for r in expected] == [len(r) for r in got]
    marks = [[cell != want for cell, want in zip(row, wanted)] for row, wanted in zip(got, expected)] \
        if same_shape else None
    left, right = _grid_lines(expected, width), _grid_lines(got, width, marks)
    pad = max(len(line) for line in left)
    differs = "  (* differs)" if marks and any(map(any, marks)) else ""
    lines = [f"device layout of {what}:", f"  {'expected'.ljust(pad)}   yours{differs}"]
    lines += [f"  {a.ljust(pad)}   {b}" for a, b in zip(left + [""] * len(right), right + [""] * len(left))
              if a or b]
    return _attach({**note, "text": lines})
