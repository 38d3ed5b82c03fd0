"""Which of a program's collectives its answer depends on: measured, never read from a pattern.

A structural point for "one psum" is only worth something if the psum's result reaches the answer.
A program can hold a collective for show in more ways than anybody lists: a psum of a constant, a
result multiplied by zero, subtracted from itself, placed in a branch that never runs or that a
select never picks. So the clean worker measures it: for each collective of the program that is
left in the compiled HLO, it builds a variant of the program with that collective's results
replaced by zeros (a value no honest algorithm of the course absorbs: a sum, a maximum, a gathered
block, a shifted block all change), compiles it and runs it on every set of inputs the program ran on
(the test's and those the grader drew for this run). If no answer changes beyond a rounding error, the
collective is idle and earns nothing: one set whose answer happens to be near zero cannot tell a zeroed
collective from a needed one, the others can. On one device a psum is the identity, and zeros still tell.

Zeros are a value no honest result takes, and a program can test for it (``jnp.where(psum != 0, x, 0)``)
or carry a constant whose value the answer needs (a psum of a 1 made by a comparison, multiplying an
answer XLA's partitioner computed). So each collective is also measured with its results taken from the
program's run on another set of inputs (:mod:`grader.sandbox.program_lanes`): a result that carries the
inputs' data changes the answer; a constant, or a test every set passes, leaves it as it was, and the
collective is idle; and if the answers are then those zeros gave, the answer depends on the collective only
through a test that zeros and another set's value fail alike (is it what a copy beside it computed), and it
is idle too (:func:`_idle`). Where no transplant can be built (the two-lane rewrite does not express the
program, or the sets' answers are the same), the results scaled by negative factors of their own stand in for it.

Duplicates that XLA merged into one instruction (``psum(v) - psum(v)``) are replaced together with
the collective the instruction kept, so that the pair is measured as the one instruction the
program runs. Only collectives left in the compiled program are measured: those are the ones a
structural rule can count. A variant that fails to compile or run counts the collective as needed.
The same measurement says whether the answer needs the program's per-device computations at all, each
measured alone (replaced by zeros, by the identity, scaled, taken from the other set's run): a jax.pmap
that does nothing beside a computation that does everything, that only passes on what was computed
around it, or that computes a constant, holds no per-device computation that counts; a collective
inside one that the answer needs already says so, and then those variants are not compiled. The
variants of a program are compiled as one program, each a function of it: one compile per program,
whatever the number of collectives (a second one only for a program none of whose needed collectives
runs in a per-device computation).

A variant whose answer is known without running it is not compiled: where a replaced result reaches an
output of the program through operations that keep zeros zeros (a reshape, a slice, a sharding, a sum of
zeros, a division by a constant that is not zero, the return of a per-device computation or of a
function: :func:`zero_outputs`), that output of the variant is zeros, and if the answer the program
gave for one of its sets of inputs is not zeros there, the variant's answer differs from it: the collective
(or the per-device computation) is needed, as running the variant would have found. That output is then
made of the results alone, so where the sets' answers differ there, the transplant's differs too. A psum
returned as the answer is so; an idle one never is (its answer would not differ), so it is always run.
"""

from __future__ import annotations

import numpy as np

from grader.protocol import PROGRAM_COLLECTIVES
from grader.sandbox.program_check import CUSTOM_CALL, CUSTOM_CALLS, MANUAL, context, functions, manual_computations
from grader.sandbox.program_labels import index_of
from grader.sandbox.program_lanes import transplanted

# How far the answer may move (relative to its largest entry, or absolutely below 1) for a collective
# to count as idle whatever the case: far above a rounding error, below the tolerance the suites check values
# to (1e-4), so that a collective carrying a remainder the values need (a float32 split into float16 and the
# rest) counts. A case's own tolerance (``Tolerance``: the rtol and atol its values are checked to) widens it:
# a collective that moves the answer by less than the values check can see is one the program passes without.
TOLERANCE = 1e-5
Tolerance = tuple[float, float]
EXACT: Tolerance = (0.0, 0.0)
# Variants compiled as one program: each is a copy of the whole program, so a program of many collectives
# compiles in several parts rather than as one that grows with the square of their number.
TOGETHER = 16


