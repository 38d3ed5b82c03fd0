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
operand (a block of x: 1/n; x padded and handed over whole: a little more than 1). Pieces of an input
handed to several manual computations add up (each block handed whole to every device by a pmap of its
own is all of it), the same values handed again do not, and a manual computation's result handed to
another is no piece of the input; a manual computation in a loop handed a slice, at an offset the loop
computes, of a value the loop carries as it is receives a piece each run (a chunk of x per iteration).
An input that reaches no manual computation (a ``jax.jit`` program that places its inputs itself) is
measured where the program places it instead: a layout asked for (``jax.device_put``, kept as written by
grader.sandbox.program_as_written) on a value made of that input alone holds the value's part of it over
the parts the layout splits it into (``P()``: all of it, on every device); one neither received nor
placed, or computed on outside every manual computation as it arrived rather than through such a layout,
is held as the worker hands it over (:func:`as_arrived`).
grader.suite.work compares the shares with the reference's.

What a value holds of an input is an upper bound, not a pattern: for each input it comes from, the
part of the value's elements that may carry it (its *density*). An input itself, and anything
computed from one input alone, is all that input (1). Only an operation that places its operands'
elements side by side (``concatenate``: ``jnp.stack([x, y])``) leaves each its own part; a
rearrangement of one value (reshape, transpose, broadcast, a convert to another dtype, ...) keeps the parts; a pad
spreads them over its padding, which holds nothing (a block of x padded to 8 elements holds what its
unpadded elements hold), and a bitcast packs them into fewer elements of a wider type (density above 1); a slice may
gather one input's part into a smaller value, so its density grows by as much; and any other
operation on values of several inputs may carry every one of them in every element (``x + 0 * y``,
``jnp.where(x != x, y, x)``: the whole of x, and of y, in x's elements), so each gets density 1. A
device handed such a value whole receives all of each input it is made of, however they were mixed.
"""

from __future__ import annotations

import re

from grader.protocol import ARRIVED, PLACED, RECEIVED
from grader.sandbox.program_check import MANUAL, MESH_AXIS, context, functions
from grader.sandbox.program_outside import CONTROL, NOT_ARITHMETIC, WHILE, arithmetic, trips

CALL = "func.call"


def _elements(type_) -> int:
    """Elements of a ranked tensor type (1 for a scalar), 0 for any other type. Shares are counted in the input's
    elements, not bytes: a copy of x in a narrower dtype (``x.astype(jnp.int8)``) holds all of x's elements in a
    quarter of its bytes (round 58); a complex element counts as two, the real numbers it holds."""
    from jaxlib.mlir import ir

    try:
        shaped = ir.RankedTensorType(type_)
    except ValueError:
        return 0
    size = 2 if str(shaped.element_type).startswith("complex") else 1  # a complex element is two real ones
    for d in shaped.shape:
        size *= d
    return size


CONCATENATE = "stablehlo.concatenate"
SLICE = "stablehlo.slice"
PAD = "stablehlo.pad"  # its padding holds nothing of the inputs: x's elements are a part of the padded value's
BITCAST = "stablehlo.bitcast_convert"  # four int8 elements packed into one int32 (or one split into four)
# operations whose result holds each element of their one operand the same number of times, or
# constants beside them (and layouts asked for, jax.lax.with_sharding_constraint, jax.sharding.reshard): where
# the data comes from as it is; each input keeps its part of the elements (a pad and a bitcast spread it: _result)
REARRANGE = frozenset({"stablehlo.reshape", "stablehlo.transpose", "stablehlo.reverse", "stablehlo.convert", BITCAST,
                       "stablehlo.copy", "stablehlo.broadcast_in_dim", PAD, "sdy.sharding_constraint", "sdy.reshard"})

Held = tuple  # ((input index, density), ...) sorted by input: what a value holds of each input
UNKNOWN_RUNS = 1e9  # a loop whose length the program does not say: any number of runs


def _returned(block) -> list:
    """The values a block's terminator returns (a loop body's next carry, a branch's result)."""
    operations = list(block.operations)
    return list(operations[-1].operation.operands) if operations else []


def _loop(op, body) -> tuple[float, set]:
    """A while loop as :meth:`_Flow._per_run` reads it: how many times it runs its body, and which of the body's
    arguments it carries as they are (returned unchanged)."""
    kept = {a for a, r in zip(body.arguments, _returned(body)) if a == r}
    found = trips(op)
    return (UNKNOWN_RUNS if found is None else max(1, found)), kept



def _merge(*helds: Held) -> Held:
    """The inputs any of ``helds`` holds, each at its largest density."""
    out: dict[int, float] = {}
    for held in helds:
        for i, density in held:
            out[i] = max(out.get(i, 0.0), density)
    return tuple(sorted(out.items()))


def _whole(held: Held) -> Held:
    """Every input of ``held``, each possibly in every element (density 1, or more where elements were packed)."""
    return tuple((i, max(1.0, density)) for i, density in held)


def _result(op, ins: list[Held], size: int) -> Held:
    """What a result of ``size`` elements holds of the inputs, computed by ``op`` from operands holding ``ins``."""
    carried = [(k, held) for k, held in enumerate(ins) if held]
    if not carried:
        return ()
    if op.name == CONCATENATE and size:
        parts: dict[int, float] = {}
        for k, held in carried:
            for i, density in held:
                parts[i] = parts.get(i, 0.0) + density * _elements(op.operands[k].type)
        return tuple(sorted((i, part / size) for i, part in parts.items()))
    if len(carried) > 1:
        return _whole(_merge(*(held for _, held in carried)))
    k, held = carried[0]
    if op.name in (PAD, BITCAST) and k == 0 and size:
        spread = _elements(op.operands[0].type) / size
        return tuple((i, density * spread) for i, density in held)
    if op.name in REARRANGE and k == 0:
        return held
    if op.name == SLICE and size:
        grown = _elements(op.operands[0].type) / size
        return tuple((i, min(max(1.0, density), density * grown)) for i, density in held)
    return _whole(held)


PLACE = frozenset({"sdy.sharding_constraint", "sdy.reshard"})  # a layout asked for (jax.device_put, as written)


def _meshes(module) -> dict[str, dict[str, int]]:
    """The module's meshes by name: each axis's size."""
    from jaxlib.mlir import ir

    return {ir.StringAttr(op.attributes["sym_name"]).value: dict((a, int(n)) for a, n in
                                                                 MESH_AXIS.findall(str(op.attributes["mesh"])))
            for op in module.body.operations if op.operation.name == "sdy.mesh"}


def _shards(sharding: str, meshes: dict[str, dict[str, int]]) -> int:
    """Into how many parts a layout (``<@mesh, [{"data"}, {}]>``) splits a value: the product of the sizes of
    the mesh axes its dimensions are split over."""
    found = re.search(r"@([\w.$-]+)\s*,\s*\[(.*?)\]", sharding)
    if found is None:
        return 1
    axes = meshes.get(found.group(1), {})
    count = 1
    for name in re.findall(r'"([^"]+)"', found.group(2)):
        count *= axes.get(name, 1)
    return count


class _Flow:
    """The inputs of ``main`` each value is computed from, what manual computations receive of them, and the
    layouts the program places them in."""

    def __init__(self, module):
        self.functions = functions(module)
        self.meshes = _meshes(module)
        self.inputs: list[int] = []  # each input's elements
        self.shares: list[float | None] = []
        self.placed: list[float | None] = []
        self.pieces: list[dict] = []  # per input: its share in the per-device computations given the same values
        self.origin: dict = {}  # a value -> the value its data comes from as it is (None: a per-device result)
        self._called: dict = {}
        self._manual: dict[str, bool] = {}
        self.inside = 0  # how deep the walk is in per-device computations
        self.outside: set[int] = set()  # inputs the program computes on outside every per-device computation
        self.loops: list[tuple[float, set]] = []  # the loops being walked: (runs, the carried values kept as they are)
        self.arrived: set = set()  # values that hold input data as it arrived: not through a layout the program asks

    def function(self, name: str, sources: tuple, origins: tuple = (), arrived: tuple = ()) -> list[Held]:
        """What function ``name``'s results hold, its arguments holding ``sources``, coming from ``origins``, and
        (``arrived``, by place) holding input data as it arrived."""
        key = (name, sources, origins, arrived)
        if key not in self._called:
            self._called[key] = []  # a recursive call sees no sources: no module of jax.export recurses
            func = self.functions.get(name)
            if func is None:
                return []
            block = func.regions[0].blocks[0]
            env = dict(zip(block.arguments, sources))
            self.origin.update(zip(block.arguments, origins))
            self.arrived.update(a for a, flag in zip(block.arguments, arrived) if flag)
            self._called[key] = self.block(block, env)
        return self._called[key]

    def _from(self, value):
        """The value ``value``'s data comes from as it is (itself, or what it rearranges), None for one computed
        from a per-device computation's result."""
        return self.origin.get(value, value)

    def _trace(self, op) -> None:
        """Where the results of ``op`` come from (:meth:`_from`)."""
        found = [self._from(v) for v in op.operands]
        if op.name == MANUAL or any(f is None for f in found):
            self.origin.update((r, None) for r in op.results)
        elif op.name in REARRANGE and found:
            self.origin.update((r, found[0]) for r in op.results)

    def block(self, block, env: dict) -> list[Held]:
        """Walk ``block``'s operations; what its terminator returns holds."""
        from jaxlib.mlir import ir

        returned: list[Held] = []
        for op in block.operations:
            op = op.operation
            ins = [env.get(v, ()) for v in op.operands]
            everything = _whole(_merge(*ins))
            computes = op.name not in NOT_ARITHMETIC and arithmetic(op) > 0
            if not self.inside and computes:  # computing on an input as it arrived, not as the program laid it out
                self.outside.update(i for held, v in zip(ins, op.operands) if v in self.arrived
                                    and self._from(v) is not None  # (a per-device computation's results are its own)
                                    for i, _ in held)
            if not (computes or op.name in PLACE or op.name == MANUAL) and any(v in self.arrived for v in op.operands):
                self.arrived.update(op.results)
            self._trace(op)
            if op.name == CALL:
                outs = self.function(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, tuple(ins),
                                     tuple(self._from(v) for v in op.operands),
                                     tuple(v in self.arrived for v in op.operands))
                if self._manual_in(ir.FlatSymbolRefAttr(op.attributes["callee"]).value):
                    self.origin.update((r, None) for r in op.results)
            else:
                if op.name == MANUAL:
                    self._receive(op, ins)
                if op.name in PLACE and ins:
                    self._place(op, ins[0])
                outs = self._regions(op, ins, everything, env)
                if not op.regions:
                    outs = [_result(op, ins, _elements(r.type)) for r in op.results]
            if len(outs) != len(op.results):
                outs = [everything] * len(op.results)
            env.update(zip(op.results, outs))
            if not op.results:
                returned = ins
        return returned

    def _regions(self, op, ins: list[Held], everything: Held, env: dict) -> list[Held]:
        """Walk the regions of ``op``; what its results hold. A region whose arguments match the operands one
        to one (a loop's carry) gets what each operand holds, and what the region returns is fed back until
        nothing new arrives; any other gets all of them, whole, and what each returns (a branch's result,
        made of whatever values in scope it closes over) is merged into the results. A per-device
        computation's body, and a reducer's, is walked as inside one (:attr:`inside`): no arithmetic of the
        program outside per-device code. A loop's body is walked knowing the loop (:meth:`_per_run`)."""
        carried: list[Held] = []
        inside = op.name == MANUAL or op.name not in CONTROL  # a reducer's arithmetic is its operation's
        self.inside += inside
        try:
            for region in op.regions:
                body = op.name == WHILE and region == op.regions[len(op.regions) - 1]  # (the other: its condition)
                for inner in region.blocks:
                    self.loops.extend([_loop(op, inner)] if body else [])
                    try:
                        carried = self._walked(op, inner, ins, everything, env, carried)
                    finally:
                        del self.loops[len(self.loops) - body:]
        finally:
            self.inside -= inside
        return carried

    def _walked(self, op, inner, ins: list[Held], everything: Held, env: dict, carried: list[Held]) -> list[Held]:
        """:meth:`_regions` for one block of a region of ``op``: what the operation's results hold after it. A
        carried value that comes from a per-device computation's result, from the operand or from a run of the
        block, is one (:meth:`_from`)."""
        arguments = list(inner.arguments)
        if len(arguments) == len(op.operands):
            self.arrived.update(a for a, v in zip(arguments, op.operands) if v in self.arrived)
        elif any(v in self.arrived for v in op.operands):
            self.arrived.update(arguments)
        if len(arguments) != len(ins):  # a branch (which may use any value in scope), a reducer
            returned = self.block(inner, {**env, **{a: everything for a in arguments}})
            if len(returned) == len(op.results):
                carried = [_merge(c, r, everything) for c, r in zip(carried or [()] * len(returned), returned)]
            return carried
        back = _returned(inner)
        sources = list(ins)
        for _ in range(len(ins) + 2):
            marked = self._results_carried(op, arguments, back)
            returned = self.block(inner, {**env, **dict(zip(arguments, sources))})
            if len(returned) != len(sources):
                break
            grown = [_merge(a, r) for a, r in zip(sources, returned)]
            if grown == sources and not marked and not self._results_carried(op, arguments, back):
                break
            sources = grown
        return sources

    def _results_carried(self, op, arguments: list, back: list) -> bool:
        """Mark each of a region's ``arguments`` that carries a per-device computation's result, given to ``op``
        or fed ``back`` by the region; whether any is newly marked."""
        new = False
        for k, argument in enumerate(arguments):
            result = (k < len(op.operands) and self._from(op.operands[k]) is None) or \
                (k < len(back) and self._from(back[k]) is None)
            if result and self.origin.get(argument, argument) is not None:
                self.origin[argument], new = None, True
        return new

    def _manual_in(self, name: str) -> bool:
        """Whether function ``name``, or one it calls, holds a per-device computation (read once per function)."""
        from jaxlib.mlir import ir

        if name not in self._manual:
            self._manual[name] = False  # no module of jax.export recurses
            func = self.functions.get(name)
            self._manual[name] = func is not None and any(
                op.operation.name == MANUAL or (op.operation.name == CALL and self._manual_in(
                    ir.FlatSymbolRefAttr(op.operation.attributes["callee"]).value))
                for op in func.regions[0].blocks[0].operations)
        return self._manual[name]

    def _receive(self, op, ins: list[Held]) -> None:
        """Each input's share one device receives of it through the manual computation's arguments: the
        argument's elements that may carry it over the input's elements. Where an argument is made of several inputs,
        no input's share is counted above all of it, unless the argument is larger than all of them together
        (padded): a scalar of one input mixed into a block of another is not hundreds of copies of it."""
        body = op.regions[0].blocks[0]
        whole_pieces: dict[int, list[float]] = {}  # each argument's share of the input, as if all of it
        origins: dict[int, set] = {}  # where the arguments holding each input come from (:meth:`_from`)
        parts: dict[int, float] = {}  # ... and its part of the argument's elements, shared among what it is made of
        for held, argument, operand in zip(ins, body.arguments, op.operands):
            whole = sum(self.inputs[i] for i, _ in held)
            if not whole:
                continue
            size = _elements(argument.type)
            bound = max(1.0, size / whole) if len(held) > 1 else float("inf")
            for i, density in held:
                if self.inputs[i]:
                    whole_pieces.setdefault(i, []).append(min(bound, size * density / self.inputs[i]))
                    parts[i] = parts.get(i, 0.0) + size * density / whole
                    origins.setdefault(i, set()).add(self._from(operand))
        # an input handed over in several arguments (its pieces, mixed with others or not) adds up, to all of it
        # at most unless one argument alone holds more (padded)
        for i, pieces in whole_pieces.items():
            share = max(*pieces, min(parts[i], max(1.0, *pieces)))
            runs = max((self._per_run(v) for v in op.operands), default=1.0)
            share = max(share, min(share * runs, max(1.0, share)))  # another piece each run of a loop
            self.shares[i] = max(self.shares[i] or 0.0, share)
            if None not in origins[i]:  # no per-device result handed on: the input's own pieces, kept to add up
                key = frozenset(origins[i])
                self.pieces[i][key] = max(self.pieces[i].get(key, 0.0), share)

    def _per_run(self, value) -> float:
        """How many different pieces ``value`` is over the loops being walked: their runs where it is a slice at an
        offset the loop computes (``xs[t]``) of a value the loop carries as it is (the whole input, handed a chunk
        each iteration), else 1: a value the loop computes again each run is no new piece of the input."""
        sliced = False
        while True:
            owner = value.owner
            name = getattr(owner, "name", None)
            if name == "stablehlo.dynamic_slice":
                sliced, value = True, owner.operands[0]
            elif name in REARRANGE and len(owner.operands):
                value = owner.operands[0]
            elif self.origin.get(value) is not None and self.origin[value] is not value:  # a function's argument
                value = self.origin[value]
            else:
                break
        return next((runs for runs, kept in reversed(self.loops) if sliced and value in kept), 1.0)

    def _place(self, op, held: Held) -> None:
        """The share of an input one device holds where the program places a value made of that input alone (as
        written: ``jax.device_put(w, NamedSharding(mesh, P()))`` keeps all of w on every device): the value's
        elements that may carry it, over the input's, over the parts the layout splits it into."""
        if len(held) != 1 or not self.inputs[held[0][0]]:
            return
        (i, density), = held
        attribute = op.attributes["sharding"]
        share = _elements(op.operands[0].type) * density / self.inputs[i] / _shards(str(attribute), self.meshes)
        self.placed[i] = max(self.placed[i] or 0.0, share)


def _name(argument, index: int) -> str:
    """The input's name in the traced function's signature (``loc("x")``), for messages only: letters,
    digits and ``_``, else its position."""
    found = re.fullmatch(r'loc\("([A-Za-z_][A-Za-z0-9_]{0,39})"\)', str(argument.location))
    return found.group(1) if found else f"input {index + 1}"


def shares(module) -> list[tuple[str, float | None, str]] | None:
    """For each input of the parsed module's ``main``: its name, the largest share of it one device's
    per-device computation receives (see the module's docstring) and RECEIVED; or, where it reaches none, the
    largest share one device holds where the program places it (a jit program's own layout) and PLACED; ARRIVED
    where it is neither received nor placed (share None) or computed on, outside every per-device computation,
    as it arrived rather than through a layout the program asks for (:func:`as_arrived` fills in how it
    arrives). None for a module nested deeper than the flow can follow (no program JAX exports is), which
    counts as the worst."""
    with context():
        flow = _Flow(module)
        main = flow.functions.get("main")
        if main is None:
            return []
        arguments = list(main.regions[0].blocks[0].arguments)
        flow.inputs = [_elements(a.type) for a in arguments]
        flow.shares, flow.placed = [None] * len(arguments), [None] * len(arguments)
        flow.pieces = [{} for _ in arguments]
        flow.arrived.update(arguments)
        try:
            flow.function("main", tuple(((i, 1.0),) for i in range(len(arguments))))
        except RecursionError:
            return None
        # the input's pieces handed to several per-device computations add up (the same values handed again do not)
        for i, pieces in enumerate(flow.pieces):
            if pieces and flow.shares[i] is not None:
                flow.shares[i] = max(flow.shares[i], min(sum(pieces.values()), max(1.0, *pieces.values())))
        found = []
        for i, (argument, received, placed) in enumerate(zip(arguments, flow.shares, flow.placed)):
            share, how = (received, RECEIVED) if received is not None else (placed, PLACED if placed else ARRIVED)
            if i in flow.outside:  # computed on as it arrived, whatever else the program places or hands on
                how = ARRIVED
            found.append((_name(argument, i), None if share is None else round(share, 6), how))
        return found


def as_arrived(shares: list | None, arrived: list[float]) -> list | None:
    """``shares`` with each input neither received nor placed, or computed on outside every per-device computation
    as it arrived, held as the worker hands it over (``arrived``: the share of it one device gets, 1 for an
    input handed over whole): a program that leaves the weights where they arrive, whole, and multiplies them
    outside its shard_map (or lets XLA slice what each device multiplies) keeps all of them on every device."""
    if shares is None:
        return None
    return [(name, round(max(share or 0.0, arrived[i]), 6), ARRIVED) if how == ARRIVED and i < len(arrived)
            else (name, share, how) for i, (name, share, how) in enumerate(shares)]
