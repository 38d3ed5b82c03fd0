"""One program that is every variant the measurement runs: each measured result chosen when it runs.

The measurement (:mod:`grader.sandbox.program_ablation`) asks what the answer becomes when a collective's results
are replaced: by zeros, scaled by negative factors of their own, taken from the program's run on another set of
inputs; and, for a result of a per-device computation, also by one of the computation's operands. Compiling a
program per variant made XLA's compiles most of what the measurement cost (bench/ablation.py: a ring of five
collectives took seven copies of the program). So the clean worker compiles one *probe*: the program rewritten with
one more input, ``modes``, a number per measured place (a site: a collective, named by its index, or a result of a
per-device computation, (m, j)), and at each site the value the number picks (:data:`KEEP` the program's own,
:data:`ZEROS`, :data:`SCALED`, :data:`OTHER`, :data:`PASSED` + i operand i). A variant is a vector of modes; the
probe, compiled once, runs each on every set of inputs. A ``stablehlo.select`` of a value picks it, so no variant
computes anything the program did not, and the program's own answer is the all-:data:`KEEP` vector's.

Zeros and scaling tell whether an answer moves with a collective's result; they cannot tell whether the result
carries anything of the inputs. A psum of a constant whose 1 multiplies an answer XLA's partitioner computed moves
the answer with it, and carries nothing. So the probe can also *transplant*: run the program on one set of inputs
with the collective's results taken from a run on another set. A result that carries the inputs' data changes the
answer (a sum, a block passed on, a gathered weight are another set's); one that carries a constant, or a fact every
set shares, leaves it as it was, and the collective is idle.

The other set's run must sit beside this one's, step for step: a collective inside a jax.pmap, a loop or a branch
has a result only there. So the probe is written with two lanes, A (the program's own inputs) and B (the other set's,
handed over as more inputs: written in as constants, XLA would fold them into the compile), each operation once per
lane: a function call is inlined; a per-device
computation (``sdy.manual_computation``) runs both lanes' bodies in one, so each device holds both; a loop runs both
lanes' carries, while either lane's condition holds, each lane's carry moving only while its own does; a branch
(``stablehlo.if``, ``stablehlo.case``) runs every branch of both lanes and selects each lane's results (the course's
programs have no side effects: the program check refuses them). Lane A picks lane B's result where the modes say
:data:`OTHER`. Without another set (every set's answer is the same) the probe has lane A alone. A program the
rewrite cannot express (a loop carrying a token) gets no probe, and nothing is measured.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from grader.protocol import PROGRAM_COLLECTIVES
from grader.sandbox.program_check import MANUAL, context, functions, manual_computations
from grader.sandbox.program_labels import index_of

_BRANCHES = ("stablehlo.if", "stablehlo.case")
KEEP, ZEROS, SCALED, OTHER, PASSED = 0, 1, 2, 3, 4  # what a site's mode picks; PASSED + i: the operand number i


class _Inexpressible(Exception):
    """The program holds something the rewrite does not express."""


@dataclasses.dataclass(frozen=True)
class Probe:
    """A probe's program (``bytecode``, taking the modes vector after the program's own inputs), its ``sites`` in
    the order of that vector, the modes each site written in the program takes (``supported``: those it was built
    for that the site's type can take), and whether it holds lane B (``donor``)."""

    bytecode: bytes
    sites: tuple
    supported: dict
    donor: bool

    def vector(self, plan: dict) -> np.ndarray | None:
        """The modes of the variant ``plan`` ({site: mode}), or None if a site cannot take its mode. A site the
        probe never wrote (in a function nothing calls) is left out: the answer cannot depend on it."""
        modes = np.full(len(self.sites), KEEP, np.int32)
        place = {site: n for n, site in enumerate(self.sites)}
        for site, mode in plan.items():
            if site not in self.supported:
                continue
            if mode not in self.supported[site]:
                return None
            modes[place[site]] = mode
        return modes


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
    i32 = ir.IntegerType.get_signless(32)
    scalar = ir.RankedTensorType.get([], i32)
    index = ir.Operation.create("stablehlo.constant", results=[scalar], attributes={
        "value": ir.DenseElementsAttr.get_splat(scalar, ir.IntegerAttr.get(i32, number))}).result
    return ir.Operation.create("stablehlo.compare", results=[boolean], operands=[value, index],
                               attributes={"comparison_direction": direction}).result


def zeros(value):
    """A constant of zeros of ``value``'s type, or None if its element type has no plain zero."""
    from jaxlib.mlir import ir

    kind = ir.RankedTensorType(value.type)
    element = kind.element_type
    if isinstance(element, ir.FloatType):
        zero = ir.FloatAttr.get(element, 0.0)
    elif isinstance(element, ir.IntegerType):
        zero = ir.IntegerAttr.get(element, 0)
    else:
        return None
    return ir.Operation.create("stablehlo.constant", results=[value.type],
                               attributes={"value": ir.DenseElementsAttr.get_splat(kind, zero)}).result


def _signed(value) -> bool:
    """Whether ``value``'s elements can be scaled by a negative factor (floats, signed integers wider than a bool)."""
    from jaxlib.mlir import ir

    element = ir.RankedTensorType(value.type).element_type
    return isinstance(element, ir.FloatType) or (isinstance(element, ir.IntegerType) and
                                                 ir.IntegerType(element).width > 1 and
                                                 not ir.IntegerType(element).is_unsigned)


def _scaled(value):
    """``value`` with each element multiplied by a negative factor of its own: -(1 + (i + 1) / (m + 1)) at flat
    place i of m for floats, -(2 + i % 3) for integers. A plain negation leaves ratios of two results, a square or a
    standardisation by their sum and sum of squares as they were (round 60's honest loss); these factors do not,
    while a test of the result against zero passes or fails as it did."""
    from jaxlib.mlir import ir

    kind = ir.RankedTensorType(value.type)
    size = int(np.prod(kind.shape)) if kind.shape else 1
    place = np.arange(size, dtype=np.float32).reshape(kind.shape)
    factors = (-(1 + (place + 1) / (size + 1)) if isinstance(kind.element_type, ir.FloatType)
               else -(2 + place % 3)).astype(np.float32)
    as_f32 = ir.RankedTensorType.get(kind.shape, ir.F32Type.get())
    constant = ir.Operation.create("stablehlo.constant", results=[as_f32],
                                   attributes={"value": ir.DenseElementsAttr.get(factors)}).result
    if not isinstance(kind.element_type, ir.F32Type):
        constant = ir.Operation.create("stablehlo.convert", results=[value.type], operands=[constant]).result
    return ir.Operation.create("stablehlo.multiply", results=[value.type], operands=[value, constant]).result


class _Writer:
    """Writes a block's operations once per lane (lane A first, then B where there is one) at the current insertion
    point, each measured site of lane A as the modes pick it."""

    def __init__(self, called: dict, sites: dict, wanted: dict, computations: list, modes):
        self.called, self.sites, self.wanted, self.computations, self.modes = called, sites, wanted, computations, modes
        self.supported: dict = {}

    def block(self, block, scopes: list, arguments=None) -> list[list]:
        """Writes ``block``'s operations bar its terminator; each lane's values of what it returns. ``scopes``: each
        lane's values so far; ``arguments``: each lane's values for the block's arguments."""
        scopes = [collections.ChainMap({}, scope) for scope in scopes]
        if arguments is not None:
            for scope, values in zip(scopes, arguments):
                scope.update(zip(block.arguments, values))
        operations = list(block.operations)
        for op in operations[:-1]:
            self.operation(op, scopes)
        return [[_get(scope, v) for v in operations[-1].operands] for scope in scopes]

    def operation(self, op, scopes: list) -> None:
        name = op.name
        if name == "func.call":
            from jaxlib.mlir import ir

            callee = self.called.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            if callee is None or not len(callee.regions[0].blocks):
                raise _Inexpressible
            outs = self.block(callee.regions[0].blocks[0], [{} for _ in scopes],
                              [[_get(scope, v) for v in op.operands] for scope in scopes])
        elif name == "stablehlo.while":
            outs = self.loop(op, scopes)
        elif name in _BRANCHES:
            outs = self.branches(op, scopes)
        elif name == MANUAL:
            outs = self.per_device(op, scopes)
        else:
            outs = [list(_clone(op, scope).results) for scope in scopes]
            site = index_of(op) if name in PROGRAM_COLLECTIVES else None  # only collectives are labelled sites
            if site in self.sites:
                donors = outs[1] if len(outs) > 1 else [None] * len(outs[0])
                outs[0] = self.choose(site, outs[0], donors, [[]] * len(outs[0]))
        for result, *values in zip(op.results, *outs):
            for scope, value in zip(scopes, values):
                scope[result] = value

    def _mode(self, site):
        """The modes' number for ``site``, read where it is used."""
        from jaxlib.mlir import ir

        n = self.sites[site]
        i32 = ir.IntegerType.get_signless(32)
        one = ir.Operation.create("stablehlo.slice", results=[ir.RankedTensorType.get([1], i32)],
                                  operands=[self.modes], attributes={
                                      "start_indices": ir.DenseI64ArrayAttr.get([n]),
                                      "limit_indices": ir.DenseI64ArrayAttr.get([n + 1]),
                                      "strides": ir.DenseI64ArrayAttr.get([1])}).result
        return ir.Operation.create("stablehlo.reshape", results=[ir.RankedTensorType.get([], i32)],
                                   operands=[one]).result

    def choose(self, site, values: list, donors: list, offered: list) -> list:
        """``values`` (lane A's results at ``site``) as the modes the probe is built for pick them: as they are, zeros,
        scaled, lane B's ``donors``, or one of ``offered`` (per result, the operands it may be replaced by, in
        order). Records which of them the site takes: those every one of its results can (over every place the site
        is written)."""
        mode, wanted = self._mode(site), self.wanted[site]
        chosen, modes = [], {KEEP} | set(wanted)
        for value, donor, operands in zip(values, donors, offered):
            options = {ZEROS: zeros(value) if ZEROS in wanted else None,
                       SCALED: _scaled(value) if SCALED in wanted and _signed(value) else None,
                       OTHER: donor if OTHER in wanted else None}
            options.update({PASSED + i: given for i, given in enumerate(operands)
                            if PASSED + i in wanted and str(given.type) == str(value.type)})
            options = {number: alternative for number, alternative in options.items() if alternative is not None}
            modes &= {KEEP, *options}
            for number, alternative in options.items():
                value = _select(_equal(mode, number), alternative, value)
            chosen.append(value)
        self.supported[site] = self.supported.get(site, modes) & modes
        return chosen

    def loop(self, op, scopes: list) -> list[list]:
        from jaxlib.mlir import ir

        kinds = [v.type for v in op.operands]
        if not all(isinstance(k, ir.RankedTensorType) for k in kinds):
            raise _Inexpressible
        n, lanes = len(kinds), len(scopes)
        carried = kinds * lanes + [self.modes.type]
        fused = ir.Operation.create("stablehlo.while", results=carried, regions=2,
                                    operands=[_get(scope, v) for scope in scopes for v in op.operands] + [self.modes])
        condition, body = (r.blocks[0] for r in op.regions)
        blocks = [ir.Block.create_at_start(fused.regions[i], carried, [ir.Location.unknown()] * len(carried))
                  for i in range(2)]
        outer = self.modes

        def lanes_of(block) -> list[list]:
            values = list(block.arguments)
            self.modes = values[-1]
            return [values[lane * n:(lane + 1) * n] for lane in range(lanes)]

        with ir.InsertionPoint(blocks[0]):
            going = [g for (g,) in self.block(condition, scopes, lanes_of(blocks[0]))]
            either = going[0]
            for other in going[1:]:
                either = ir.Operation.create("stablehlo.or", results=[either.type], operands=[either, other]).result
            ir.Operation.create("stablehlo.return", operands=[either])
        with ir.InsertionPoint(blocks[1]):
            now = lanes_of(blocks[1])
            following = self.block(body, scopes, now)
            if lanes > 1:  # each lane's carry moves only while its own condition holds
                going = [g for (g,) in self.block(condition, scopes, now)]
                following = [[_select(g, new, old) for new, old in zip(values, before)]
                             for g, values, before in zip(going, following, now)]
            ir.Operation.create("stablehlo.return", operands=[v for values in following for v in values] + [self.modes])
        self.modes = outer
        results = list(fused.results)
        return [results[lane * n:(lane + 1) * n] for lane in range(lanes)]

    def branches(self, op, scopes: list) -> list[list]:
        """Every branch of every lane, then each lane's results picked by its own predicate or index (an index out
        of range picks the last branch, as stablehlo.case does)."""
        outs = [self.block(region.blocks[0], scopes) for region in op.regions]
        picked = []
        for side, scope in enumerate(scopes):
            chooser = _get(scope, op.operands[0])
            results = outs[-1][side]
            for number in range(len(outs) - 2, -1, -1):
                test = chooser if op.name == "stablehlo.if" else _equal(chooser, number)  # region 0: the true branch
                results = [_select(test, mine, rest) for mine, rest in zip(outs[number][side], results)]
            picked.append(results)
        return picked

    def per_device(self, op, scopes: list) -> list[list]:
        """One per-device computation holding every lane's body, the modes handed to it whole; lane A's results
        picked by the modes where they are measured sites."""
        from jax._src.lib.mlir.dialects import sdy
        from jaxlib.mlir import ir

        given = {name: list(sdy.TensorShardingPerValueAttr(op.attributes[name]).shardings)
                 for name in ("in_shardings", "out_shardings")}
        meshes = [sdy.TensorShardingAttr(sharding).mesh_or_ref
                  for shardings in given.values() for sharding in shardings]
        if not meshes:
            raise _Inexpressible
        whole = sdy.TensorShardingAttr.get(meshes[0], [sdy.DimensionShardingAttr.get([], True)])
        lanes = len(scopes)
        attributes = {"manual_axes": op.attributes["manual_axes"],
                      "in_shardings": sdy.TensorShardingPerValueAttr.get(given["in_shardings"] * lanes + [whole]),
                      "out_shardings": sdy.TensorShardingPerValueAttr.get(given["out_shardings"] * lanes)}
        kinds = [r.type for r in op.results]
        fused = ir.Operation.create(MANUAL, results=kinds * lanes, attributes=attributes, regions=1,
                                    operands=[_get(scope, v) for scope in scopes for v in op.operands] + [self.modes])
        body = op.regions[0].blocks[0]
        inner = [v.type for v in body.arguments]
        n = len(inner)
        block = ir.Block.create_at_start(fused.regions[0], inner * lanes + [self.modes.type],
                                         [ir.Location.unknown()] * (n * lanes + 1))
        outer = self.modes
        with ir.InsertionPoint(block):
            arguments = list(block.arguments)
            self.modes = arguments[-1]
            returned = self.block(body, [{} for _ in scopes], [arguments[lane * n:(lane + 1) * n]
                                                                for lane in range(lanes)])
            ir.Operation.create("sdy.return", operands=[v for values in returned for v in values])
        self.modes = outer
        results = list(fused.results)
        m = len(kinds)
        outs = [results[lane * m:(lane + 1) * m] for lane in range(lanes)]
        number = next((k for k, known in enumerate(self.computations) if known == op.operation), None)
        operands = [_get(scopes[0], v) for v in op.operands]
        for j, value in enumerate(outs[0]):
            if (number, j) in self.sites:
                outs[0][j], = self.choose((number, j), [value], [outs[1][j] if lanes > 1 else None], [operands])
        return outs


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


def build(bytecode: bytes, wanted: dict, donor: bool) -> Probe | None:
    """The probe of the program ``bytecode`` for the modes ``wanted`` at each measured site ({site: modes}; a site a
    collective index or a per-device result (m, j)), with lane B if ``donor``: the probe then takes the program's
    inputs twice (lane A's, then lane B's) before the modes; None if the program holds something the rewrite does
    not express."""
    from jax._src.interpreters import mlir
    from jaxlib.mlir import ir

    with context(), ir.Location.unknown():
        module = ir.Module.parse(bytecode)
        called = functions(module)
        main = called.get("main")
        if main is None or not len(main.regions[0].blocks):
            return None
        own = main.regions[0].blocks[0]
        lanes = 2 if donor else 1
        kinds = [v.type for v in own.arguments]
        sites = list(wanted)
        modes = ir.RankedTensorType.get([len(sites)], ir.IntegerType.get_signless(32))
        attributes = {name: main.attributes[name] for name in main.attributes}
        results = ir.FunctionType(ir.TypeAttr(attributes["function_type"]).value).results
        attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(kinds * lanes + [modes], results))
        if "arg_attrs" in attributes:
            attributes["arg_attrs"] = ir.ArrayAttr.get([*ir.ArrayAttr(attributes["arg_attrs"])] * lanes +
                                                       [ir.DictAttr.get({})])
        with ir.InsertionPoint(module.body):
            probe = ir.Operation.create("func.func", attributes=attributes, regions=1)
        block = ir.Block.create_at_start(probe.regions[0], kinds * lanes + [modes],
                                         [ir.Location.unknown()] * (len(kinds) * lanes + 1))
        arguments = list(block.arguments)
        writer = _Writer(called, {site: n for n, site in enumerate(sites)}, wanted, manual_computations(module),
                         arguments[-1])
        try:
            with ir.InsertionPoint(block):
                given = [arguments[lane * len(kinds):(lane + 1) * len(kinds)] for lane in range(lanes)]
                answer = writer.block(own, [{} for _ in given], given)[0]
                ir.Operation.create("func.return", operands=answer)
        except _Inexpressible:
            return None
        main.erase()
        return Probe(mlir.module_to_bytecode(module), tuple(sites),
                     {site: frozenset(m) for site, m in writer.supported.items()}, donor)


def exported(program, probe: Probe):
    """``program`` (a ``jax.export.Exported``) as its probe: the probe's module, taking the program's inputs (twice,
    lane A's then lane B's, if it has lane B), then the modes vector (one int32 per site)."""
    import jax

    lanes = 2 if probe.donor else 1
    avals = jax.tree.unflatten(program.in_tree, program.in_avals)[0]
    modes = jax.ShapeDtypeStruct((len(probe.sites),), np.int32)
    count = len(program.in_avals)
    return dataclasses.replace(
        program, mlir_module_serialized=probe.bytecode, in_tree=jax.tree.structure(((*avals * lanes, modes), {})),
        in_avals=(*program.in_avals * lanes, jax.core.ShapedArray(modes.shape, modes.dtype)),
        _in_named_shardings=(*program._in_named_shardings * lanes, None),
        in_shardings_hlo=(*program.in_shardings_hlo * lanes, None),
        module_kept_var_idx=tuple(lane * count + i for lane in range(lanes) for i in program.module_kept_var_idx)
        + (lanes * count,))
