"""A program run on two sets of inputs in lock step, so that one run can take a value from the other.

Zeros and scaling (:mod:`grader.sandbox.program_ablation`) tell whether an answer moves with a
collective's result; they cannot tell whether the result carries anything of the inputs. A psum of a
constant whose 1 multiplies an answer XLA's partitioner computed moves the answer with it, and carries
nothing. So the clean worker also *transplants*: it runs the program on one set of inputs with the
collective's results taken from a run on another set. A result that carries the inputs' data changes
the answer (a sum, a block passed on, a gathered weight are another set's); one that carries a constant,
or a fact every set shares, leaves it as it was, and the collective is idle.

The other set's run must sit beside this one's, step for step: a collective inside a jax.pmap, a
loop or a branch has a result only there. So the program is rewritten with two lanes, B (the other set,
its inputs written in as constants) and A (the program's own inputs), each operation once per lane:
a function call is inlined; a per-device computation (``sdy.manual_computation``) runs both lanes' bodies
in one, so each device holds both; a loop runs both lanes' carries, while either lane's condition holds,
each lane's carry moving only while its own does; a branch (``stablehlo.if``, ``stablehlo.case``) runs every
branch of both lanes and selects each lane's results (the course's programs have no side effects: the
program check refuses them). Lane A then reads lane B's result wherever it read the transplanted one.
A program the rewrite cannot express (a loop carrying a token) gets no transplant, and the other
measurements decide.
"""

from __future__ import annotations

import collections

import numpy as np

from grader.sandbox.program_check import MANUAL, context, functions, manual_computations
from grader.sandbox.program_labels import index_of

_BRANCHES = ("stablehlo.if", "stablehlo.case")


class _Inexpressible(Exception):
    """The program holds something the two-lane rewrite does not express."""


def _constant(kind, value: np.ndarray):
    """A constant of MLIR type ``kind`` holding ``value``."""
    from jaxlib.mlir import ir

    return ir.Operation.create("stablehlo.constant", results=[kind], attributes={
        "value": ir.DenseElementsAttr.get(np.ascontiguousarray(value), type=ir.RankedTensorType(kind).element_type,
                                          shape=list(np.shape(value)))}).result


def _select(predicate, on_true, on_false):
    from jaxlib.mlir import ir

    if not isinstance(on_true.type, ir.RankedTensorType):
        raise _Inexpressible
    return ir.Operation.create("stablehlo.select", results=[on_true.type],
                               operands=[predicate, on_true, on_false]).result


def _equal(value, number: int):
    from jaxlib.mlir import ir

    direction = ir.Attribute.parse("#stablehlo<comparison_direction EQ>")
    boolean = ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))
    index = _constant(ir.RankedTensorType.get([], ir.IntegerType.get_signless(32)), np.array(number, np.int32))
    return ir.Operation.create("stablehlo.compare", results=[boolean], operands=[value, index],
                               attributes={"comparison_direction": direction}).result


