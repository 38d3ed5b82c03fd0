"""The JAX errors students meet, turned into the mistake behind them.

JAX describes what went wrong inside JAX: a sharding whose tiles do not divide, a traced array whose
``__array__`` was called, an out_specs whose replication cannot be inferred. A student needs the
mistake in their own terms: "perm is written for 4 devices, but this ring has 2", "np.sqrt is a
NumPy function: use jnp.sqrt". Each :class:`Rule` recognises one JAX message and says that.

The grader applies :data:`RULES` to every student error a test does not catch (grader.grading),
and keeps JAX's own text for instructors in the report (the case's ``error``). A suite that knows
more about its task adds rules of its own, tried first, as a module-level ``JAX_ERRORS`` tuple in its
test file; a test that catches a failure itself can call :func:`explain` with them.
Rules read the full error text, the case's device count and the line of the student's code that
raised (when the worker could tell), never student objects: this runs in the grader process.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

from grader.errors import StudentFailure
from grader.layout import plural
from grader.suite.call_arguments import argument, call_with
from grader.suite.traced import COMPARED, SAME


@dataclass(frozen=True)
class Situation:
    """What a rule may know about the failed call besides JAX's text."""

    devices: int | None = None  # devices of the case (per process in a multi-process layout)
    line: str = ""              # the student's source line that raised, if known
    raised_in: str | None = None  # "jax", "submission" or "library" (StudentFailure.raised_in), if known
    measured: str | None = None  # traced again with JAX's check off, how it differs from the reference's (traced)


@dataclass(frozen=True)
class Rule:
    """``pattern`` found in an error's text (with ``exc_types`` among its types, if given) means ``say``.

    ``say(match, situation)`` returns the sentence, or None when the message fits but the mistake
    cannot be told (another rule may still know).
    """

    name: str
    pattern: re.Pattern
    say: Callable[[re.Match, Situation], str | None]
    exc_types: tuple[str, ...] = ()


def _pairs(text: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in re.findall(r"\((-?\d+),\s*(-?\d+)\)", text)]


def _ppermute(match: re.Match, s: Situation) -> str:
    perm = match["perm"]
    pairs = _pairs(perm)
    written_for = max((max(p) for p in pairs), default=-1) + 1
    if s.devices and pairs and written_for != s.devices:
        return (f"lax.ppermute's perm {perm} is written for {plural(written_for, 'device')}, but this ring has {s.devices}: "
                "build perm from lax.axis_size(axis_name), never a fixed device count")
    if len({a for a, _ in pairs}) == len({b for _, b in pairs}) == len(pairs) == written_for:
        return (f"lax.ppermute's perm {perm} is written for {plural(written_for, 'device')}, but the axis it runs over "
                "has fewer (a mesh axis holds only some of the devices): build perm from lax.axis_size(axis_name), "
                "never from jax.device_count()")
    return (f"lax.ppermute's perm {perm} names a device twice as a source or as a destination: every device must "
            "send once and receive once, e.g. perm=[(i, (i + shift) % n) for i in range(n)]")


def _spec_entries(text: str) -> list[str | None]:
    """The entries of a PartitionSpec's source text (P('data',) and P("data") alike)."""
    return [a or b or None for a, b, _ in re.findall(r"'([^']*)'|\"([^\"]*)\"|(None)", text)]


def _which_out_spec(spec: str, line: str) -> str:
    """"out_specs[k]" where the student's out_specs on ``line`` is a tuple whose entry k is ``spec``, else "out_specs"."""
    written = argument(line, "shard_map", "out_specs")
    if not written or not written.startswith(("(", "[")):
        return "out_specs"
    entries = re.findall(r"P\([^()]*\)|PartitionSpec\([^()]*\)", written)
    hits = [k for k, entry in enumerate(entries) if _spec_entries(entry) == _spec_entries(spec)]
    return f"out_specs[{hits[0]}]" if len(hits) == 1 and len(entries) > 1 else "out_specs"


def _out_specs(match: re.Match, s: Situation) -> str:
    axes = match["axes"] or ", ".join(f"'{a.strip()}'" for a in match["bare"].split(","))
    which = f"out_specs{match['index']}" if match["index"] else _which_out_spec(match["spec"], s.line)
    said = (f"shard_map's {which} {match['spec']} says the result is the same on every device along mesh axis "
            f"{axes}, but JAX counts your function's result as differing along {axes}")
    if s.measured == SAME:  # the collectives are the reference's: what differs is the out_specs
        return (f"{said}. Traced again without that check, your function asks for the same collectives as the "
                f"reference's, over the same mesh axes: so its result does differ along {axes}, and the out_specs "
                f"are what is wrong; name {axes} in {which} where each device's block of the result goes")
    if s.measured:  # what the function does otherwise than the reference's, measured: no list of guesses
        return f"{said}. Traced again without that check, {s.measured}"
    return (f"{said}: it is computed from values "
            f"that differ along it (each device's own block, or what lax.all_gather over it returns, which JAX still "
            f"counts as differing). A collective over {axes} makes it the same on every device (lax.psum adds "
            f"the devices' values, lax.pmean averages them: which one is the task's question), as one over another "
            f"axis does not; but where lax.all_gather made every device compute the same numbers, a psum after it "
            f"counts them once per device: compute from the blocks each device holds and combine the partial results "
            f"instead. If each device holds its own block of the result, name {axes} in out_specs where the blocks go")