def collectives(module) -> dict[int, object]:
    """The program's collectives by index, read from the names program_labels gave them."""
    from jaxlib.mlir import ir

    found = {}

    def visit(op):
        op = op.operation
        if op.name in PROGRAM_COLLECTIVES and index_of(op) is not None:
            found[index_of(op)] = op
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _signature(op) -> str:
    """What makes two collectives the same computation, bar their channel: kind, types, attributes and
    the reduction they apply."""
    attributes = sorted((name, str(op.attributes[name])) for name in op.attributes if name != "channel_handle")
    body = [inner.name for region in op.regions for block in region.blocks for inner in block.operations]
    return repr((op.name, [str(v.type) for v in op.operands], [str(r.type) for r in op.results], attributes, body))


def groups(bytecode: bytes, kept: list[int]) -> dict[int, list[int]]:
    """For each collective left in the compiled program, the collectives replaced with it: itself and
    every one the compiled program lost that is the same computation (XLA merged it into this one)."""
    from jaxlib.mlir import ir

    with context():
        module = ir.Module.parse(bytecode)  # kept while its operations are read
        ops = collectives(module)
        signatures = {i: _signature(op) for i, op in ops.items()}
    lost = [i for i in ops if i not in kept]
    return {k: [k, *(i for i in lost if signatures[i] == signatures.get(k))] for k in kept}


def _zeros(result):
    """A constant of zeros of ``result``'s type, or None if its element type has no plain zero."""
    from jaxlib.mlir import ir

    kind = ir.RankedTensorType(result.type)
    element = kind.element_type
    if isinstance(element, ir.FloatType):
        zero = ir.FloatAttr.get(element, 0.0)
    elif isinstance(element, ir.IntegerType):
        zero = ir.IntegerAttr.get(element, 0)
    else:
        return None
    return ir.Operation.create("stablehlo.constant", results=[result.type],
                               attributes={"value": ir.DenseElementsAttr.get_splat(kind, zero)}).result


def _rewritten(bytecode: bytes, indices: list[int], manual: tuple[int, int] | None, rewrite) -> bytes | None:
    """The program with ``rewrite(op, results)`` applied to each of its collectives ``indices`` and all their
    results (or, if ``manual`` is (m, j), to its per-device computation number m and its result j), as
    bytecode; None if there is none, or ``rewrite`` returns False for one (it cannot be rewritten so)."""
    from jax._src.interpreters import mlir

    with context():
        from jaxlib.mlir import ir

        module = ir.Module.parse(bytecode)
        if manual is None:
            places = [(op, list(op.results)) for op in (collectives(module)[i] for i in indices)]
        else:
            computations = manual_computations(module)
            m, j = manual
            places = [(computations[m], [computations[m].results[j]])] if m < len(computations) else []
        if not places:
            return None
        for op, results in places:
            with ir.Location.unknown():
                if rewrite(op, results) is False:
                    return None
        return mlir.module_to_bytecode(module)


def _by_zeros(op, results) -> bool:
    """Replaces ``results`` of ``op`` by constants of zeros (erasing ``op`` if they are all of its results);
    False if one has no plain zero."""
    from jaxlib.mlir import ir

    with ir.InsertionPoint(op):
        zeros = [_zeros(r) for r in results]
    if any(z is None for z in zeros):
        return False
    for result, zero in zip(results, zeros):
        result.replace_all_uses_with(zero)
    if len(results) == len(op.results):
        op.erase()
    return True


def _factors(result):
    """A constant of ``result``'s type that scales each element by its own negative factor: -(1 + (i + 1) / (m + 1))
    at flat place i of m for floats, -(2 + i % 3) for integers."""
    from jaxlib.mlir import ir

    kind = ir.RankedTensorType(result.type)
    size = int(np.prod(kind.shape)) if kind.shape else 1
    place = np.arange(size, dtype=np.float32).reshape(kind.shape)
    factors = (-(1 + (place + 1) / (size + 1)) if isinstance(kind.element_type, ir.FloatType)
               else -(2 + place % 3)).astype(np.float32)
    as_f32 = ir.RankedTensorType.get(kind.shape, ir.F32Type.get())
    constant = ir.Operation.create("stablehlo.constant", results=[as_f32],
                                   attributes={"value": ir.DenseElementsAttr.get(factors)}).result
    if isinstance(kind.element_type, ir.F32Type):
        return constant
    return ir.Operation.create("stablehlo.convert", results=[result.type], operands=[constant]).result


