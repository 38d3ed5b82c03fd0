"""The grader's half of program mode: what the student's process is told of a program's inputs, the
inputs it is never told, and the values checked on both.

The rule this module keeps: every fact a verdict rests on is computed by a process that never ran
student code, or is a value checked against the reference on inputs the student's process never
saw. So the student's worker gets only the shapes and dtypes of the test's inputs (it traces and
exports ``jax.jit(fn)`` from those); a clean worker runs the exported program on the test's inputs
and on a set drawn here for this run alone; and every set's values are checked against the suite's
``expect`` before the suite can read anything else of the program. A program built around
particular values (an answer baked in as a constant, one learned from earlier calls) is right for
those at best, and fails on the drawn set.

Drawn inputs follow the test's: floats are standard normal in the input's dtype, integers uniform
between the smallest and the largest of the test's values, bools at random. A suite whose inputs
have a domain (indices, masks, positive values, rows that must agree) passes ``fresh(rng)``
returning inputs of the same shapes and dtypes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader.errors import GraderError
from grader.layout import plural
from grader.protocol import ArraySpec
from grader.suite import structure
from grader.suite.checks import Unexplained, WrongProgram, expect_close, expect_sequence

FRESH_SETS = 1  # input sets drawn per program besides the test's own
NEVER_SEEN = "a second set of inputs drawn by the grader that your code never saw"


@dataclass(frozen=True)
class Program:
    """One compiled program of the student's, run by a clean worker, whose values were checked on the
    test's inputs and on inputs the student's process never saw: what it returned for the test's
    inputs (``value``), its optimised HLO text (``hlo``, read it with grader.suite.hlo) and whether it
    holds a per-device computation, a jax.pmap or jax.shard_map (``manual``, read from the program), and
    the share of each input one device's per-device computation receives (``held``,
    grader.sandbox.program_held).
    ``reference()`` gives the figures of the course's reference compiled the same way
    (grader.grading.reference_figures); ``mesh`` is (axis names, sizes) of the mesh it runs on, where the
    suite named one, for wording where its collectives run; ``what`` names the call in messages."""

    value: object
    hlo: str
    manual: bool
    reference: Callable[[], dict] | None = None
    mesh: tuple | None = None
    what: str = ""  # the call, as messages name it ("distributed_dot")
    held: tuple | None = ()  # per input, the share one device's per-device computation receives (None: none);
    # None for all of them: a program nested too deep to follow (grader.sandbox.program_held)
    holds_manual: bool = True  # whether it holds a per-device computation at all, needed or not
    outside: int | None = 0  # what one device performs of the arithmetic written outside per-device code

    def _figures(self) -> dict:
        if self.reference is None:
            raise GraderError("this program has no reference to compare it with")
        return self.reference()

    def reference_operations(self) -> int | None:
        """The arithmetic one device of the reference's program performs for the same inputs and layout
        (grader.suite.hlo.operations): kept from an earlier run, or measured now."""
        return self._figures()["operations"]

    def reference_products(self) -> int | None:
        """The arithmetic of the products (grader.suite.hlo.products) one device of the reference's program runs."""
        return self._figures()["products"]

    def reference_outside(self) -> int | None:
        """What one device of the reference's program performs of the arithmetic it writes outside its per-device
        computations (grader.suite.work.outside_per_device)."""
        return self._figures()["outside"]

    def reference_held(self) -> list:
        """The share of each input one device's per-device computation of the reference's program receives."""
        return self._figures()["held"]

    def reference_collectives(self) -> list[structure.Step]:
        """The collectives the reference's program runs for the same inputs and layout
        (grader.suite.structure), kept from an earlier run or measured now."""
        return structure.from_plain(self._figures()["collectives"])

    def difference(self, mesh: tuple | None = None, results: frozenset[int] | None = None) -> str | None:
        """The first difference between this program's collectives and the reference's that matters
        (grader.suite.structure.difference), or None; ``mesh`` (axis names, sizes) names the axes, by
        default the one the program was compared on; ``results``: only what these results depend on."""
        return structure.difference(structure.steps(self.hlo), self.reference_collectives(), mesh or self.mesh,
                                    results)