_NUMPY_CALL = re.compile(r"\b(?:np|numpy|onp)\.([A-Za-z_][\w.]*)\s*\(")


_TRACED_FOR = re.compile(r"while tracing the function (?P<fn>\S+) at (?P<path>\S+?):\d+ for (?P<how>\w+)")


def _outside_per_device_code(text: str) -> bool:
    """JAX's text says the NumPy call ran while a function of the submission's (or the suite's) was traced for
    jax.jit, not inside a jax.pmap or shard_map: the function hands its own inputs to NumPy."""
    traced = _TRACED_FOR.search(text)
    return bool(traced) and traced["how"] == "jit" and "/jax/_src/" not in traced["path"]


def _numpy_on_tracer(match: re.Match, s: Situation) -> str:
    called = _NUMPY_CALL.search(s.line)
    if _outside_per_device_code(match.string):
        what = f"np.{called[1]}" if called else "NumPy"
        return (f"{what} runs on the function's inputs outside any jax.pmap or shard_map: called as it is, it "
                "computes on the host, not on the devices, and jax.jit cannot trace it. The task's work belongs on "
                "the devices, inside jax.pmap or jax.shard_map (or in jax.numpy under jax.jit where the task asks "
                "for shardings); whatever prepares the inputs before that is jax.numpy too")
    if called:
        fn = called[1]
        return (f"np.{fn} is a NumPy function: it needs concrete numbers, but inside jax.pmap / jax.jit your values "
                f"are traced; use jnp.{fn}")
    return ("a NumPy function (np....) was handed a traced value inside jax.pmap / jax.jit, where values are not "
            "numbers yet: use its jax.numpy twin (jnp.sqrt for np.sqrt, jnp.asarray for np.asarray)")


def _python_number(match: re.Match, s: Situation) -> str:
    return (f"{match['fn']}() needs a concrete number, but inside jax.pmap / jax.jit the value is traced: keep it an "
            "array (x.astype(...) converts the dtype)")


def _branch_on_tracer(match: re.Match, s: Situation) -> str:
    return ("an if (or and / or / while) on a traced value: inside jax.pmap / jax.jit the value is not known while "
            "the program is built; choose with jnp.where or lax.cond, or branch on shapes only")


def _set_mesh_in_jit(match: re.Match, s: Situation) -> str:
    """The grader lets ``jax.set_mesh`` work while it traces a graded function (grader.sandbox.mesh_in_trace); this is
    what is left: a set_mesh imported by name, or one inside a function the suite itself maps or jits."""
    return ("jax.set_mesh is refused inside jax.jit, and this code ran inside one (a function the grader traces, or "
            "one a test calls inside its own jax.pmap): give the mesh to each call instead, NamedSharding(mesh, spec) "
            "to jax.device_put and mesh=mesh to jax.shard_map, or call it as jax.set_mesh(...), which the grader's "
            "own trace lets work")


def _pmap_leading_axis(match: re.Match, s: Situation) -> str:
    parts, size = int(match["parts"]), int(match["size"])
    return (f"jax.pmap got an input with leading axis {size}, but it maps over {plural(parts, 'device')}: the leading axis "
            "must be jax.device_count(); reshape to (jax.device_count(), ...) first")


def _pmap_squeeze(match: re.Match, s: Situation) -> str | None:
    per = int(match["per"])
    if not s.devices or per <= 1:
        return None
    return (f"jax.pmap got an input with leading axis {per * s.devices}, {per} rows per device, but it maps over "
            f"{plural(s.devices, 'device')}: the leading axis must be jax.device_count(); reshape to "
            f"({s.devices}, ...) first")


def _scalar_split(axis: str) -> str:
    if axis == "_internal_pmap_axis_name":
        return ("jax.pmap maps every argument over the devices, and a scalar has no leading axis to split: give it "
                "in_axes None (e.g. in_axes=(0, 0, None)) or static_broadcasted_argnums, so every device gets the "
                "same value")
    return (f"a scalar was split over the devices of axis '{axis}', but it has no axis to split: jax.pmap maps every "
            "argument unless in_axes says None for it (e.g. in_axes=(0, 0, None)) or static_broadcasted_argnums "
            "names it; a jit's in_shardings gives a scalar P()")


def _scalar_mapped(match: re.Match, s: Situation) -> str:
    return _scalar_split(match["axis"])


