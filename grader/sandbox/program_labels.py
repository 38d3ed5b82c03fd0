"""Naming every operation of a program by what it is, before a clean worker compiles it.

Structural checks ask which collectives a program *holds* (the student's ``psum``) and which XLA's
SPMD partitioner *added* while compiling it (an all-reduce to read element 0 of a sharded result).
The compiled HLO says where an instruction came from only in its ``op_name`` metadata, which XLA
copies from the location of the StableHLO operation it was made from, and a location is whatever
the student's process wrote: a hand-edited module can call its psum "squeeze". So the clean worker
throws every location away and names each operation itself, ``KIND:LABEL``
(:data:`grader.protocol.LABEL_SEPARATOR`): KIND is the operation (``stablehlo.all_reduce``), read
from the program and so true of it; LABEL is the last name of the student's location (``psum``),
kept only to word messages and reduced to letters, digits and ``_``. A collective the program holds
ends up named after a collective operation; one the partitioner added, after the operation it was
added for. Each collective of the program also gets its place in the module, ``KIND:LABEL:cN``, by
which the compiled instructions it became map back to what the clean worker measured of it
(:mod:`grader.sandbox.program_ablation`). Block arguments lose their locations, so no instruction is
named by the student.
"""

from __future__ import annotations

import re

from grader.protocol import COLLECTIVE_INDEX, LABEL_SEPARATOR, PROGRAM_COLLECTIVES
from grader.sandbox.program_check import context

_FIRST_NAME = re.compile(r'"([^"]*)"')
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


def label(location: str) -> str:
    """The primitive a location's first name ends with ("jit(f)/squeeze" -> "squeeze"), or ""."""
    found = _FIRST_NAME.search(location)
    if not found:
        return ""
    last = re.sub(r"\[.*$", "", found.group(1).rstrip("/").rsplit("/", 1)[-1])
    return last if _LABEL.fullmatch(last) else ""


def index_suffix(index: int) -> str:
    """What ends the name of the program's collective number ``index``."""
    return f"{LABEL_SEPARATOR}{COLLECTIVE_INDEX}{index}"


_INDEX = re.compile(re.escape(index_suffix(0)[:-1]) + r'(\d+)"')


def index_of(operation) -> int | None:
    """The place :func:`relabel` gave the collective ``operation`` (an MLIR operation), or None."""
    found = _INDEX.search(str(operation.location))
    return int(found.group(1)) if found else None


def relabel(module) -> tuple[bytes, int]:
    """Name each operation of ``module`` (parsed in :func:`grader.sandbox.program_check.context`) by its
    kind and label, and each collective also by its place, in place; returns the module as MLIR
    bytecode, for ``jax.export``'s ``Exported``, and how many collectives it holds."""
    from jax._src.interpreters import mlir
    from jaxlib.mlir import ir

    collectives = 0

    def visit(op):
        nonlocal collectives
        op = op.operation
        name = f"{op.name}{LABEL_SEPARATOR}{label(str(op.location))}"
        if op.name in PROGRAM_COLLECTIVES:
            name, collectives = name + index_suffix(collectives), collectives + 1
        op.location = ir.Location.name(name)
        for region in op.regions:
            for block in region.blocks:
                for argument in block.arguments:
                    argument.set_location(ir.Location.unknown())
        return ir.WalkResult.ADVANCE

    with context():
        module.operation.walk(visit)
        return mlir.module_to_bytecode(module), collectives


def surviving(hlo_text: str, collectives: int) -> list[int]:
    """The program's collectives some instruction of the compiled HLO came from (XLA drops the dead
    ones and merges duplicates into one)."""
    return [i for i in range(collectives) if re.search(re.escape(index_suffix(i)) + r'["/:)]', hlo_text)]


def mark(hlo_text: str, indices, word: str) -> str:
    """``hlo_text`` with the name of each collective in ``indices`` ending in ``:word`` (IDLE_MARK, FRESH_MARK):
    the measurement travels with the text the suites read (grader.suite.hlo, grader.suite.rings)."""
    for i in indices:
        hlo_text = re.sub(re.escape(index_suffix(i)) + r'(?=["/:)])', index_suffix(i) + LABEL_SEPARATOR + word,
                          hlo_text)
    return hlo_text