def _by_scaling(op, results) -> bool:
    """Scales ``results`` of ``op`` where they are used, each element by its own negative factor (:func:`_factors`):
    a value no honest algorithm absorbs, unlike a plain negation (a ratio of two of the results, a square, a
    standardisation by their sum and sum of squares: round 60's honest loss), while a test of the results against
    zero passes or fails as it did; False if one is not of a signed type (bools, unsigned integers)."""
    from jaxlib.mlir import ir

    for result in results:
        element = ir.RankedTensorType(result.type).element_type
        if not (isinstance(element, ir.FloatType) or (isinstance(element, ir.IntegerType) and
                                                      ir.IntegerType(element).width > 1 and
                                                      not ir.IntegerType(element).is_unsigned)):
            return False
        with ir.InsertionPoint.after(op):
            scaled = ir.Operation.create("stablehlo.multiply", results=[result.type],
                                         operands=[result, _factors(result)])
        result.replace_all_uses_except(scaled.result, scaled)
    return True


def without(bytecode: bytes, indices: list[int], manual: tuple[int, int] | None = None) -> bytes | None:
    """The program with the results of its collectives ``indices`` (or, if ``manual`` is (m, j), result j of
    its per-device computation number m) replaced by zeros, as bytecode; None if one of them cannot be
    replaced so."""
    return _rewritten(bytecode, indices, manual, _by_zeros)


def scaled(bytecode: bytes, indices: list[int], manual: tuple[int, int] | None = None) -> bytes | None:
    """The program with the results of its collectives ``indices`` (or, if ``manual`` is (m, j), result j of
    its per-device computation number m) scaled by negative factors of their own (:func:`_by_scaling`), as
    bytecode; None if one of them is not of a signed type or there is nothing to scale."""
    return _rewritten(bytecode, indices, manual, _by_scaling)


def passed_on(bytecode: bytes, manual: tuple[int, int], operand: int) -> bytes | None:
    """The program with result j of its per-device computation number m (``manual``) replaced by that
    computation's operand number ``operand``, as bytecode; None where they are not of one type."""

    def through(op, results) -> bool:
        given = op.operands[operand]
        if str(given.type) != str(results[0].type):
            return False
        results[0].replace_all_uses_with(given)
        return True

    return _rewritten(bytecode, [], manual, through)


# Operations whose result is zeros where their first operand is: shape moves, conversions, negation and
# sharding annotations (the sharding custom calls are program_check.CUSTOM_CALLS).
_KEEP_ZEROS = frozenset({"stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim", "stablehlo.slice",
                         "stablehlo.dynamic_slice", "stablehlo.reverse", "stablehlo.convert", "stablehlo.negate",
                         "sdy.sharding_constraint", "sdy.reshard"})
# How far back from an output :func:`zero_outputs` follows a value (deeper chains count as not zeros).
_DEPTH = 200


def _splat(value) -> float | None:
    """The one number every entry of ``value`` holds, if it is a constant (or a broadcast or reshape of one)."""
    from jaxlib.mlir import ir

    for _ in range(_DEPTH):
        if not isinstance(value, ir.OpResult):
            return None
        op = value.owner
        if op.name in ("stablehlo.broadcast_in_dim", "stablehlo.reshape"):
            value = op.operands[0]
            continue
        if op.name != "stablehlo.constant":
            return None
        constant = ir.DenseElementsAttr(op.attributes["value"])
        if not constant.is_splat:
            return None
        number = constant.get_splat_value()
        for kind in (ir.FloatAttr, ir.IntegerAttr):
            try:
                return float(kind(number).value)
            except ValueError:  # not of this kind
                continue
        return None
    return None


def _finite(value) -> bool:
    number = _splat(value)
    return number is not None and bool(np.isfinite(number))