def _reshape(match: re.Match, s: Situation) -> str:
    size, shape = match["size"], match["shape"]
    parts = match["parts"]
    if parts:
        return (f"{size} elements do not split into {parts} equal parts (reshape to ({shape})): pad with zeros to "
                f"a multiple of {parts} before reshaping")
    dims = [int(d) for d in re.findall(r"\d+", shape)]
    lead, each = (dims[0], math.prod(dims[1:])) if dims else (0, 0)
    if lead and each and int(size) % lead == 0:  # it splits into the parts; their length is what differs
        return (f"an array of {size} elements cannot be reshaped to ({shape}): it does split into "
                f"{plural(lead, 'equal part')}, of {int(size) // lead} elements each, but the shape gives each part "
                f"{each}: the length per part your code computed does not match the array it reshapes")
    if 0 in dims and int(size):  # round 48: x.shape[0] // jax.device_count() inside a ring of fewer devices
        return (f"an array of {size} elements cannot be reshaped to ({shape}): the new shape has an axis of length 0, "
                "so a length your code computed by dividing came out 0, the divisor being larger than the axis it "
                "divides; check what that count counts (inside jax.pmap or shard_map, the devices along an axis are "
                "lax.axis_size(axis_name), not jax.device_count())")
    pad = f"; pad to a multiple of {lead} first" if lead and lead == s.devices else ""
    return f"an array of {size} elements cannot be reshaped to ({shape}): the new shape must hold exactly as many{pad}"


def _scatter(match: re.Match, s: Situation) -> str:
    """Which dimension should be scattered is the task's, not JAX's: round 36's fsdp scattered the gradient's columns
    (3) where w is split by rows, and "pad it" was wrong advice. So the fix is said for both cases."""
    size, parts = match["size"], match["parts"]
    written = argument(s.line, "psum_scatter", "scatter_dimension")
    if written is None and call_with(s.line, ("psum_scatter",)):
        written = "0"  # the call on the line leaves it out: the default
    which = f"dimension {written} (scatter_dimension={written})" if written else "its scatter_dimension"
    return (f"lax.psum_scatter splits {which}, of {plural(int(size), 'entry', 'entries')}, into {parts} equal parts, "
            f"one per device, and {parts} does not divide {size}: scatter_dimension must name the dimension the result "
            f"is split along; if that is this one, pad it to a multiple of {parts}")


def _unhashable_static(match: re.Match, s: Situation) -> str:
    """An array (or a tuple holding one) passed where static_broadcasted_argnums / static_argnums says the argument
    is a fixed Python value (round 38: a batch marked static where lr was meant)."""
    index = f"the argument at index {match['index']}" if match["index"] else "an argument"
    kind = (match["type"] or match["other"] or "value").rpartition(".")[2]
    kind = {"ndarray": "NumPy array", "ArrayImpl": "JAX array"}.get(kind, kind)
    return (f"{index} is marked static (static_broadcasted_argnums or static_argnums), and it is a {kind}, which "
            "cannot be hashed: mark static only fixed Python values such as a learning rate, and pass arrays as "
            "ordinary arguments (in_axes None gives every device the same one)")


def _contraction(match: re.Match, s: Situation) -> str:
    return (f"a matrix product contracts a dimension of {match['a']} with one of {match['b']}: the last axis of the "
            "left operand must have as many entries as the first axis of the right one (the second to last, if it "
            "has two or more)")


def _in_specs(match: re.Match, s: Situation) -> str:
    want, got, arg = match["want"], match["got"], match["arg"]
    said = f"shard_map's in_specs say an argument ({arg}) is laid out as {want}, but it arrives as {got}"
    if s.measured and s.measured != SAME:  # which of the two is wrong is what the reference's trace tells
        return said
    return (f"{said}: on a mesh with Explicit axes (jax.make_mesh's default) put it there first, with "
            f"jax.device_put(x, NamedSharding(mesh, {want}))")


def _indivisible_spec(match: re.Match, s: Situation) -> str:
    axis, parts, size = match["axis"], match["parts"], match["size"]
    spec = f" {match['spec']}" if match.groupdict().get("spec") else ""
    said = (f"array axis {axis} has size {size}, which does not split evenly over the {plural(int(parts), 'device')} "
            f"entry {axis} of its PartitionSpec{spec} (counting from 0) puts it on")
    if s.measured and s.measured != SAME:  # where it differs from the reference's is measured: no list of places
        return said
    return (f"{said}. Compare the PartitionSpec with the "
            f"task's layout, entry by entry, and the array's shape with the one the layout splits: an entry naming "
            f"another mesh axis, or an array whose axes come in another order, puts an axis where it does not divide")


def _unbound_axis(match: re.Match, s: Situation) -> str:
    return (f"a collective over the axis name '{match['axis']}', but no jax.pmap or shard_map around it binds that "
            "name: use the axis_name you are given (or the one you passed to jax.pmap)")


