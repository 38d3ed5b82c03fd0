"""A program that reaches its answer by another mechanism than the one the statement asks for.

A student who computes a shard_map task with ``jax.jit`` and out_shardings, or who has every device
gather its inputs whole where the task hands them over in blocks, gets the right numbers (or nearly)
by a route the task does not teach. A message about the first symptom ("wrong at 3 of 8 entries",
"runs an all-gather") then offers a local fix for a design that is wrong as a whole. So the
mechanism is told first, from two facts the clean worker measured on the compiled program, and no
local fix is offered:

* **no per-device computation**: the statement asks for a per-device tool (``Asks.tool``: "jax.pmap",
  "jax.shard_map"), and on more than one device the program holds no such computation that its
  answer depends on (``Program.manual``: it holds one, and replacing its results changes the answer);
* **reductions left to XLA**: the statement asks for a per-device tool, and XLA's partitioner adds
  all-reduces (or reduce-scatters) to finish a sum, a dot, a maximum, a scatter-add the program wrote
  outside its per-device code on arrays split over the devices, that the answer depends on, more than the
  reference's program, compiled the same way, has: the devices' results were combined by XLA, and a
  collective of the program's own beside them (a psum of one element) does not make them its own (the
  clean worker compiles without XLA's combiners, so the partitioner's all-reduce is not merged into the
  program's own psum);
* **inputs gathered at the program's entry**: the task hands inputs over in blocks (``arrives``), and
  the compiled program gathers them with collectives that come from no operation of the program's
  own: XLA added them at its boundary because the program declares its inputs laid out otherwise
  (in_shardings, in_specs of whole arrays).

Each is a fact about the compiled program, said in the task's words; the statement's demand is the
suite's data (:class:`Asks`, ``arrives``), not a rule per mistake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.layout import plural
from grader.suite import hlo, structure

# The program's operations for which XLA's partitioner adds an all-reduce or reduce-scatter to move data (to
# read one device's block, to lay a value out again), not to combine what the devices computed; any other
# operation, or none named (the partitioner does not always say which), is a reduction. REDUCTIONS names some.
MOVES = frozenset({"stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim", "stablehlo.slice",
                   "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice", "stablehlo.concatenate",
                   "stablehlo.pad", "stablehlo.reverse", "stablehlo.gather", "stablehlo.convert", "stablehlo.select",
                   "stablehlo.copy", "stablehlo.iota", "stablehlo.custom_call", "sdy.sharding_constraint",
                   "sdy.reshard"})
REDUCTIONS = {"stablehlo.dot_general": "a dot or matmul", "stablehlo.reduce": "a sum, mean or maximum",
              "stablehlo.reduce_window": "a cumulative sum", "stablehlo.scatter": "a scatter-add"}


@dataclass(frozen=True)
class Asks:
    """What the statement asks a program to be built with, for a test that grades how it was built (a
    structural test; one that checks values only passes none, so a bypass keeps its value points):
    ``tool``, the per-device tool ("jax.pmap", "jax.shard_map"), or None where the statement leaves the
    partitioning to XLA; ``names``, the inputs' names in the statement, where the task hands them over in
    blocks (``arrives``) for each device to use the blocks it holds."""

    tool: str | None = None
    names: tuple[str, ...] = ()


def _whole(shape: str) -> tuple[int, ...] | None:
    m = re.match(r"[a-z]+\d*\[([\d,\s]*)\]", shape)
    return tuple(int(d) for d in m.group(1).split(",") if d.strip()) if m else None


def _spec_text(spec) -> str:
    return "P(" + ", ".join(repr(a) if not isinstance(a, (list, tuple)) else repr(tuple(a)) for a in spec) + ")"


def entry_gathers(text: str) -> list[hlo.Collective]:
    """The all-gathers of the compiled program ``text`` that no operation of the program asked for (XLA
    added them where the program's declared input layout differs from the one its inputs arrive in) and
    whose result the answer depends on."""
    return [c for c in hlo.collectives(text) if c.op == "all-gather" and not c.by_student and not c.kind
            and not c.idle]


def _gathered_inputs(text: str, names: tuple[str, ...], shapes: list[tuple[int, ...]], arrives) -> str | None:
    """What the entry's gathers make whole, in the task's words, or None where it gathers nothing."""
    gathers = entry_gathers(text)
    if not gathers:
        return None
    made = {_whole(c.shape) for c in gathers}
    whole = [f"{name} ({_spec_text(spec)} as it arrives)" for name, shape, spec in zip(names, shapes, arrives)
             if spec is not None and shape is not None and any(a is not None for a in spec) and tuple(shape) in made]
    if not whole:
        return None
    return (f"the program declares its inputs laid out otherwise than the task hands them over, so before any "
            f"operation of its own runs, every device gathers {' and '.join(whole)} whole "
            f"({plural(len(gathers), 'all-gather')} added by XLA at the program's entry). The task hands its "
            "inputs over in blocks so that each device works on the blocks it holds")


def reductions(found: list[structure.Step]) -> list[structure.Step]:
    """Those of ``found`` that XLA's partitioner added to combine what the devices computed: its all-reduces and
    reduce-scatters for an operation that does not only move data (:data:`MOVES`)."""
    return [s for s in found if not s.by_student and s.op in ("all-reduce", "reduce-scatter") and s.kind not in MOVES]


def _reduced_by_xla(text: str, asks: Asks, reference) -> str | None:
    """What to say where XLA's partitioner finishes more of the program's reductions than the reference's
    (``reference()``: its collectives), or None."""
    steps, theirs = structure.steps(text), reference() if reference is not None else None
    mine = reductions(steps)
    if not mine or theirs is None or len(mine) <= len(reductions(theirs)):
        return None
    kinds = " and ".join(dict.fromkeys(REDUCTIONS.get(s.kind, "a reduction") for s in mine))
    ops = " and ".join(dict.fromkeys(s.op for s in mine)) + ("s" if len(mine) > 1 else "")
    it = "it" if len(mine) == 1 else "them"
    said = (f"XLA's partitioner adds {len(mine)} {ops} to finish {kinds} that your program computes outside its "
            f"{asks.tool}, on arrays split over the devices, and the answer depends on {it}; the reference's program "
            f"leaves no such reduction to XLA: its devices reduce inside {asks.tool} and combine their results with "
            "collectives of their own.")
    own = {s.op for s in theirs if s.by_student}
    if own and own <= {s.op for s in steps if s.by_student}:  # round 49: a psum inside, then .sum() outside
        return (f"{said} Your {asks.tool} already runs the reference's {' and '.join(sorted(own))} of its own, so "
                f"the reduction outside it comes on top of them: reduce inside {asks.tool} only, as the reference "
                "does")
    return f"{said} The statement asks for that: another design, not a detail to fix"


def told(what: str, devices: int, manual: bool, text: str, asks: Asks, arrives=None, shapes: list = (),
         holds: bool = True, reference=None) -> str | None:
    """The sentence that tells the mechanism ``what``'s program used instead of the one ``asks`` says, or None;
    ``shapes``: the inputs' shapes (None for one that is not an array), for ``arrives``; ``holds``: whether
    the program holds a per-device computation at all (``manual``: one its answer needs); ``reference``: the
    reference program's collectives (a callable), where the grader has its figures."""
    if asks.tool and devices > 1 and not manual:
        measured = ("with what each per-device computation of the compiled program returns replaced by zeros, "
                    "by what it was handed, or by what it returns for other inputs, the answer stayed the same (or "
                    "changed only as it does with zeros: the results are only tested), so the devices' own code "
                    "computed nothing of it" if holds else
                    f"the compiled program holds no {asks.tool} over more than one device (none was written, or one "
                    "over an axis of 1, which JAX compiles away), so no per-device code of yours split the work over "
                    "the devices")
        return (f"{what}: its program has no {asks.tool} that its answer depends on: on {plural(devices, 'device')}, "
                f"{measured}. The statement asks for per-device code you write, run on every device by "
                f"{asks.tool}: that is another design, not a detail to fix")
    reduced = asks.tool and devices > 1 and _reduced_by_xla(text, asks, reference)
    if reduced:
        return f"{what}: on {plural(devices, 'device')}, {reduced}"
    if arrives is not None and asks.names:
        said = _gathered_inputs(text, asks.names, list(shapes), arrives)
        if said:
            return f"{what}: {said}"
    return None