def zero_outputs(bytecode: bytes) -> list[bool]:
    """For each output of the program ``bytecode``, whether it is zeros whatever the inputs: reached from a
    constant of zeros through operations that keep zeros zeros (:data:`_KEEP_ZEROS`, a sum or difference of
    zeros, zeros times a finite constant or divided by a finite constant that is not zero), the return of a
    per-device computation or of a function whose returned value is. Anything else (a loop, a branch, an
    input) counts as not zeros."""
    from jaxlib.mlir import ir


    with context():
        module = ir.Module.parse(bytecode)
        called = functions(module)
        known: dict = {}

        def returned(region, number: int):
            """What the region's terminator returns as its result ``number`` (None for a body-less declaration)."""
            return list(region.blocks[0].operations)[-1].operands[number] if len(region.blocks) else None

        def zeros(value, depth: int = 0) -> bool:
            if value not in known:
                known[value] = depth < _DEPTH and isinstance(value, ir.OpResult) and made_of_zeros(value, depth + 1)
            return known[value]

        def made_of_zeros(value, depth: int) -> bool:
            op, number = value.owner, value.result_number
            name, operands = op.name, op.operands
            if name == "stablehlo.constant":
                return _splat(value) == 0
            if name in _KEEP_ZEROS or (name == CUSTOM_CALL and "call_target_name" in op.attributes and
                                       ir.StringAttr(op.attributes["call_target_name"]).value in CUSTOM_CALLS):
                return zeros(operands[0], depth)
            if name in ("stablehlo.add", "stablehlo.subtract"):
                return all(zeros(v, depth) for v in operands)
            if name == "stablehlo.multiply":
                a, b = operands
                return (zeros(a, depth) and (_finite(b) or zeros(b, depth))) or (zeros(b, depth) and _finite(a))
            if name == "stablehlo.divide":
                return _finite(operands[1]) and _splat(operands[1]) != 0 and zeros(operands[0], depth)
            if name == "stablehlo.optimization_barrier":
                return zeros(operands[number], depth)
            if name == MANUAL:
                return zeros(returned(op.regions[0], number), depth)
            if name == "func.call":
                callee = called.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
                return callee is not None and zeros(returned(callee.regions[0], number), depth)
            return False

        main = called.get("main")
        if main is None:
            return []
        outputs = list(main.regions[0].blocks[0].operations)[-1].operands
        return [zeros(v) for v in outputs]


def _known(variant: bytes, baselines: list, tolerance: Tolerance = EXACT) -> tuple[bool, bool]:
    """What is known without running them of the variants that replace the results ``variant`` replaced by zeros
    (``baselines``: the program's answers, one per set of inputs): (whether zeros change an answer: an output
    :func:`zero_outputs` proves zeros where a baseline is not; whether taking the results from the first set's
    run changes the others' answers: such an output is made of those results alone, so it then takes the first
    set's answer, and the sets' answers differ there)."""
    outputs = zero_outputs(variant)
    answers = [leaves(baseline) for baseline in baselines]
    answers = [answer for answer in answers if len(answer) == len(outputs)]
    made = [i for i, zero in enumerate(outputs) if zero]
    zeros = any(not same_answer(np.zeros_like(answer[i]), answer[i], tolerance) for answer in answers for i in made)
    moved = any(not same_answer(answer[i], answers[0][i], tolerance) for answer in answers[1:] for i in made)
    return zeros, moved


def leaves(value) -> list[np.ndarray]:
    import jax

    return [np.asarray(leaf) for leaf in jax.tree.leaves(value)]


def same_answer(got, baseline, tolerance: Tolerance = EXACT) -> bool:
    """Whether ``got`` is ``baseline`` up to :data:`TOLERANCE`, or within ``tolerance`` (rtol, atol) as a case's
    values check reads it (integers and bools exactly)."""
    rtol, atol = tolerance
    for a, b in zip(leaves(got), leaves(baseline)):
        if a.shape != b.shape:
            return False
        if b.dtype.kind in "biu":
            if not np.array_equal(a, b):
                return False
            continue
        a, b = (np.asarray(v, np.result_type(v, np.float64)) for v in (a, b))
        scale = max(1.0, float(np.max(np.abs(b[np.isfinite(b)]), initial=0.0)))
        if not (np.allclose(a, b, rtol=0, atol=TOLERANCE * scale, equal_nan=True)
                or np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)):
            return False
    return True


def same_answers(got: list, baselines: list, tolerance: Tolerance = EXACT) -> bool:
    """Whether every answer in ``got`` is its set's baseline up to :func:`same_answer`'s bound."""
    return len(got) == len(baselines) and all(same_answer(g, b, tolerance) for g, b in zip(got, baselines))


def answers_of(run_variants, variants: dict, inputs: list) -> dict:
    """Every variant's answers to the sets ``inputs`` (a list per variant, one answer per set), from one
    compile of up to :data:`TOGETHER` of them at a time; if that fails, from one compile each, leaving out
    a variant that does not run (its collective mattered)."""
    if len(variants) > TOGETHER:
        keys = list(variants)
        return {k: got for start in range(0, len(keys), TOGETHER)
                for k, got in answers_of(run_variants, {k: variants[k] for k in keys[start:start + TOGETHER]},
                                        inputs).items()}
    try:
        return dict(zip(variants, run_variants(list(variants.values()), inputs)))
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - one variant that does not compile fails them all: try each alone
        pass
    answers = {}
    for k, variant in variants.items():
        try:
            answers[k] = run_variants([variant], inputs)[0]
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - a variant that does not run says the collective mattered
            continue
    return answers