def _mesh_size(match: re.Match, s: Situation) -> str:
    """A mesh whose shape does not hold the devices there are: jax.make_mesh asks for at most as many, mesh_utils'
    create_device_mesh for exactly as many (round 37: a shape written as (2, 2) run on 2 devices)."""
    shape, devices = match["shape"], int(match["devices"])
    holds = math.prod(int(d) for d in re.findall(r"\d+", shape))
    if holds <= devices:
        return (f"a mesh of shape {shape} holds {plural(holds, 'device')}, and it must hold all {devices} there are: "
                "build the mesh from the shape you are given, which fits jax.device_count(), not from numbers of your "
                "own")
    return (f"a mesh of shape {shape} needs {plural(holds, 'device')}, more than the {devices} there are: build the "
            "mesh from the shape you are given, which fits jax.device_count(), not from numbers of your own")


def _bare_spec(match: re.Match, s: Situation) -> str:
    return ("a bare PartitionSpec P(...) names mesh axes but not the mesh they belong to: wrap it as "
            "NamedSharding(mesh, P(...)) (or make the mesh current first with jax.set_mesh(mesh))")


def _ambiguous_contraction(match: re.Match, s: Situation) -> str:
    axes = match["axes"]
    return (f"a matrix product whose contracted dimension is split over mesh axis {axes} in both operands, on a mesh "
            "with Explicit axes (jax.make_mesh's default): JAX will not guess how to lay out the result. Either say "
            "where it goes, jnp.matmul(a, b, out_sharding=NamedSharding(mesh, P(...))) (a jit's out_shardings come "
            f"too late, after the matmul), or multiply the blocks inside jax.shard_map and add the partial products "
            f"with lax.psum over {axes}")


def _illegal_result(match: re.Match, s: Situation) -> str:
    dims = re.findall(r"\d+@(\([^)]*\)|\w+)", match["result"])
    seen = [a.strip() for d in dims for a in d.strip("()").split(",") if a.strip()]
    named = " and ".join(sorted({repr(a) for a in seen if seen.count(a) > 1})) or "a mesh axis"
    return (f"{match['op']} of inputs laid out as {match['inputs']} would give a result laid out as {match['result']}: "
            f"it would split two of its dimensions over the same mesh axis ({named}), which no layout can. On a mesh "
            "with Explicit axes (jax.make_mesh's default) jax.numpy works the result's layout out from the inputs' "
            "alone, before any out_shardings; so move an input first (jax.sharding.reshard), or compute the blocks "
            "inside jax.shard_map and say with its collectives what each device sends")


def _varying_carry(match: re.Match, s: Situation) -> str:
    axes = [a.strip() for a in match["axes"].split(",") if a.strip()]
    named = " and ".join(repr(a) for a in axes)
    return (f"a loop's carry starts the same on every device (jnp.zeros, say) but the loop makes it differ along "
            f"{named} (it uses lax.axis_index or a ppermute): start it from a value that already differs, e.g. set "
            f"your own block before the loop, or jax.lax.pcast(init, {tuple(axes)}, to='varying'); a Python for "
            "loop over range(n) avoids the question")


def _explicit_indexing(match: re.Match, s: Situation) -> str:
    return ("indexing an array laid out on a mesh with Explicit axes may need communication, so JAX asks where the "
            "result goes: to look at values, index a NumPy copy (np.asarray(y)[...]); in a computation, use "
            "y.at[...].get(out_sharding=...), or index inside shard_map, where each device indexes its own block")


def _axis_not_in_mesh(match: re.Match, s: Situation) -> str:
    return (f"{match['spec']} names the axis '{match['axis']}', which the mesh {match['mesh']} does not have: a "
            "PartitionSpec names axes of the mesh it is used with")


def _axis_twice(match: re.Match, s: Situation) -> str:
    return (f"{match['spec']} splits two dimensions over the same mesh axis '{match['axis']}': an axis splits one "
            "dimension only; use another axis, or None, for the other dimension")


def _sharding_spec_too_long(match: re.Match, s: Situation) -> str:
    return (f"{match['spec']} has entries for {match['need']} dimensions, but the array has {match['rank']}: a "
            "PartitionSpec has one entry per dimension (trailing ones may be left out)")


def _not_a_scalar(match: re.Match, s: Situation) -> str:
    return (f"jax.grad (and jax.value_and_grad) differentiate a function that returns one number, and yours returns "
            f"shape {match['shape']}: return the loss as a scalar, e.g. jnp.mean of the squared errors")


def _incompatible_shardings(match: re.Match, s: Situation) -> str:
    return (f"{match['op']} of two arrays laid out differently on the mesh ({match['a']} and {match['b']}): put them "
            "on the same PartitionSpec first (jax.device_put), or work on the blocks inside jax.shard_map")


def _spec_axis_unknown(match: re.Match, s: Situation) -> str:
    axes = " and ".join(sorted(repr(a) for a in re.findall(r"'([^']*)'", match["axes"])))
    return (f"{match['where']} names mesh axis {match['axis']}, but the mesh's axes are {axes}: a PartitionSpec "
            "names the axes of the mesh it is used with")


