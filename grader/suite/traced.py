"""How the collectives a student's function asks for differ from the reference's, read from their traces
(grader.sandbox.traced_collectives): for a program JAX refuses to build, and after any wrong value.

A shard_map whose out_specs JAX rejects, or a gather along the wrong axis that a product then rejects,
leaves no compiled program to compare, and JAX's words name a type or a shape, not a mistake; a wrong
value says nothing of the code behind it. Traced again with shard_map's check off, both functions say
which collectives they ask for: over which mesh axes, along which dimension, returning which shape, made
of which inputs of their per-device computation, in a loop's body or not. The first difference is what
the student's function does that the reference's does not: a collective over axes the reference never
runs it over, combining otherwise, along another dimension, returning another shape, on a value made of
other inputs; and where the student's trace ran to its end, one missing or one too many. A trace that
failed further on says only what it asked for before it failed, so no collective is called missing from it. Before the collectives, the per-device computations' layouts are
compared (grader.suite.mapped): a wrong in_specs or in_axes changes what every collective after it sees.
The student's list comes from the student's process: it is checked for form and used in a message only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from grader.suite import mapped
from grader.suite.mapped import AXIS, read_shape
from grader.suite.meshes import over_text

# The collectives a trace can name, as the code asks for them.
NAMES = ("psum", "pmean", "pmax", "pmin", "ppermute", "all_gather", "psum_scatter", "all_to_all")
# Reductions: one where the reference runs another over the same axes combines the devices' values otherwise.
_COMBINES = {"psum": "adds up", "pmean": "averages", "pmax": "takes the maximum", "pmin": "takes the minimum"}
_ALONG = {"all_gather": "gathers along", "psum_scatter": "splits", "all_to_all": "exchanges along"}
_MOST = 64  # collectives read from one trace at most
# What a refused function is told where, traced again, it asks for the reference's own collectives.
SAME = "the same collectives as the reference's"
# How a student reads a difference measured from the two traces: words of the task, not of the machinery.
COMPARED = "Compared with the reference solution"


@dataclass(frozen=True)
class Asked:
    """One collective of a trace."""

    name: str
    axes: tuple[str, ...]
    dimension: int | None
    shape: tuple[int, ...] | None
    origin: tuple[tuple[int, tuple[int, ...]], ...] | None = None  # inputs of its computation its operand is made of
    looped: bool = False  # in a loop's body: asked once, run as often as the loop turns

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return self.name, self.axes


def _origin(raw) -> tuple | None:
    """[[k, shape], ...] as read, or None (also for one not of that form)."""
    if not isinstance(raw, (list, tuple)) or len(raw) > 64 or \
            not all(isinstance(item, (list, tuple)) and len(item) == 2 for item in raw):
        return None
    read = tuple((k, read_shape(shape)) for k, shape in raw)
    return read if all(isinstance(k, int) and 0 <= k < 64 and shape is not None for k, shape in read) else None


def _asked(item) -> Asked | None:
    if not (isinstance(item, (list, tuple)) and len(item) in (4, 6) and item[0] in NAMES):
        return None
    name, axes, dimension, shape = item[:4]
    if not (isinstance(axes, (list, tuple)) and len(axes) <= 4
            and all(isinstance(a, str) and AXIS.fullmatch(a) for a in axes)):
        return None
    if dimension is not None and not (isinstance(dimension, int) and 0 <= dimension < 16):
        return None
    if shape is not None and read_shape(shape) is None:
        return None
    origin = _origin(item[4]) if len(item) == 6 and item[4] is not None else None
    if len(item) == 6 and ((item[4] is not None and origin is None) or not isinstance(item[5], bool)):
        return None
    return Asked(name, tuple(axes), dimension, None if shape is None else tuple(shape), origin,
                 len(item) == 6 and item[5])


def read(trace) -> tuple[list[Asked], bool] | None:
    """A trace's {"collectives": [...], "complete": bool} as (collectives, complete); None if it is not of
    that form."""
    if not isinstance(trace, dict) or not isinstance(trace.get("complete"), bool):
        return None
    found = trace.get("collectives")
    if not isinstance(found, (list, tuple)) or len(found) > _MOST:
        return None
    asked = [_asked(item) for item in found]
    return (asked, trace["complete"]) if all(asked) else None


def _call(a: Asked) -> str:
    return f"lax.{a.name} {over_text(a.axes)}"


def _returns(a: Asked) -> str:
    along = f"{_ALONG[a.name]} axis {a.dimension} and " if a.name in _ALONG and a.dimension is not None else ""
    return f"{along}returns {a.shape} on each device" if a.shape is not None else along.removesuffix(" and ")


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")


def _made_of(origin) -> str:
    if not origin:
        return "no input (a constant)"
    said = [f"{k} {shape}" for k, shape in origin]
    return f"input {said[0]} alone" if len(said) == 1 else f"inputs {', '.join(said[:-1])} and {said[-1]}"


def _inputs(a: Asked) -> frozenset | None:
    return None if a.origin is None else frozenset(k for k, _ in a.origin)


def _alike(a: Asked, r: Asked) -> bool:
    """Whether two collectives of one key run alike: along the same dimension, returning the same shape, on a
    value made of the same inputs where both say."""
    known = None not in (_inputs(a), _inputs(r))
    return _form(a) == _form(r) and (not known or _inputs(a) == _inputs(r))


def _form(a: Asked) -> tuple:
    return a.dimension, a.shape


def _otherwise(mine: list[Asked], theirs: list[Asked]) -> str | None:
    """The first of the student's collectives that no collective of the reference's of the same kind over the same
    axes runs alike, told against its counterpart: the one made of the same inputs (it runs along another
    dimension or returns another shape), else one of the same form (it runs on a value made of other inputs);
    where what they are made of is not known (a trace that failed), a form of the student's collectives the
    reference's never take, told against one of the reference's forms the student's never take."""
    for a in mine:
        same = [r for r in theirs if r.key == a.key]
        if not same or any(_alike(a, r) for r in same):
            continue
        made = [r for r in same if _inputs(a) is not None and _inputs(r) == _inputs(a)]
        if made:
            return _against(a, made[0])
        formed = [r for r in same if _form(r) == _form(a) and None not in (_inputs(a), _inputs(r))]
        if formed:
            return (f"your {_call(a)} runs on a value made of {_made_of(a.origin)} of its per-device computation; "
                    f"the reference's on one made of {_made_of(formed[0].origin)}")
    for key in dict.fromkeys(a.key for a in mine if a.origin is None):
        # forms, not counts: a trace that failed reads a collective once per level of JAX's tracing (a gradient's)
        have = {_form(a) for a in mine if a.key == key}
        want = {_form(r) for r in theirs if r.key == key}
        extra, lacking = have - want, want - have
        if want and extra and lacking:
            a = next(a for a in mine if a.key == key and _form(a) in extra)
            # its counterpart: a lacking one of the same dimension before one of the same shape before any
            r = min((r for r in theirs if r.key == key and _form(r) in lacking),
                    key=lambda r: (r.dimension != a.dimension, r.shape != a.shape))
            return _against(a, r)
    return None


