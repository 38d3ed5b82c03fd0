"""Which of a program's collectives its answer depends on: measured, never read from a pattern.

A structural point for "one psum" is only worth something if the psum's result reaches the answer.
A program can hold a collective for show in more ways than anybody lists: a psum of a constant, a
result multiplied by zero, subtracted from itself, placed in a branch that never runs or that a
select never picks. So the clean worker measures it: for each collective of the program that is
left in the compiled HLO, it runs a variant of the program with that collective's results
replaced by zeros (a value no honest algorithm of the course absorbs: a sum, a maximum, a gathered
block, a shifted block all change) on every set of inputs the program ran on (the test's and those the
grader drew for this run). If no answer changes beyond a rounding error, the
collective is idle and earns nothing: one set whose answer happens to be near zero cannot tell a zeroed
collective from a needed one, the others can. On one device a psum is the identity, and zeros still tell.

Zeros are a value no honest result takes, and a program can test for it (``jnp.where(psum != 0, x, 0)``)
or carry a constant whose value the answer needs (a psum of a 1 made by a comparison, multiplying an
answer XLA's partitioner computed). So each collective is also measured with its results taken from the
program's run on another set of inputs (the probe's lane B): a result that carries the
inputs' data changes the answer; a constant, or a test every set passes, leaves it as it was, and the
collective is idle; and if the answers are then those zeros gave, the answer depends on the collective only
through a test that zeros and another set's value fail alike (is it what a copy beside it computed), and it
is idle too (:func:`_idle`). Where no transplant can be made (the sets' answers are the same, or the probe's
lane B cannot be written or compiled), the results scaled by negative factors of their own stand in for it.

Duplicates that XLA merged into one instruction (``psum(v) - psum(v)``) are replaced together with
the collective the instruction kept, so that the pair is measured as the one instruction the
program runs. Only collectives left in the compiled program are measured: those are the ones a
structural rule can count. A variant that does not run counts the collective as needed.
The same measurement says whether the answer needs the program's per-device computations at all, each
measured alone (replaced by zeros, by the identity, scaled, taken from the other set's run): a jax.pmap
that does nothing beside a computation that does everything, that only passes on what was computed
around it, or that computes a constant, holds no per-device computation that counts; a collective
inside one that the answer needs already says so, and then those variants are not run. Every variant
is one vector of modes for the program's probe (:mod:`grader.sandbox.program_probe`): the program is
compiled once more, whatever the number of collectives and variants, and only if a variant has to run (a second
time only where the per-device computations' variants follow the collectives': they ask for modes the first
probe was not built for). If no probe can be built or compiled, nothing is measured and every collective counts
as needed, as a variant that does not run does.

A variant whose answer is known without running it is not run: where a replaced result reaches an
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
from grader.sandbox import program_probe
from grader.sandbox.program_check import CUSTOM_CALL, CUSTOM_CALLS, MANUAL, context, functions, manual_computations
from grader.sandbox.program_labels import index_of
from grader.sandbox.program_probe import OTHER, PASSED, SCALED, ZEROS
from grader.sandbox.program_sites import Sites

# How far the answer may move (relative to its largest entry, or absolutely below 1) for a collective
# to count as idle whatever the case: far above a rounding error, below the tolerance the suites check values
# to (1e-4), so that a collective carrying a remainder the values need (a float32 split into float16 and the
# rest) counts. A case's own tolerance (``Tolerance``: the rtol and atol its values are checked to) widens it:
# a collective that moves the answer by less than the values check can see is one the program passes without.
TOLERANCE = 1e-5
Tolerance = tuple[float, float]
EXACT: Tolerance = (0.0, 0.0)


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


def groups(sites: Sites, kept: list[int]) -> dict[int, list[int]]:
    """For each collective left in the compiled program, the collectives replaced with it: itself and
    every one the compiled program lost that is the same computation (XLA merged it into this one)."""
    lost = [i for i in sites.signatures if i not in kept]
    return {k: [k, *(i for i in lost if sites.signatures[i] == sites.signatures.get(k))] for k in kept}


def without(bytecode: bytes, indices: list[int], manual: tuple[int, int] | None = None) -> bytes | None:
    """The program with the results of its collectives ``indices`` (or, if ``manual`` is (m, j), result j of
    its per-device computation number m) replaced by zeros, as bytecode, for :func:`zero_outputs` to read what
    the variant's answer is made of without running it; None if there is none, or one has no plain zero."""
    from jax._src.interpreters import mlir
    from jaxlib.mlir import ir

    with context():
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
            with ir.InsertionPoint(op), ir.Location.unknown():
                replacements = [program_probe.zeros(r) for r in results]
            if any(zero is None for zero in replacements):
                return None
            for result, zero in zip(results, replacements):
                result.replace_all_uses_with(zero)
            if len(results) == len(op.results):
                op.erase()
        return mlir.module_to_bytecode(module)


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