def _spec_too_long(match: re.Match, s: Situation) -> str:
    axis = re.match(r"P\('([^']+)',?\)$", match["spec"])
    if match["rank"] == "0" and axis:  # jax.pmap's own shard_map, given a scalar to map
        return _scalar_split(axis[1])
    argument = re.match(r"the passed args\[(\d+)\]", match["what"])
    what = f"argument {argument[1]}" if argument else "the function's result"
    return (f"{match['which']} is {match['spec']}, {plural(int(match['length']), 'entry', 'entries')} for {what}, an "
            f"array of rank {match['rank']}: a PartitionSpec has at most one entry per axis of its array")


def _spec_does_not_divide(match: re.Match, s: Situation) -> str:
    shape = re.sub(r"@\w+", "", match["shape"])
    return (f"shard_map's in_specs give argument {match['param']} ({shape}) the spec {match['spec']}, which "
            f"splits its axis {match['axis']} (size {match['size']}) over mesh axis {match['mesh_axis']} "
            f"({plural(int(match['parts']), 'device')}), and {match['parts']} does not divide {match['size']}: "
            "in_specs holds one spec per argument, in the order of the arguments; if yours does, compare that spec "
            f"with the task's layout (it may name the wrong mesh axis); only where the layout is the task's, pad that "
            f"axis to a multiple of {match['parts']}")


def _tracer_as_int(match: re.Match, s: Situation) -> str:
    return ("a traced value was used as a Python integer (in range(...), as a list index or in a shape): inside "
            "jax.pmap / jax.jit, values such as lax.axis_index(...) are not known while the program is built. "
            "lax.axis_size(axis_name) is a Python int you can loop over; index arrays with jax.numpy instead of lists")


def _traced_slice(match: re.Match, s: Situation) -> str:
    return ("a slice whose bound is traced (x[:k] with k computed inside jax.pmap / jax.jit): the size of every "
            "array must be known while the program is built; slice a fixed size (lax.dynamic_slice), or mask with "
            "jnp.where")


def _loop_carry(match: re.Match, s: Situation) -> str:
    return (f"a loop's carry goes in as {match['a']} but the loop body returns {match['b']}: a "
            "lax.fori_loop (or lax.scan) carry keeps one dtype and shape from step to step, so the body must return "
            f"{match['a']} again")


def _negative_pad(match: re.Match, s: Situation) -> str:
    return ("jnp.pad was given a negative pad width: the length you pad to is shorter than the array (a pad width "
            "counts the zeros to add; (-L) % n of them bring a length L to the next multiple of n)")


def _axis_out_of_bounds(match: re.Match, s: Situation) -> str | None:
    axis, rank = match["axis"], int(match["rank"])
    for function, parameter in (("all_gather", "axis"), ("psum_scatter", "scatter_dimension"),
                                ("all_to_all", "split_axis"), ("all_to_all", "concat_axis")):
        written = argument(s.line, function, parameter)
        if written is not None and written.strip("-").isdigit() and written == axis:
            return (f"lax.{function}'s {parameter}={written} names a dimension the block does not have: each device's "
                    f"block has {plural(rank, 'dimension')}, numbered 0 to {rank - 1}, counted on the block inside "
                    "the per-device function")
    return None


def _scatter_dimension_missing(match: re.Match, s: Situation) -> str | None:
    written = argument(s.line, "psum_scatter", "scatter_dimension")
    if written is None or s.raised_in == "submission":
        return None
    return (f"lax.psum_scatter's scatter_dimension={written} names a dimension the block does not have: it counts "
            "the dimensions of each device's block, from 0")


def _pmap_in_axes(match: re.Match, s: Situation) -> str | None:
    in_axes = argument(s.line, "pmap", "in_axes")
    if in_axes is None:
        return None
    axis, parts, size = match["axis"], match["parts"], match["size"]
    return (f"jax.pmap's in_axes={in_axes} maps an argument over its axis {axis}, of size {size}, but there are "
            f"{plural(int(parts), 'device')}: in_axes says, for each argument, which axis has one entry per device "
            "(None for one every device gets whole)")


def _literal(text: str) -> str | None:
    """The string a Python string literal ``text`` spells ("'i'" -> i), or None for any other expression."""
    m = re.fullmatch(r"""\s*(['"])([^'"]*)\1\s*""", text)
    return m.group(2) if m else None


def _empty_assertion(match: re.Match, s: Situation, axes: tuple[str, ...] = ()) -> str | None:
    """A collective that failed with no message: its axis_name compared with the mesh's ``axes`` where the suite
    knows them (:func:`empty_assertion_on`); without them, what such a failure is known to come from."""
    found = call_with(s.line, ("psum", "pmean", "pmax", "pmin", "ppermute", "all_gather", "psum_scatter",
                               "all_to_all", "axis_index", "axis_size"))
    if s.raised_in == "submission" or not found or "axis_name" not in found[1]:
        return None
    name, args = found
    head = f"lax.{name} with axis_name={args['axis_name']} failed inside JAX with no message of its own"
    named, listed = _literal(args["axis_name"]), " and ".join(map(repr, axes))
    if axes and named is not None and named not in axes:
        return f"{head}: the mesh's axes are {listed}, and {named!r} is none of them: name an axis the mesh has"
    if axes and named is not None:
        return (f"{head}, though {named!r} is an axis of the mesh ({listed}): a collective takes the axis names of "
                "the jax.shard_map (or jax.pmap) it runs inside, and only there")
    return (f"{head}, as it does when that name is not an axis of the mesh the shard_map runs on (nor the axis_name "
            "of the pmap around it): a collective takes only those names")


