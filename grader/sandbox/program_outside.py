"""How much arithmetic a program writes outside its per-device computations: measured on the program as written.

A task that asks for per-device code (a ``jax.pmap``, a ``jax.shard_map``) can be answered right, with the
right collectives and each device's share of the work, by a program whose per-device code holds little more
than its collectives: the products and sums written around it in the same ``jax.jit``, on arrays XLA's
partitioner splits over the devices by itself. The compiled program cannot tell the two apart reliably: XLA
rewrites an operation written outside into one named after an operation inside (a reshape of a product becomes
a product named after the reshape), and back. The program the student's process exported can: every pmap and
shard_map is an ``sdy.manual_computation`` there, and an operation is written inside its body or not.

So this counts the arithmetic of every operation of the module outside every manual computation, following
calls (a function called from outside is outside at that call), counting a loop's body once per iteration
(a counter compared with a constant, as ``lax.fori_loop`` and ``lax.scan`` write it; any other loop's length
is unknown) and every branch of a conditional, and divides it by the number of devices: the most the
partitioner can have split it. Counted as grader.suite.hlo.operations counts a compiled program (a product's
multiply-adds twice, a reduction's elements times its reducer's arithmetic, an elementwise operation's
elements); moving, slicing, comparing and selecting data are not arithmetic. A value computed and never used
still counts: what was written outside was written outside. grader.suite.work compares the figure with the
reference's.
"""

from __future__ import annotations

import math
import re

from grader.sandbox.program_check import MANUAL, MANUAL_CUSTOM_CALL, context, functions

CALL = "func.call"
WHILE = "stablehlo.while"
CONTROL = frozenset({WHILE, "stablehlo.if", "stablehlo.case", MANUAL})  # operations whose regions run as code
# Operations that move or select data, or structure the program, rather than compute (the StableHLO names of
# grader.suite.hlo.NOT_WORK's instructions, and the dialects' own structure).
NOT_ARITHMETIC = frozenset({
    "stablehlo.constant", "stablehlo.iota", "stablehlo.tuple", "stablehlo.get_tuple_element", "stablehlo.reshape",
    "stablehlo.copy", "stablehlo.broadcast_in_dim", "stablehlo.broadcast", "stablehlo.transpose", "stablehlo.slice",
    "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice", "stablehlo.pad", "stablehlo.concatenate",
    "stablehlo.reverse", "stablehlo.gather", "stablehlo.convert", "stablehlo.bitcast_convert",
    "stablehlo.partition_id", "stablehlo.replica_id", "stablehlo.after_all", "stablehlo.select",
    "stablehlo.negate", "stablehlo.optimization_barrier",
    "stablehlo.get_dimension_size", "stablehlo.custom_call", "stablehlo.return", "stablehlo.while", "stablehlo.if",
    "stablehlo.case",
    "stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.all_to_all", "stablehlo.reduce_scatter",
    "stablehlo.collective_permute", "stablehlo.collective_broadcast", "func.return", "func.call", "func.func",
    "sdy.sharding_constraint", "sdy.reshard", "sdy.return", "sdy.mesh", MANUAL})
# What an operation can compute from without any input of the program (grader.suite.hlo's _NO_INPUT).
NO_INPUT = frozenset({"stablehlo.constant", "stablehlo.iota", "stablehlo.partition_id", "stablehlo.replica_id"})
_CONTRACTING = re.compile(r"lhs_contracting_dimensions = \[([\d,\s]*)\]")
_INTEGER = re.compile(r"dense<(-?\d+)>")


def _elements(type_) -> int:
    from jaxlib.mlir import ir

    try:
        return math.prod(ir.RankedTensorType(type_).shape)
    except ValueError:
        return 0


def _shape(type_) -> list[int]:
    from jaxlib.mlir import ir

    try:
        return list(ir.RankedTensorType(type_).shape)
    except ValueError:
        return []


def _applied(op) -> int:
    """The arithmetic operations of the computation ``op`` applies at each element (its regions')."""
    return sum(1 for region in op.regions for block in region.blocks for inner in block.operations
               if inner.operation.name not in NOT_ARITHMETIC)


def _reducer(op) -> int:
    """The arithmetic operations a reduction's reducer applies at each element (at least one)."""
    return max(1, _applied(op))


def _real_products(op) -> int:
    """Real multiplies in one multiply of ``op``'s result elements: four for a complex number, as grader.suite.hlo
    counts them."""
    return 4 if any("complex<" in str(r.type) for r in op.results) else 1


