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
added for. Block arguments lose their locations, so no instruction is named by the student.
"""

from __future__ import annotations

import re

from grader.protocol import LABEL_SEPARATOR
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


def relabel(module) -> bytes:
    """Name each operation of ``module`` (parsed in :func:`grader.sandbox.program_check.context`) by its
    kind and label, in place; returns the module as MLIR bytecode, for ``jax.export``'s ``Exported``."""
    from jax._src.interpreters import mlir
    from jaxlib.mlir import ir

    def visit(op):
        op = op.operation
        op.location = ir.Location.name(f"{op.name}{LABEL_SEPARATOR}{label(str(op.location))}")
        for region in op.regions:
            for block in region.blocks:
                for argument in block.arguments:
                    argument.set_location(ir.Location.unknown())
        return ir.WalkResult.ADVANCE

    with context():
        module.operation.walk(visit)
        return mlir.module_to_bytecode(module)