def _against(a: Asked, r: Asked) -> str:
    """The student's collective ``a`` told against the reference's ``r`` of the same kind: what each returns, and,
    where the shapes prove it, that ``a`` stacks the gathered blocks in a new axis where ``r`` joins them."""
    if _stacked(a, r):
        return (f"your {_call(a)} stacks the blocks in a new axis {a.dimension} and returns {a.shape} on each device; "
                f"the reference's joins them along axis {r.dimension} and returns {r.shape} (tiled=True)")
    return f"your {_call(a)} {_returns(a)}; the reference's {_returns(r)}"


def _stacked(a: Asked, r: Asked) -> bool:
    """Whether all_gather ``a`` returns ``r``'s shape with the gathered axis split in two (devices, block): the
    untiled form, one block per device along a new axis, where ``r`` is the tiled one."""
    if a.name != "all_gather" or r.name != a.name or a.dimension is None or a.dimension != r.dimension \
            or a.shape is None or r.shape is None or len(a.shape) != len(r.shape) + 1:
        return False
    d = a.dimension
    split = a.shape[d] * a.shape[d + 1] == r.shape[d]
    return split and a.shape[:d] == r.shape[:d] and a.shape[d + 2:] == r.shape[d + 1:]


def _elsewhere(mine: list[Asked], theirs: list[Asked]) -> str | None:
    """A collective the student's function runs over axes (or combining) otherwise than the reference's."""
    keys = {r.key for r in theirs}
    for a in mine:
        if a.key in keys:
            continue
        other = [r for r in theirs if r.axes == a.axes and a.name in _COMBINES and r.name in _COMBINES
                 and r.key not in {m.key for m in mine}]
        if other:
            return (f"your function {_COMBINES[a.name]} with {_call(a)}; the reference's "
                    f"{_COMBINES[other[0].name]} (lax.{other[0].name})")
        same = [r for r in theirs if r.name == a.name and r.key not in {m.key for m in mine}]
        if same:
            return f"your function's lax.{a.name} runs {over_text(a.axes)}; the reference's runs {over_text(same[0].axes)}"
        elsewhere = list(dict.fromkeys(r.axes for r in theirs if r.name == a.name))
        if len(elsewhere) == 1:  # the reference runs this collective, but never over these axes
            return (f"your function runs lax.{a.name} {over_text(a.axes)}, which the reference's never does: its "
                    f"lax.{a.name} runs {over_text(elsewhere[0])} only")
    return None