def empty_assertion_on(axes: tuple[str, ...]) -> Rule:
    """The rule for a collective that failed with no message, for a suite whose task's mesh has ``axes``: the
    axis_name the student wrote is compared with them (list it in the suite's JAX_ERRORS)."""
    return Rule("empty assertion in a collective", re.compile(r"^$"),
                lambda match, s: _empty_assertion(match, s, tuple(axes)), exc_types=("AssertionError",))


def _scatter_untiled(match: re.Match, s: Situation) -> str | None:
    """JAX says "must match shard count" only of a psum_scatter without tiled=True (a tiled one's size must be
    divisible): the line gives the dimension where it shows it."""
    found = call_with(s.line, ("psum_scatter",))
    if found and found[1].get("tiled", "False") != "False":
        return None
    dimension = f"={found[1]['scatter_dimension']}" if found and "scatter_dimension" in found[1] else ""
    return (f"lax.psum_scatter without tiled=True gives each device one slice of scatter_dimension{dimension}, which "
            f"must then have exactly one entry per device ({match['parts']}), and this one has {match['size']}: with "
            f"tiled=True each device gets a block of it, {match['size']} / {match['parts']} long, instead")


def _global_shape(match: re.Match, s: Situation) -> str:
    return (f"jax.make_array_from_process_local_data's global_shape={match['given']} is not the whole array's "
            f"shape: local_data here is {match['local']}, and global_shape counts the rows of every process together "
            "(or leave it out, and JAX adds them up)")


def _global_shape_indivisible(match: re.Match, s: Situation) -> str | None:
    given = argument(s.line, "make_array_from_process_local_data", "global_shape")
    if given is None:
        return None
    return (f"jax.make_array_from_process_local_data's global_shape={given} gives axis {match['axis']} a size of "
            f"{match['size']}, which the sharding cannot split {match['parts']} ways: global_shape is the whole "
            "array's shape, the rows of every process together, not this process's local_data (leave it out, and JAX "
            "adds them up)")


