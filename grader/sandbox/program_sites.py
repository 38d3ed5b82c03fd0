"""What the measurement reads of a program's module, read once: its collectives and its per-device computations.

The measurement (grader.sandbox.program_ablation, grader.sandbox.program_ring_steps) asks the same questions of the
module more than once: which collectives are the same computation (XLA merges those), which are ppermutes, which
run inside a per-device computation, what each per-device computation takes and returns. A walk of a module from
Python costs about what a run of a variant does, so the clean worker reads all of it in one walk of the module it
has already parsed and labelled (grader.sandbox.program_labels), before anything is measured.
"""

from __future__ import annotations

import dataclasses

from grader.protocol import PROGRAM_COLLECTIVES
from grader.sandbox.program_check import MANUAL, context, functions
from grader.sandbox.program_labels import index_of


@dataclasses.dataclass(frozen=True)
class Sites:
    """``kinds``: each collective's operation name, by index; ``signatures``: what makes two collectives the same
    computation bar their channel; ``inside``: the collectives inside a per-device computation or a function one
    calls (a lax.fori_loop's body is one: a ring's ppermutes live there); ``manual``: for each per-device
    computation, in the order program_check.manual_computations gives them, the types of its operands and of its
    results."""

    kinds: dict
    signatures: dict
    inside: frozenset
    manual: list


def _signature(op) -> str:
    attributes = sorted((name, str(op.attributes[name])) for name in op.attributes if name != "channel_handle")
    body = [inner.name for region in op.regions for block in region.blocks for inner in block.operations]
    return repr((op.name, [str(v.type) for v in op.operands], [str(r.type) for r in op.results], attributes, body))


def read(module) -> Sites:
    """The :class:`Sites` of ``module`` (parsed and labelled, in program_check.context)."""
    from jaxlib.mlir import ir

    kinds, signatures, manual, inside, walked = {}, {}, [], set(), set()
    named = functions(module)

    def visit(op):
        op = op.operation
        if op.name in PROGRAM_COLLECTIVES and index_of(op) is not None:
            kinds[index_of(op)], signatures[index_of(op)] = op.name, _signature(op)
        elif op.name == MANUAL:
            manual.append(op)
        return ir.WalkResult.ADVANCE

    def within(op):
        op = op.operation
        if op.name in PROGRAM_COLLECTIVES and index_of(op) is not None:
            inside.add(index_of(op))
        if op.name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee not in walked and callee in named:
                walked.add(callee)
                named[callee].walk(within)
        return ir.WalkResult.ADVANCE

    with context():
        module.operation.walk(visit)
        for computation in manual:
            computation.walk(within)
    return Sites(kinds, signatures, frozenset(inside),
                 [([str(v.type) for v in op.operands], [str(r.type) for r in op.results]) for op in manual])