def arithmetic(op) -> int:
    """What one run of a region-free (or reduction) operation computes, as grader.suite.hlo counts it."""
    out = max((_elements(r.type) for r in op.results), default=0)
    if op.name == "stablehlo.scatter":  # each update combined by its region's arithmetic (none: x.at[...].set)
        return _elements(list(op.operands)[-1].type) * _applied(op)
    if op.name == "stablehlo.map":  # its body once per element: a whole product can be written as one
        return out * _reducer(op)
    if op.name in ("stablehlo.reduce", "stablehlo.reduce_window"):
        data = list(op.operands)[:max(1, len(op.operands) // 2)]  # then as many initial values
        return max(_elements(v.type) for v in data) * _reducer(op)
    if op.name == "stablehlo.dot_general":
        found = _CONTRACTING.search(str(op.attributes["dot_dimension_numbers"]))
        lhs = _shape(op.operands[0].type)
        dims = [int(d) for d in re.findall(r"\d+", found.group(1))] if found else []
        return 2 * out * math.prod(lhs[d] for d in dims if d < len(lhs)) * _real_products(op)
    if op.name == "stablehlo.convolution":
        return 2 * out * _elements(op.operands[1].type) * _real_products(op)
    return max([out, *(_elements(v.type) for v in op.operands)])


def _constant(value) -> int | None:
    """The integer a value is, where a constant operation makes it; else None."""
    owner = value.owner
    if owner is None or not hasattr(owner, "name") or owner.name != "stablehlo.constant":
        return None
    found = _INTEGER.search(str(owner.attributes["value"]))
    return int(found.group(1)) if found else None


def trips(op) -> int | None:
    """How many times a while loop runs its body, where its condition compares a counter that starts at a
    constant with a constant bound (``lax.fori_loop``, ``lax.scan``); else None. Counting up by at least one
    is the only way such a loop ends, so the difference bounds it."""
    condition = op.regions[0].blocks[0]
    arguments = list(condition.arguments)
    for inner in condition.operations:
        inner = inner.operation
        if inner.name != "stablehlo.compare" or "LT" not in str(inner.attributes["comparison_direction"]):
            continue
        counter, bound = inner.operands
        if counter in arguments:
            start, end = _constant(op.operands[arguments.index(counter)]), _constant(bound)
            if start is not None and end is not None:
                return max(0, end - start)
    return None


def _manual_body(op) -> bool:
    """Whether ``op`` calls a per-device computation's body as the GSPMD partitioner's form writes it: a call
    whose every operand was made per-device by an SPMDFullToShardShape custom call."""
    from jaxlib.mlir import ir

    def per_device(value) -> bool:
        owner = value.owner
        return (getattr(owner, "name", "") == "stablehlo.custom_call"
                and ir.StringAttr(owner.attributes["call_target_name"]).value == MANUAL_CUSTOM_CALL)

    return op.name == CALL and len(op.operands) > 0 and all(per_device(v) for v in op.operands)


Work = tuple  # (outside, inside): the arithmetic written outside and inside per-device code; None: unknown


def _plus(a: Work, b: Work) -> Work:
    return tuple(None if x is None or y is None else x + y for x, y in zip(a, b))


def _times(work: Work, trips: int | None) -> Work:
    return tuple(0 if x == 0 else None if x is None or trips is None else x * trips for x in work)


class _Count:
    def __init__(self, module):
        self.functions = functions(module)
        self.calls: dict[tuple[str, bool, tuple[int, ...]], tuple[Work, tuple[int, ...]]] = {}

    def function(self, name: str, inside: bool, free: tuple[int, ...] = ()) -> tuple[Work, tuple[int, ...]]:
        """The arithmetic a call of function ``name`` writes, and which of its results are computed on no input,
        where its arguments at the places ``free`` are computed on no input (index arithmetic jnp writes in a
        function of its own, such as ``jnp.take``'s bounds, on indices made of iotas)."""
        key = (name, inside, free)
        if key not in self.calls:
            self.calls[key] = ((0, 0), ())  # no module of jax.export recurses
            func = self.functions.get(name)
            if func is not None:
                block = func.regions[0].blocks[0]
                arguments = list(block.arguments)
                known = {arguments[i] for i in free}
                done = self.block(block, inside, known)
                returned = next((op.operation for op in block.operations if op.operation.name == "func.return"), None)
                results = () if returned is None else tuple(i for i, v in enumerate(returned.operands) if v in known)
                self.calls[key] = (done, results)
        return self.calls[key]

    def block(self, block, inside: bool, free: set | None = None) -> Work:
        """The arithmetic written in ``block``, outside and inside per-device computations (``inside``: the block
        is in one). ``free``: the values computed on no input so far (made of constants, iotas and the device's
        id: the same whatever the inputs, as grader.suite.hlo reads them), whose arithmetic is no work."""
        from jaxlib.mlir import ir

        free = set() if free is None else free
        total: Work = (0, 0)
        for op in block.operations:
            op = op.operation
            if op.name == CALL:
                done, results = self.function(ir.FlatSymbolRefAttr(op.attributes["callee"]).value,
                                              inside or _manual_body(op),
                                              tuple(i for i, v in enumerate(op.operands) if v in free))
                free.update(op.results[i] for i in results)
            elif op.name not in CONTROL:  # a region of any other (a reduction, a collective, a sort) is a reducer
                operands = list(op.operands)
                if op.name in NO_INPUT or (operands and all(v in free for v in operands)):
                    free.update(op.results)
                    continue
                work = 0 if op.name in NOT_ARITHMETIC else arithmetic(op)
                done = (0, work) if inside else (work, 0)
            else:
                done = (0, 0)
                for region in op.regions:
                    for inner in region.blocks:
                        done = _plus(done, self.block(inner, inside or op.name == MANUAL, free))
                if op.name == WHILE:
                    done = _times(done, trips(op))
            total = _plus(total, done)
        return total


def work(module, devices: int) -> tuple[int | None, int | None]:
    """(outside, inside): the arithmetic the parsed module writes outside its per-device computations, over
    ``devices`` (see the module's docstring), and what one device performs of what it writes inside them (their
    bodies have one device's shapes); either None where some of it is in a loop of unknown length."""
    with context():
        try:
            (outside, inside), _ = _Count(module).function("main", False)
        except RecursionError:
            return None, None
    return (None if outside is None else -(-outside // max(1, devices))), inside