def _within_manual(bytecode: bytes) -> set[int]:
    """The collectives (by index) inside the program's per-device computations, and in the functions those call
    (a lax.fori_loop's body is one: a ring's ppermutes live there)."""
    from jaxlib.mlir import ir

    inside, walked = set(), set()

    def visit(op):
        op = op.operation
        if op.name in PROGRAM_COLLECTIVES and index_of(op) is not None:
            inside.add(index_of(op))
        if op.name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee not in walked and callee in named:
                walked.add(callee)
                named[callee].walk(visit)
        return ir.WalkResult.ADVANCE

    with context():
        module = ir.Module.parse(bytecode)
        named = functions(module)
        for manual in manual_computations(module):
            manual.walk(visit)
    return inside


def _idle(zeroed, scaled_, transplanted, baselines: list, tolerance: Tolerance = EXACT) -> bool:
    """Whether some results carry nothing the answers (``baselines``, one per set of inputs) need, from the answers
    with them replaced by zeros (``zeroed``), taken from the run on the first set (``transplanted``) and, where no
    transplant was measured, scaled by negative factors (``scaled_``); each None if not run, ``transplanted`` True
    where it is known to change the answers. They do not if zeros leave the answers as they were, or the first set's
    results leave the others' as they were (they carry nothing of the inputs: a constant, a test every set passes),
    or change them just as zeros do on the sets other than the first (a test that zeros and another set's value fail
    alike: is it what a copy computed beside it gives; on the first set the transplant is the identity, so its
    answer there is the baseline, which says nothing). Without a transplant, the scaling stands in for it: answers
    left as they were (a test that value and scaled value pass alike, is it not zero) or changed as zeros change
    them. Each element is scaled by a factor of its own, so an answer that a plain negation leaves as it was (a
    product or ratio of two results, a square) moves, as the transplant, where there is one, would tell."""
    if zeroed is not None and same_answers(zeroed, baselines, tolerance):
        return True
    other = transplanted if transplanted is not None and transplanted is not True else None
    if other is None and transplanted is True:
        return False
    moved = slice(1, None)  # on the first set, the donor, a transplant is the identity: it tells on the others
    if other is None:
        other, moved = scaled_, slice(None)
    return other is not None and (same_answers(other, baselines, tolerance) or
                                  (zeroed is not None and same_answers(other[moved], zeroed[moved], tolerance)))


SCALED, THROUGH, TRANSPLANTED = "scaled", "passed on", "transplanted"  # variants measured beside the zeros ones
TOGETHER_KEY = "together"


def _together(bytecode: bytes, indices: list[int], other, run_variants, inputs: list, baselines: list,
              tolerance: Tolerance = EXACT) -> bool:
    """Whether the collectives ``indices``, each measured idle on its own, are idle replaced all at once too: not
    where the answer then needs them (copies of one collective voted on, ``jnp.where(a == b, a, c)``: without any
    one of them the others give the answer, without all of them it is lost), and then none of them is idle."""
    variants = {TOGETHER_KEY: without(bytecode, indices)}
    moved = transplanted(bytecode, other, indices) if other else None
    if moved is not None:
        variants[(TRANSPLANTED, TOGETHER_KEY)] = moved
    else:
        variants[(SCALED, TOGETHER_KEY)] = scaled(bytecode, indices)
    variants = {k: v for k, v in variants.items() if v is not None}
    if not variants:
        return True
    got = answers_of(run_variants, variants, inputs)
    return _idle(got.get(TOGETHER_KEY), got.get((SCALED, TOGETHER_KEY)), got.get((TRANSPLANTED, TOGETHER_KEY)),
                 baselines, tolerance)