def measured(mine, theirs) -> str | None:
    """What a failing function is told from the two traces: their first :func:`difference`, or :data:`SAME`
    where the student's asks for the reference's own collectives; None where neither is known."""
    return difference(mine, theirs) or (SAME if same(mine, theirs) else None)


def _both(mine, theirs):
    """Both traces read, the reference's pmap axes called by the student's names (the name is the writer's
    choice, grader.suite.mapped.pmap_names)."""
    names = {ref: student for student, ref in mapped.pmap_names(mine, theirs).items()}
    mine, theirs = read(mine), read(theirs)
    if theirs is not None and names:
        theirs = ([Asked(a.name, tuple(names.get(x, x) for x in a.axes), a.dimension, a.shape, a.origin,
                         a.looped) for a in theirs[0]], theirs[1])
    return mine, theirs


def same(mine, theirs) -> bool:
    """Whether two whole traces ask for the same collectives (over the same axes, as often, along the same
    dimensions, returning the same shapes, made of the same inputs), in any order."""
    mine, theirs = _both(mine, theirs)
    return (mine is not None and theirs is not None and mine[1] and theirs[1]
            and Counter(mine[0]) == Counter(theirs[0]))


def _asks_nothing(trace) -> bool:
    """Whether a trace read whole asks for no collective and no per-device computation (a ``jax.jit`` program
    whose collectives XLA adds, which a trace cannot show): "yours never" would blame what the task allows."""
    maps = trace.get("maps") if isinstance(trace, dict) else None
    return (isinstance(maps, list) and trace.get("complete") is True and not trace.get("collectives")
            and not any(isinstance(m, dict) and m.get("kind") in ("pmap", "shard_map") for m in maps))


def difference(mine, theirs) -> str | None:
    """How two traces differ, in words: first an input or result their per-device computations lay out
    otherwise (grader.suite.mapped), else their collectives; None where they ask for the same, where the
    student's trace failed before any difference shows, or where either is not of a trace's form."""
    laid_out = mapped.difference(mine, theirs)
    if laid_out:
        return laid_out
    if _asks_nothing(mine):  # a jax.jit program that leaves every collective to XLA: none to compare
        return None
    mine, theirs = _both(mine, theirs)
    if mine is None or theirs is None or not theirs[1]:
        return None
    (asked, complete), (wanted, _) = mine, theirs
    said = _elsewhere(asked, wanted) or _otherwise(asked, wanted)  # over which axes, before what a form follows
    if said or not complete:
        return said
    have, want = Counter(a.key for a in asked), Counter(r.key for r in wanted)
    # How often a loop runs its body no trace counts: for a collective in one, only whether it runs at all.
    looped = {a.key for a in (*asked, *wanted) if a.looped}
    have, want = ({k: min(n, 1) if k in looped else n for k, n in c.items()} for c in (have, want))
    told = [f"the reference's function runs {_call(r)} {_times_in(r.key, want, looped)}, yours "
            f"{_times_in(r.key, have, looped)}" for r in wanted if want[r.key] > have.get(r.key, 0)][:1]
    told += [f"your function runs {_call(a)} {_times_in(a.key, have, looped)}, the reference's "
             f"{_times_in(a.key, want, looped)}" for a in asked if have[a.key] > want.get(a.key, 0)][:1]
    return "; ".join(told) or None


def _times_in(key, counts: dict, looped: set) -> str:
    n = counts.get(key, 0)
    return "in a loop" if key in looped and n else _times(n)