class _Lanes:
    """Writes a block's operations twice, lane B then lane A, at the current insertion point."""

    def __init__(self, called: dict, indices: set[int], manual):
        self.called, self.indices, self.manual = called, indices, manual

    def block(self, block, a: dict, b: dict, arguments=None) -> tuple[list, list]:
        """Writes ``block``'s operations bar its terminator; (lane A's, lane B's) values of what it returns.
        ``arguments``: each lane's values for the block's arguments."""
        a, b = collections.ChainMap({}, a), collections.ChainMap({}, b)
        if arguments is not None:
            for argument, in_a, in_b in zip(block.arguments, *arguments):
                a[argument], b[argument] = in_a, in_b
        operations = list(block.operations)
        for op in operations[:-1]:
            self.operation(op, a, b)
        end = operations[-1].operands
        return [_get(a, v) for v in end], [_get(b, v) for v in end]

    def operation(self, op, a, b) -> None:
        name = op.name
        if name == "func.call":
            from jaxlib.mlir import ir

            callee = self.called.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            if callee is None or not len(callee.regions[0].blocks):
                raise _Inexpressible
            ins = [[_get(lane, v) for v in op.operands] for lane in (a, b)]
            outs = self.block(callee.regions[0].blocks[0], {}, {}, ins)
        elif name == "stablehlo.while":
            outs = self.loop(op, a, b)
        elif name in _BRANCHES:
            outs = self.branches(op, a, b)
        elif name == MANUAL:
            outs = self.per_device(op, a, b)
        else:
            in_b = _clone(op, b)
            transplanted = index_of(op) in self.indices
            outs = (list(in_b.results) if transplanted else list(_clone(op, a).results), list(in_b.results))
        for result, in_a, in_b in zip(op.results, *outs):
            a[result], b[result] = in_a, in_b

    def loop(self, op, a, b) -> tuple[list, list]:
        from jaxlib.mlir import ir

        kinds = [v.type for v in op.operands]
        if not all(isinstance(k, ir.RankedTensorType) for k in kinds):
            raise _Inexpressible
        n = len(kinds)
        fused = ir.Operation.create("stablehlo.while", results=kinds * 2,
                                    operands=[_get(b, v) for v in op.operands] + [_get(a, v) for v in op.operands],
                                    regions=2)
        condition, body = (r.blocks[0] for r in op.regions)
        both = [ir.Block.create_at_start(fused.regions[i], kinds * 2, [ir.Location.unknown()] * 2 * n)
                for i in range(2)]
        with ir.InsertionPoint(both[0]):
            carried = (list(both[0].arguments)[n:], list(both[0].arguments)[:n])
            (going_a,), (going_b,) = self.block(condition, a, b, carried)
            either = ir.Operation.create("stablehlo.or", results=[going_a.type], operands=[going_b, going_a]).result
            ir.Operation.create("stablehlo.return", operands=[either])
        with ir.InsertionPoint(both[1]):
            carried = (list(both[1].arguments)[n:], list(both[1].arguments)[:n])
            (going_a,), (going_b,) = self.block(condition, a, b, carried)
            next_a, next_b = self.block(body, a, b, carried)
            kept_b = [_select(going_b, new, old) for new, old in zip(next_b, carried[1])]
            kept_a = [_select(going_a, new, old) for new, old in zip(next_a, carried[0])]
            ir.Operation.create("stablehlo.return", operands=kept_b + kept_a)
        results = list(fused.results)
        return results[n:], results[:n]

    def branches(self, op, a, b) -> tuple[list, list]:
        """Every branch of both lanes, then each lane's results picked by its own predicate or index (an index
        out of range picks the last branch, as stablehlo.case does)."""
        outs = [self.block(region.blocks[0], a, b) for region in op.regions]
        picked = []
        for lane, side in ((a, 0), (b, 1)):
            chooser = _get(lane, op.operands[0])
            results = outs[-1][side]
            for number in range(len(outs) - 2, -1, -1):
                if op.name == "stablehlo.if":
                    test = chooser  # region 0 is the true branch
                else:
                    test = _equal(chooser, number)
                results = [_select(test, mine, rest) for mine, rest in zip(outs[number][side], results)]
            picked.append(results)
        return picked[0], picked[1]

    def per_device(self, op, a, b) -> tuple[list, list]:
        """One per-device computation holding both lanes' bodies; lane A takes lane B's result if this is the
        per-device computation whose result is transplanted."""
        from jax._src.lib.mlir.dialects import sdy
        from jaxlib.mlir import ir

        def doubled(attribute: str):
            shardings = list(sdy.TensorShardingPerValueAttr(op.attributes[attribute]).shardings)
            return sdy.TensorShardingPerValueAttr.get(shardings * 2)

        attributes = {name: op.attributes[name] for name in ("manual_axes",)}
        attributes.update(in_shardings=doubled("in_shardings"), out_shardings=doubled("out_shardings"))
        kinds = [r.type for r in op.results]
        fused = ir.Operation.create(MANUAL, results=kinds * 2, attributes=attributes, regions=1,
                                    operands=[_get(b, v) for v in op.operands] + [_get(a, v) for v in op.operands])
        body = op.regions[0].blocks[0]
        inner = [v.type for v in body.arguments]
        n = len(inner)
        block = ir.Block.create_at_start(fused.regions[0], inner * 2, [ir.Location.unknown()] * 2 * n)
        with ir.InsertionPoint(block):
            arguments = list(block.arguments)
            in_a, in_b = self.block(body, {}, {}, (arguments[n:], arguments[:n]))
            ir.Operation.create("sdy.return", operands=in_b + in_a)
        results = list(fused.results)
        m = len(kinds)
        in_a = results[m:]
        if self.manual is not None and op.operation == self.manual[0]:
            in_a[self.manual[1]] = results[self.manual[1]]
        return in_a, results[:m]


def _get(lane, value):
    if value not in lane:
        raise _Inexpressible
    return lane[value]


def _clone(op, lane):
    """``op`` written at the current insertion point reading ``lane``'s values (in its regions too)."""
    from jaxlib.mlir import ir

    copy = op.clone()
    for number, value in enumerate(copy.operands):
        copy.operands[number] = _get(lane, value)

    def remap(inner):
        inner = inner.operation
        if inner != copy:
            for number, value in enumerate(inner.operands):
                if value in lane:
                    inner.operands[number] = lane[value]
        return ir.WalkResult.ADVANCE

    if len(copy.regions):
        copy.walk(remap)
    return copy


def transplanted(bytecode: bytes, other: list, indices: list[int],
                 manual: tuple[int, int] | None = None) -> bytes | None:
    """The program with the results of its collectives ``indices`` (or, if ``manual`` is (m, j), result j of its
    per-device computation number m, :func:`grader.sandbox.program_check.manual_computations`) taken from its
    run on the inputs ``other`` (one array per input), as bytecode; None if the program holds something the
    two-lane rewrite does not express, or no such per-device computation."""
    from jax._src.interpreters import mlir
    from jaxlib.mlir import ir

    with context():
        module = ir.Module.parse(bytecode)
        called = functions(module)
        main = called.get("main")
        if main is None or not len(main.regions[0].blocks):
            return None
        own = main.regions[0].blocks[0]
        if len(own.arguments) != len(other):
            return None
        target = None
        if manual is not None:
            computations = manual_computations(module)
            if manual[0] >= len(computations):
                return None
            target = (computations[manual[0]], manual[1])
        attributes = {name: main.attributes[name] for name in main.attributes}
        with ir.InsertionPoint(module.body), ir.Location.unknown():
            lanes = ir.Operation.create("func.func", attributes=attributes, regions=1)
        main.attributes["sym_name"] = ir.StringAttr.get("main_one_lane")
        main.attributes["sym_visibility"] = ir.StringAttr.get("private")
        for name in ("arg_attrs", "res_attrs"):
            if name in main.attributes:
                del main.attributes[name]
        kinds = [v.type for v in own.arguments]
        block = ir.Block.create_at_start(lanes.regions[0], kinds, [ir.Location.unknown()] * len(kinds))
        try:
            with ir.InsertionPoint(block), ir.Location.unknown():
                in_b = [_constant(k, np.asarray(v)) for k, v in zip(kinds, other)]
                answer, _ = _Lanes(called, set(indices), target).block(own, {}, {}, (list(block.arguments), in_b))
                ir.Operation.create("func.return", operands=answer)
        except _Inexpressible:
            return None
        return mlir.module_to_bytecode(module)