class Runs:
    """The answers of the variants of one program, from its probe (:mod:`grader.sandbox.program_probe`), built and
    compiled when a variant first has to run, for the modes the variants asked for so far (a plan that asks for
    more builds it again: the per-device computations' variants, run only when no collective tells, are the one
    such case an honest program meets): with lane B (run on the first set of inputs) if a variant takes results
    from it and ``donor`` allows (the sets' answers differ), else with lane A alone; where a probe with lane B
    cannot be built or compiled, lane A alone. ``compile_probe(probe)`` compiles a probe and returns a function of a
    list of modes vectors giving, for each, its answers (one per set of inputs), or None where it does not run."""

    def __init__(self, bytecode: bytes, donor: bool, compile_probe):
        self.bytecode, self.donor, self.compile_probe = bytecode, donor, compile_probe
        self.probe, self.run, self.wanted, self.lane_b, self.lane_b_fails = None, None, {}, False, False

    def _prepare(self, plans: dict) -> None:
        """The probe (and its compile) for the modes ``plans`` ask for, beside those asked for before."""
        wanted = {site: set(modes) for site, modes in self.wanted.items()}
        for plan in plans.values():
            for site, mode in plan.items():
                wanted.setdefault(site, set()).add(mode)
        lane_b = not self.lane_b_fails and (self.lane_b or any(OTHER in plan.values() for plan in plans.values()))
        if (wanted, lane_b) == (self.wanted, self.lane_b):
            return
        self.wanted, self.lane_b = wanted, lane_b
        for with_b in [True, False] if lane_b else [False]:
            probe = program_probe.build(self.bytecode, wanted, with_b)
            try:
                self.run = self.compile_probe(probe) if probe is not None else None
            except MemoryError:
                raise
            except Exception:  # noqa: BLE001 - a probe that does not compile: one lane, or nothing measured
                self.run = None
            if self.run is not None:
                self.probe = probe
                return
            self.lane_b_fails |= with_b
        self.probe = None

    def answers(self, plans: dict, instead: dict | None = None) -> dict:
        """Each variant's answers, one per set of inputs, by the key of its plan ({site: mode}) in ``plans``; a
        variant the probe cannot express (a mode a site's type cannot take), or that does not run, has none. A plan
        that takes results from lane B is run as its ``instead`` entry ((key, plan)) where the probe has no lane B."""
        plans = self._runnable(plans, instead, self.donor)
        if not plans:
            return {}
        self._prepare(plans)
        if self.probe is not None and not self.probe.donor:  # lane B could not be compiled: the stand-ins
            plans = self._runnable(plans, instead, False)
            self._prepare(plans)
        if self.probe is None:
            return {}
        vectors = {key: self.probe.vector(plan) for key, plan in plans.items()}
        distinct = {modes.tobytes(): modes for modes in vectors.values() if modes is not None}  # each run once
        got = dict(zip(distinct, self.run(list(distinct.values()))))
        return {key: got[modes.tobytes()] for key, modes in vectors.items()
                if modes is not None and got[modes.tobytes()] is not None}

    @staticmethod
    def _runnable(plans: dict, instead: dict | None, donor: bool) -> dict:
        """``plans``, each that takes results from lane B replaced by its ``instead`` entry (or left out) where
        there is no lane B (``donor`` False)."""
        if donor:
            return plans
        found = {}
        for key, plan in plans.items():
            if OTHER in plan.values():
                if key not in (instead or {}):
                    continue
                key, plan = instead[key]
            found[key] = plan
        return found


def replacing(indices, mode: int) -> dict:
    """The plan that gives each of the collectives ``indices`` the mode ``mode``."""
    return dict.fromkeys(indices, mode)


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


SCALED_KEY, THROUGH, TRANSPLANTED = "scaled", "passed on", "transplanted"  # variants measured beside the zeros ones
TOGETHER_KEY = "together"


def _together(runs: Runs, indices: list[int], baselines: list, tolerance: Tolerance = EXACT) -> bool:
    """Whether the collectives ``indices``, each measured idle on its own, are idle replaced all at once too: not
    where the answer then needs them (copies of one collective voted on, ``jnp.where(a == b, a, c)``: without any
    one of them the others give the answer, without all of them it is lost), and then none of them is idle."""
    plans, instead = _replacements(TOGETHER_KEY, lambda mode: replacing(indices, mode), False, False)
    got = runs.answers(plans, instead)
    return not got or _idle(got.get(TOGETHER_KEY), got.get((SCALED_KEY, TOGETHER_KEY)),
                            got.get((TRANSPLANTED, TOGETHER_KEY)), baselines, tolerance)