RULES: tuple[Rule, ...] = (
    Rule("ppermute perm", re.compile(r"ppermute sources and destinations must be unique, got (?P<perm>\(.*?\))\.?$",
                                     re.M), _ppermute),
    Rule("shard_map replication", re.compile(r"out_specs(?P<index>\[\d+\])? is (?P<spec>P\(.*?\)) which implies that "
                                             r"the corresponding output value is (?:replicated across mesh ax[ie]s "
                                             r"(?P<axes>.+?), but|only varying across mesh axes \{.*?\} and not "
                                             r"\{(?P<bare>[^}]*)\})"),
         _out_specs),
    Rule("numpy on a tracer", re.compile(r"numpy\.ndarray conversion method __array__\(\) was called on traced"),
         _numpy_on_tracer),
    Rule("python number from a tracer", re.compile(r"The problem arose with the `(?P<fn>float|int|complex)` function"),
         _python_number),
    Rule("branch on a tracer", re.compile(r"Attempted boolean conversion of traced array"), _branch_on_tracer),
    Rule("set_mesh under jit", re.compile(r"`set_mesh` can only be used outside of `jax\.jit`"), _set_mesh_in_jit),
    Rule("pmap leading axis", re.compile(r"_internal_pmap_axis_name.*implies that array axis 0 is partitioned "
                                         r"(?P<parts>\d+) times, but the dimension size is (?P<size>\d+)", re.S),
         _pmap_leading_axis),
    Rule("pmap leading axis, a multiple", re.compile(r"cannot select an axis to squeeze out which has size not equal "
                                                     r"to one, got shape=\((?P<per>\d+)"), _pmap_squeeze),
    Rule("scalar mapped by pmap", re.compile(r"Mesh\('(?P<axis>[^']+)'.*only valid for values of rank at least 1, "
                                             r"but was applied to a value of rank 0", re.S), _scalar_mapped),
    Rule("reshape", re.compile(r"cannot reshape array of shape \(.*?\) \(size (?P<size>\d+)\) into shape "
                               r"\((?P<shape>.*?)\)(?: because the product of specified axis sizes "
                               r"\((?P<parts>\d+)\))?"), _reshape),
    Rule("psum_scatter", re.compile(r"scatter dimension size (?P<size>\d+) must be divisible by shard_count "
                                    r"(?P<parts>\d+)"), _scatter),
    Rule("unhashable static argument", re.compile(r"Non-hashable static arguments are not supported.*?(?:Static "
                                                  r"argument \(index (?P<index>\d+)\) of type "
                                                  r"<class '(?P<type>[\w.]+)'>|an object of type "
                                                  r"<class '(?P<other>[\w.]+)'>)", re.S),
         _unhashable_static),
    Rule("contraction", re.compile(r"dot_general requires contracting dimensions to have the same shape, got "
                                   r"\((?P<a>\d+),?\) and \((?P<b>\d+),?\)"), _contraction),
    Rule("shard_map in_specs", re.compile(r"in_specs passed to shard_map: (?P<want>P\(.*?\)) does not match the specs "
                                          r"of the input: (?P<got>P\(.*?\)) for arg: (?P<arg>\S+?)\.?\s"),
         _in_specs),
    Rule("indivisible sharding", re.compile(r"implies that array axis (?P<axis>\d+) is partitioned (?P<parts>\d+) "
                                            r"times, but does not evenly divide the dimension size (?P<size>\d+)"),
         _indivisible_spec),
    Rule("unbound axis name", re.compile(r"Found an unbound axis name: (?P<axis>[^\s.]+)"), _unbound_axis),
    Rule("mesh of another size", re.compile(r"Number of devices (?P<devices>\d+) must (?:be >=|equal) the product of "
                                            r"mesh_shape (?P<shape>\(.*?\))"), _mesh_size),
    Rule("bare PartitionSpec", re.compile(r"(?:mesh in context if you are passing `PartitionSpec`s|set a mesh via "
                                          r"`jax\.set_mesh` if a PartitionSpec is passed|Using PartitionSpec when you "
                                          r"are not under a mesh context)"), _bare_spec),
    Rule("ambiguous contraction", re.compile(r"Contracting dimensions are sharded and it is ambiguous how the output "
                                             r"should be sharded\..*?lhs_contracting_spec=\((?P<axes>[^,)]*)",
                                             re.S), _ambiguous_contraction),
    Rule("illegally sharded result", re.compile(r"(?P<op>\w+) operation with inputs: (?P<inputs>.+?) produces an "
                                                r"illegally sharded result: (?P<result>\S+)"), _illegal_result),
    Rule("loop carry that starts invariant", re.compile(r"carry input and carry output must have equal types.*?"
                                                        r"\{V:\(?(?P<axes>[^)}]*)\)?\}.*?manual axis types do not "
                                                        r"match", re.S), _varying_carry),
    Rule("indexing an Explicit array", re.compile(r"Use `\.at\[\.\.\.\]\.get\(out_sharding=\)` to provide "
                                                  r"output PartitionSpec"), _explicit_indexing),
    Rule("axis not in the mesh", re.compile(r"Resource axis: (?P<axis>\S+) of (?P<spec>P\(.*?\)) is not found in "
                                            r"mesh: (?P<mesh>\(.*?\))"), _axis_not_in_mesh),
    Rule("axis used twice", re.compile(r"but (?P<spec>P\(.*?\)) has duplicate entries for `(?P<axis>[^`]+)`"),
         _axis_twice),
    Rule("PartitionSpec longer than the array", re.compile(r"spec=(?P<spec>P\(.*?\)), memory_kind=\w+\) is only "
                                                           r"valid for values of rank at least (?P<need>\d+), but was "
                                                           r"applied to a value of rank (?P<rank>\d+)"),
         _sharding_spec_too_long),
    Rule("gradient of a non-scalar", re.compile(r"Gradient only defined for scalar-output functions\. Output had "
                                                r"shape: (?P<shape>\(.*?\))"), _not_a_scalar),
    Rule("incompatible shardings", re.compile(r"(?P<op>\w+) got incompatible shardings for broadcasting: "
                                              r"(?P<a>\(.*?\)), (?P<b>\(.*?\))\.?$", re.M), _incompatible_shardings),
    Rule("spec names no mesh axis", re.compile(r"shard_map (?:in|out)_specs argument must refer to an axis marked as "
                                               r"manual \(frozenset\((?P<axes>\{.*?\})\)\), but:\s*"
                                               r"(?P<where>(?:in|out)_specs(?:\[\d+\])?) refers to (?P<axis>'[^']*')"),
         _spec_axis_unknown),
    Rule("spec longer than its array", re.compile(r"(?P<which>(?:in|out)_specs(?:\[\d+\])?) is (?P<spec>P\(.*?\)) "
                                                  r"which has length (?P<length>\d+), but (?P<what>.+?)(?:, where "
                                                  r".*?)? has shape \S+, which has rank (?P<rank>\d+)"), _spec_too_long),
    Rule("spec does not divide", re.compile(r"the passed args\[\d+\] of shape (?P<shape>\S+), where args\[\d+\] is "
                                            r"bound to .*? parameter (?P<param>'[^']*'), corresponds to in_specs of "
                                            r"value (?P<spec>P\(.*?\)), which maps array axis (?P<axis>\d+) \(of size "
                                            r"(?P<size>\d+)\) to mesh axis (?P<mesh_axis>'[^']*') \(of size "
                                            r"(?P<parts>\d+)\)"), _spec_does_not_divide),
    Rule("traced value as an int", re.compile(r"__index__\(\) method was called on traced array"), _tracer_as_int),
    Rule("traced slice", re.compile(r"Slice entries must be static integers"), _traced_slice),
    Rule("loop carry type", re.compile(r"carry input and carry output must have equal types.*?input carry component "
                                       r"\S+ has type (?P<a>\S+) but the corresponding output carry "
                                       r"component has type (?P<b>\S+?),\s+so\b", re.S), _loop_carry),
    Rule("negative pad width", re.compile(r"index can't contain negative values"), _negative_pad),
    Rule("collective's dimension out of range", re.compile(r"axis (?P<axis>-?\d+) is out of bounds for array of "
                                                           r"dimension (?P<rank>\d+)"), _axis_out_of_bounds),
    Rule("scatter_dimension out of range", re.compile(r"^tuple index out of range$"), _scatter_dimension_missing,
         exc_types=("IndexError",)),
    Rule("pmap in_axes", re.compile(r"_internal_pmap_axis_name.*implies that array axis (?P<axis>[1-9]\d*) is "
                                    r"partitioned (?P<parts>\d+) times, but the dimension size is (?P<size>\d+)", re.S),
         _pmap_in_axes),
    Rule("empty assertion in a collective", re.compile(r"^$"), _empty_assertion,
         exc_types=("AssertionError",)),
    Rule("psum_scatter without tiled", re.compile(r"scatter dimension size (?P<size>\d+) must match shard count "
                                                  r"(?P<parts>\d+)"), _scatter_untiled),
    Rule("global_shape that does not split", re.compile(r"implies that array axis (?P<axis>\d+) is partitioned "
                                                        r"(?P<parts>\d+) times, but the dimension size is "
                                                        r"(?P<size>\d+)"), _global_shape_indivisible),
    Rule("indivisible sharding, its spec", re.compile(r"spec=(?P<spec>P\([^)]*\)).*?implies that array axis "
                                                      r"(?P<axis>\d+) is partitioned (?P<parts>\d+) times, but the "
                                                      r"dimension size is (?P<size>\d+)", re.S), _indivisible_spec),
    Rule("global_shape", re.compile(r"global_shape should be None or equal to local_data\.shape\.\s*Got "
                                    r"global_shape=(?P<given>\(.*?\)) and local_data\.shape=(?P<local>\(.*?\))"),
         _global_shape),
)


