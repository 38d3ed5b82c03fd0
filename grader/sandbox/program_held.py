"""How much of each input one device's per-device computation receives: measured on the program.

A task that splits its inputs over the devices ("no device needs the whole vectors"; FSDP's
parameters in blocks) can be answered right with the right collectives and each device's share of
the arithmetic while every device still receives every input whole: a ``jax.pmap`` with
``in_axes=None`` that slices its part by ``axis_index``, a ``shard_map`` whose in_specs are ``P()``,
a ``device_put`` to ``P()`` before it. The compiled program cannot tell: once partitioned, a device
slicing its block out of a whole input looks like a device handed its block. The program the
student's process exported can: every ``jax.pmap`` and ``jax.shard_map`` is an
``sdy.manual_computation`` there, whose body's arguments have the per-device types.

So for each input of the program (an argument of its ``main``) this follows the values computed
from it, through calls of the module's functions and into nested regions, to the operands of every
manual computation, and gives the largest share of that input one device receives as such an
operand: the operand's per-device bytes over the bytes of the inputs it is computed from (a block
of x: 1/n; x padded and handed over whole: a little more than 1). An input that reaches no manual
computation has no share (None). grader.suite.work compares the shares with the reference's.
"""

from __future__ import annotations

import re

from grader.sandbox.program_check import MANUAL, context, functions

CALL = "func.call"


def _bytes(type_) -> int:
    """Bytes of a ranked tensor type (1 for a scalar's elements count), 0 for any other type."""
    from jaxlib.mlir import ir

    try:
        shaped = ir.RankedTensorType(type_)
    except ValueError:
        return 0
    bits = re.search(r"\d+", str(shaped.element_type))
    size = 1
    for d in shaped.shape:
        size *= d
    return size * max(1, (int(bits.group()) if bits else 32) // 8)


class _Flow:
    """The inputs of ``main`` each value is computed from, and what manual computations receive of them."""

    def __init__(self, module):
        self.functions = functions(module)
        self.inputs: list[int] = []  # each input's bytes
        self.shares: list[float | None] = []
        self._called: dict = {}

    def function(self, name: str, sources: tuple) -> list[frozenset]:
        """The sources of function ``name``'s results, its arguments computed from ``sources``."""
        key = (name, sources)
        if key not in self._called:
            self._called[key] = []  # a recursive call sees no sources: no module of jax.export recurses
            func = self.functions.get(name)
            if func is None:
                return []
            block = func.regions[0].blocks[0]
            env = dict(zip(block.arguments, sources))
            self._called[key] = self.block(block, env)
        return self._called[key]

    def block(self, block, env: dict) -> list[frozenset]:
        """Walk ``block``'s operations; the sources of what its terminator returns."""
        from jaxlib.mlir import ir

        returned: list[frozenset] = []
        for op in block.operations:
            op = op.operation
            ins = [env.get(v, frozenset()) for v in op.operands]
            everything = frozenset().union(*ins)
            if op.name == CALL:
                outs = self.function(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, tuple(ins))
            else:
                if op.name == MANUAL:
                    self._receive(op, ins)
                outs = self._regions(op, ins, everything, env)
            if len(outs) != len(op.results):
                outs = [everything] * len(op.results)
            env.update(zip(op.results, outs))
            if not op.results:
                returned = ins
        return returned

    def _regions(self, op, ins: list[frozenset], everything: frozenset, env: dict) -> list[frozenset]:
        """Walk the regions of ``op``; the sources of its results where they are a loop's carry. A region
        whose arguments match the operands one to one (a loop's carry) gets each its operand's sources,
        and what the region returns is fed back until nothing new arrives; any other, all of them."""
        carried: list[frozenset] = []
        for region in op.regions:
            for inner in region.blocks:
                arguments = list(inner.arguments)
                if len(arguments) != len(ins):
                    self.block(inner, {**env, **{a: everything for a in arguments}})
                    continue
                sources = list(ins)
                for _ in range(len(ins) + 1):
                    returned = self.block(inner, {**env, **dict(zip(arguments, sources))})
                    if len(returned) != len(sources):
                        break
                    grown = [a | r for a, r in zip(sources, returned)]
                    if grown == sources:
                        break
                    sources = grown
                carried = sources
        return carried

    def _receive(self, op, ins: list[frozenset]) -> None:
        body = op.regions[0].blocks[0]
        for sources, argument in zip(ins, body.arguments):
            whole = sum(self.inputs[i] for i in sources)
            if not whole:
                continue
            share = _bytes(argument.type) / whole
            for i in sources:
                self.shares[i] = max(self.shares[i] or 0.0, share)


def _name(argument, index: int) -> str:
    """The input's name in the traced function's signature (``loc("x")``), for messages only: letters,
    digits and ``_``, else its position."""
    found = re.fullmatch(r'loc\("([A-Za-z_][A-Za-z0-9_]{0,39})"\)', str(argument.location))
    return found.group(1) if found else f"input {index + 1}"


def shares(module) -> list[tuple[str, float | None]] | None:
    """For each input of the parsed module's ``main``, its name and the largest share of it one device's
    per-device computation receives (see the module's docstring), None where it reaches none; None for a
    module nested deeper than the flow can follow (no program JAX exports is), which counts as the worst."""
    with context():
        flow = _Flow(module)
        main = flow.functions.get("main")
        if main is None:
            return []
        arguments = list(main.regions[0].blocks[0].arguments)
        flow.inputs = [_bytes(a.type) for a in arguments]
        flow.shares = [None] * len(arguments)
        try:
            flow.function("main", tuple(frozenset({i}) for i in range(len(arguments))))
        except RecursionError:
            return None
        return [(_name(a, i), None if s is None else round(s, 6)) for i, (a, s) in enumerate(zip(arguments, flow.shares))]