def _replacements(key, plan_of, zeros: bool, moved: bool) -> tuple[dict, dict]:
    """The variants that measure one collective or per-device result (``key``; ``plan_of(mode)``: its plan), and
    what stands in for the transplant where the probe has no lane B (:meth:`Runs.answers`): zeros unless their
    answer is known to differ (``zeros``), the transplant unless its answer is known to move (``moved``), and in its
    place, or where it is known to move, the scaling where zeros are not known."""
    plans = {} if zeros else {key: plan_of(ZEROS)}
    scaling = {} if zeros else {(SCALED_KEY, key): plan_of(SCALED)}
    if moved:
        return {**plans, **scaling}, {}
    plans[(TRANSPLANTED, key)] = plan_of(OTHER)
    return plans, {(TRANSPLANTED, key): next(iter(scaling.items()))} if scaling else {}


def measure(bytecode: bytes, sites: Sites, kept: list[int], compile_probe, inputs: list, baselines: list,
            also: dict | None = None, tolerance: Tolerance = EXACT) -> tuple[list[int], bool, dict]:
    """(the collectives in ``kept`` the answer does not need (``sites``: what program_sites read of the program),
    ``baselines`` the answers to each set of ``inputs``; whether the answers depend on the program's per-device
    computations, its jax.pmap or jax.shard_map: a pmap that computes nothing the answer needs runs for show; the
    answers of the variants ``also`` of another measurement ({key: plan}), run with these).
    ``compile_probe(probe)`` compiles the program's probe (:class:`Runs`). A collective is not needed if replacing
    its results by zeros, taking them from the program's run on the first set of inputs, or, where no transplant
    can be made, scaling them tells so (:func:`_idle`). A collective the answer needs inside a per-device
    computation says the answer needs that computation too, so the variants of the per-device computations are run
    only when none does: each per-device computation replaced by zeros, by the identity (one that only passes on
    what was computed around it counts as not needed), taken from the first set's run (or scaled), read as a
    collective's are. A zeros variant whose answer is known to differ from ``baseline`` without running it
    (:func:`_known`) is not run, and neither is its scaling: the answer is then made of the results through
    operations that keep zeros zeros, and scaling them scales it; nor is a transplant whose answers are known to
    move (the sets' answers differ where they are made of the results alone). Answers are told apart only beyond
    the case's ``tolerance`` (:func:`same_answer`): what its values check cannot see, the program does not need."""
    also = also or {}
    # the transplant tells only where the sets' answers differ: on sets the answer does not tell apart, a result
    # taken from the first set's run leaves it as it was whatever the result carries
    donor = any(not same_answer(b, baselines[0], tolerance) for b in baselines[1:])
    replaced = groups(sites, kept)
    shapes = sites.manual
    runs = Runs(bytecode, donor, compile_probe)
    plans, instead, known = {}, {}, {}
    for k, r in replaced.items():
        zeroed = without(bytecode, r)
        known[k] = _known(zeroed, baselines, tolerance) if zeroed is not None else (False, False)
        planned, stand_ins = _replacements(k, lambda mode, r=r: replacing(r, mode), *known[k])
        plans.update(planned), instead.update(stand_ins)
    answers = runs.answers({**plans, **also}, instead)
    others = {k: answers.pop(k) for k in also if k in answers}
    idle = [k for k in replaced if _idle(answers.get(k), answers.get((SCALED_KEY, k)),
                                         True if known[k][1] else answers.get((TRANSPLANTED, k)), baselines, tolerance)]
    if len(idle) > 1 and not _together(runs, [i for k in idle for i in replaced[k]], baselines, tolerance):
        idle = []
    if any(k not in idle for k in replaced if k in sites.inside):
        return idle, True, others
    plans, instead, moves = {}, {}, set()
    for m, (operands, results) in enumerate(shapes):
        for j, kind in enumerate(results):
            place = (m, j)
            zeroed = without(bytecode, [], manual=place)
            zeros, moved = _known(zeroed, baselines, tolerance) if zeroed is not None else (False, False)
            if moved:
                moves.add(place)
            planned, stand_ins = _replacements((MANUAL, place), lambda mode, place=place: {place: mode}, zeros, moved)
            plans.update(planned), instead.update(stand_ins)
            plans.update({(THROUGH, place, i): {place: PASSED + i}
                          for i, given in enumerate(operands) if given == kind})
    got = runs.answers(plans, instead)

    def needed(place) -> bool:
        through = any(same_answers(got[k], baselines, tolerance) for k in got if k[0] == THROUGH and k[1] == place)
        key = (MANUAL, place)
        return not through and not _idle(got.get(key), got.get((SCALED_KEY, key)),
                                         True if place in moves else got.get((TRANSPLANTED, key)), baselines,
                                         tolerance)

    return idle, not shapes or any(needed((m, j)) for m, (_, results) in enumerate(shapes)
                                   for j in range(len(results))), others