def _map(fn, value, path: str = ""):
    """``fn(leaf, path)`` over the arrays of a tuple/list/dict structure, keeping the structure."""
    if isinstance(value, (tuple, list)):
        return type(value)(_map(fn, v, f"{path}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict):
        return {k: _map(fn, v, f"{path}[{k!r}]") for k, v in value.items()}
    return fn(value, path)


def _spec(value, path: str) -> ArraySpec:
    if not isinstance(value, (np.ndarray, np.generic)) or value.dtype.kind not in "biufc":
        raise GraderError(f"student.program's inputs are NumPy arrays (or tuples/lists/dicts of them); input{path} is "
                          f"a {type(value).__name__}: pass a Python value as a keyword argument, fixed while tracing")
    return ArraySpec(tuple(value.shape), str(value.dtype))


def specs(args: tuple) -> tuple:
    """``args`` with every array replaced by its shape and dtype: all the student's process learns."""
    return _map(_spec, tuple(args))


def _draw(rng: np.random.Generator, like: np.ndarray) -> np.ndarray:
    """An array like ``like`` (shape, dtype) with values drawn by the documented rule."""
    kind = like.dtype.kind
    if kind == "b":
        return rng.random(like.shape) < 0.5
    if kind in "iu":
        low, high = (int(like.min()), int(like.max())) if like.size else (0, 0)
        return rng.integers(low, high, size=like.shape, endpoint=True).astype(like.dtype)
    drawn = rng.standard_normal(like.shape)
    if kind == "c":
        drawn = drawn + 1j * rng.standard_normal(like.shape)
    return drawn.astype(like.dtype)


def fresh_inputs(args: tuple, fresh, rng: np.random.Generator, what: str) -> list[tuple]:
    """FRESH_SETS sets of inputs like ``args``: ``fresh(rng)``'s, or drawn by the default rule."""
    wanted = specs(args)
    sets = []
    for _ in range(FRESH_SETS):
        drawn = tuple(fresh(rng)) if fresh is not None else _map(lambda a, _: _draw(rng, np.asarray(a)), tuple(args))
        if specs(drawn) != wanted:
            raise GraderError(f"the suite's fresh(rng) for {what} returned inputs {specs(drawn)}, expected the shapes "
                              f"and dtypes of the test's: {wanted}")
        sets.append(drawn)
    return sets


def _reference(expect, inputs: tuple, what: str):
    try:
        return expect(*inputs)
    except Exception as exc:  # noqa: BLE001 - the suite's reference failing is the grader's problem
        raise GraderError(f"the suite's expect for {what} raised {type(exc).__name__}: {exc}") from None


class WrongResults(AssertionError):
    """Some arrays of a program's result are wrong: ``results``, their positions among the program's results;
    ``unexplained``: nothing was measured of any but where it differs (checks.Unexplained)."""

    def __init__(self, message: str, results: frozenset[int], unexplained: bool):
        super().__init__(message)
        self.results, self.unexplained = results, unexplained


def _wrong_parts(got, expected, call: tuple[str, str], rtol: float, atol: float, dtype, path: str, counts: dict,
                 probe, starts: tuple, first: int) -> tuple[list[tuple[int, str, AssertionError]], int]:
    """(each wrong array of the result as (its position among the program's results, its path, the failure), how many
    arrays ``expected`` holds), counting from ``first``, in the order jax.jit returns them (a dict's keys
    sorted). A result of another structure fails at once: its arrays cannot be told apart."""
    what = f" result{path}".join(call) if path else "".join(call)
    if isinstance(expected, (dict, tuple, list)):
        if isinstance(expected, dict):
            if not isinstance(got, dict) or set(got) != set(expected):
                keys = sorted(got) if isinstance(got, dict) else type(got).__name__
                raise AssertionError(f"{what} returned {keys}, expected a dict with keys {sorted(expected)}")
            parts = [(got[k], expected[k], f"{path}[{k!r}]") for k in sorted(expected)]
        else:
            parts = [(g, e, f"{path}[{i}]") for i, (g, e) in
                     enumerate(zip(expect_sequence(got, len(expected), what), expected))]
        wrong, at = [], first
        for g, e, where in parts:  # a probe measures a result of one array
            found, arrays = _wrong_parts(g, e, call, rtol, atol, dtype, where, counts, None, starts, at)
            wrong, at = wrong + found, at + arrays
        return wrong, at - first
    exact = np.asarray(expected).dtype.kind in "biu"
    try:
        expect_close(got, expected, what, rtol=0 if exact else rtol, atol=0 if exact else atol, dtype=dtype,
                     counts=counts, probe=probe, starts=tuple(a for a in starts if isinstance(a, np.ndarray)))
    except AssertionError as failure:
        return [(first, path, failure)], 1
    return [], 1


def _check(got, expected, call: tuple[str, str], rtol: float, atol: float, dtype=None, counts: dict | None = None,
           probe=None, starts: tuple = ()) -> None:
    """``got`` must have ``expected``'s structure, and each array its values (integers and bools exactly).
    ``call`` is what the messages name, in two parts: the part of the result checked goes between. Every
    wrong array is told, the first in full and the others by their place; the failure's ``results`` are
    their positions among the program's results (grader.suite.structure.difference compares only what
    they depend on)."""
    wrong = _wrong_parts(got, expected, call, rtol, atol, dtype, "", counts, probe, starts, 0)[0]
    if wrong:
        told = [str(wrong[0][2])] + [str(failure).replace(f" result{path}".join(call), f"result{path}", 1)
                                     for _, path, failure in wrong[1:]]
        raise WrongResults("; and ".join(told), frozenset(k for k, _, _ in wrong),
                           all(isinstance(failure, Unexplained) for _, _, failure in wrong))


# How close to the answer a result on the test's inputs is taken as known rather than computed: float32 rounding.
_EXACT = 1e-6


def _leaves(value) -> list:
    if isinstance(value, dict):
        return [leaf for key in sorted(value, key=repr) for leaf in _leaves(value[key])]
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _right_only_for(got, expected) -> str:
    """What a result wrong on the grader's second set says of the test's own (``got`` against ``expected``): right
    there to the last digits (known in advance, or precision lost on other inputs), or only within the check's
    tolerance (round 50: an element dropped from a long dot moved it by less than that), a measured difference
    either way."""
    try:
        pairs = list(zip(_leaves(got), _leaves(expected), strict=True))
        exact = all(np.allclose(np.asarray(g, np.float64), np.asarray(e, np.float64), rtol=_EXACT, atol=_EXACT)
                    for g, e in pairs)
    except (TypeError, ValueError):
        exact = False
    if exact:  # what was measured, and the two causes it fits (round 58: a variance as E[x^2] - E[x]^2 in float32)
        return ("on the test's own inputs it was right to the last digits: a result known in advance for them "
                "rather than computed from its inputs, or arithmetic that loses precision on some inputs (a "
                "difference of two large, nearly equal numbers) gives that")
    return ("on the test's own inputs it was off too, by less than the check's tolerance: the mistake shows on "
            "these")


def check_values(program: Program, values: list, input_sets: list[tuple], expect, what: str, devices: int,
                 rtol: float, atol: float, dtype=None, counts: dict | None = None, probe=None) -> None:
    """Every set's values against ``expect`` of the same inputs (the first set is the test's own), or
    WrongProgram saying which set was wrong where; ``dtype``: the dtype every array of the result keeps."""
    first = None  # the answer to the test's own inputs
    for i, (got, inputs) in enumerate(zip(values, input_sets)):
        which = "the test's inputs" if i == 0 else NEVER_SEEN
        call = (what, f" (compiled with jax.jit, on {plural(devices, 'device')}, given {which})")
        expected = _reference(expect, inputs, what)
        first = expected if i == 0 else first
        try:
            _check(got, expected, call, rtol, atol, dtype,
                   counts={"devices": devices, **(counts or {})}, probe=probe if i == 0 else None, starts=inputs)
        except AssertionError as wrong:
            message = str(wrong) if i == 0 else f"{wrong}; {_right_only_for(values[0], first)}"
            failure = WrongProgram(message, program, results=getattr(wrong, "results", None))
            failure.unexplained = i == 0 and getattr(wrong, "unexplained", False)
            raise failure from None