def measure(bytecode: bytes, kept: list[int], run_variants, inputs: list, baselines: list,
            also: dict | None = None, tolerance: Tolerance = EXACT) -> tuple[list[int], bool, dict]:
    """(the collectives in ``kept`` the answer does not need, ``baselines`` the answers to each set of
    ``inputs``; whether the answers depend on the program's per-device computations, its jax.pmap or
    jax.shard_map: a pmap that computes nothing the answer needs runs for show; the answers of the
    variants ``also`` of another measurement, keyed as given, compiled with these).
    ``run_variants(bytecodes, inputs)`` compiles the variants as one program (each a function of it) and
    returns each one's answers, one per set of ``inputs``. A collective is not needed if replacing its
    results by zeros, taking them from the program's run on the first set of inputs (:mod:`program_lanes`), or,
    where no transplant can be built, scaling them tells so (:func:`_idle`). The variants are compiled
    together, the transplant whether or not zeros already told (most collectives of a program are needed, and
    one compile costs less than two). A collective the answer needs inside a per-device computation says the answer needs that
    computation too, so the variants of the per-device computations are compiled only when none does (a
    second, smaller compile): each per-device computation replaced by zeros, by the identity (one that only
    passes on what was computed around it counts as not needed), taken from the first set's run (or scaled),
    read as a collective's are. A zeros variant whose answer is known to differ from ``baseline`` without
    running it (:func:`_known`) is not compiled, and neither is its scaling: the answer is then made of the
    results through operations that keep zeros zeros, and scaling them scales it; nor is a transplant whose
    answers are known to move (the sets' answers differ where they are made of the results alone). Answers are
    told apart only beyond the case's ``tolerance`` (:func:`same_answer`): what its values check cannot see, the
    program does not need."""
    also = also or {}
    # the transplant tells only where the sets' answers differ: on sets the answer does not tell apart, a result
    # taken from the first set's run leaves it as it was whatever the result carries
    other = leaves(inputs[0]) if any(not same_answer(b, baselines[0], tolerance) for b in baselines[1:]) else None
    replaced = groups(bytecode, kept)
    variants = {k: without(bytecode, r) for k, r in replaced.items()}
    variants = {k: v for k, v in variants.items() if v is not None}
    known = {k: _known(v, baselines, tolerance) for k, v in variants.items()}
    unknown = {k: v for k, v in variants.items() if not known[k][0]}
    transplants = {(TRANSPLANTED, k): transplanted(bytecode, other, r) for k, r in replaced.items()
                   if other and not known.get(k, (False, False))[1]}
    scalings = {(SCALED, k): scaled(bytecode, replaced[k]) for k in unknown
                if transplants.get((TRANSPLANTED, k)) is None}
    todo = {**unknown, **{k: v for k, v in {**scalings, **transplants}.items() if v is not None}, **also}
    answers = answers_of(run_variants, todo, inputs) if todo else {}
    others = {k: answers.pop(k) for k in also if k in answers}
    idle = [k for k in replaced if _idle(answers.get(k), answers.get((SCALED, k)),
                                         True if known.get(k, (False, False))[1] else answers.get((TRANSPLANTED, k)),
                                         baselines, tolerance)]
    if len(idle) > 1 and not _together(bytecode, [i for k in idle for i in replaced[k]], other, run_variants, inputs,
                                       baselines, tolerance):
        idle = []
    inside = _within_manual(bytecode) if replaced else set()
    if any(k not in idle for k in replaced if k in inside):
        return idle, True, others
    shapes = _manual_shapes(bytecode)
    planned, moves = {}, set()
    for m, (operands, results) in enumerate(shapes):
        for j, kind in enumerate(results):
            place = (m, j)
            zeroed = without(bytecode, [], manual=place)
            zeros, moved = _known(zeroed, baselines, tolerance) if zeroed is not None else (False, False)
            if moved:
                moves.add(place)
            moved_in = None if moved or not other else transplanted(bytecode, other, [], manual=place)
            planned.update({(MANUAL, place): None if zeros else zeroed, (TRANSPLANTED, place): moved_in,
                            (SCALED, place): None if zeros or moved_in is not None else
                            scaled(bytecode, [], manual=place)})
            planned.update({(THROUGH, place, i): passed_on(bytecode, place, i)
                            for i, given in enumerate(operands) if given == kind})
    planned = {k: v for k, v in planned.items() if v is not None}
    got = answers_of(run_variants, planned, inputs) if planned else {}

    def needed(place) -> bool:
        through = any(same_answers(got[k], baselines, tolerance) for k in got if k[0] == THROUGH and k[1] == place)
        return not through and not _idle(got.get((MANUAL, place)), got.get((SCALED, place)),
                                         True if place in moves else got.get((TRANSPLANTED, place)), baselines,
                                         tolerance)

    return idle, not shapes or any(needed((m, j)) for m, (_, results) in enumerate(shapes)
                                   for j in range(len(results))), others


def _manual_shapes(bytecode: bytes) -> list[tuple[list[str], list[str]]]:
    """For each per-device computation of the program, the types of its operands and of its results."""
    from jaxlib.mlir import ir

    with context():
        module = ir.Module.parse(bytecode)  # kept while its operations are read
        return [([str(v.type) for v in op.operands], [str(r.type) for r in op.results])
                for op in manual_computations(module)]