# Opt-in rules: a suite lists one in its JAX_ERRORS where the text alone is too bare to be told in general.

PERM_OFF_THE_RING = Rule(
    "perm off the ring", re.compile(r"^list index out of range$"),
    lambda match, s: ("lax.ppermute's perm names a device that is not on the ring: every source and destination must "
                      "lie in 0 .. n - 1, so wrap them with % n") if s.raised_in == "jax" else None,
    exc_types=("IndexError",))
"""A perm that names a device past the end of the axis: JAX fails while it builds the program with only "list index
out of range" and no line of the student's. For a task whose code indexes nothing else inside JAX (a ring)."""


def mistake(text: str, exc_type: str | None = None, situation: Situation = Situation(),
            rules: tuple[Rule, ...] = RULES) -> str | None:
    """The sentence of the first rule that recognises ``text`` (an error of type ``exc_type``), or None."""
    for rule in rules:
        if rule.exc_types and exc_type not in rule.exc_types:
            continue
        match = rule.pattern.search(text)
        if match:
            said = rule.say(match, situation)
            if said:
                return said
    return None


def _first_words(text: str, most: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= most else line[: most - 3].rstrip() + "..."


def explain(failure: StudentFailure, devices: int | None = None, rules: tuple[Rule, ...] = RULES) -> str | None:
    """``failure``'s message with JAX's text replaced by the mistake behind it, completed by how the function,
    traced again, differs from the reference's (``measured``); None if no rule knows it and nothing is
    measured."""
    text = failure.message if failure.detail is None else failure.detail
    measured = getattr(failure, "measured", None)
    said = mistake(text, failure.exc_type, Situation(devices, failure.line or "", failure.raised_in, measured), rules)
    if said is None and measured and measured != SAME and failure.raised_in == "jax":
        said = f"JAX refused it ({_first_words(text)})"  # no rule knows JAX's words; the measured difference says more
    if said is None:
        return None
    if measured and measured != SAME and measured not in said:
        said = f"{said}. {COMPARED}: {measured}"
    start = failure.message.find(" ".join(text.split())[:40])  # where JAX's text begins in the one-line message
    head = failure.message[:start] if start > 0 else failure.message.partition(": ")[0]
    if failure.detail == "":  # an exception with no message of its own: the worker said so after the line
        head = failure.message.partition(" with no message")[0]
    return f"{head.rstrip(': ')}: {said}"
