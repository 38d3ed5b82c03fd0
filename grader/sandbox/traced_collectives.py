"""The collectives a function's trace asks for, read where its program cannot be built (worker side).

A ``jax.shard_map`` whose out_specs say a result is the same on every device along an axis where JAX
counts it as differing fails while it is traced, with JAX's words about types; a gather along the wrong
axis fails at the product that follows it, with JAX's words about shapes. Either way there is no
compiled program to compare with the reference's. So the function is traced again with shard_map's
replication check off (``check_vma=False``, set where the computation is bound, so one built at import
counts too), and each collective the trace asks for is read: its primitive, the mesh axes it runs
over, the dimension it gathers along or splits and the shape of its result, the same at any device
count as far as the names go. Where the trace still fails (a shape error), the collectives bound
before the failure are what is read (``complete`` is then False). The grader compares them with the
reference's, traced the same way (grader.suite.traced), for a message only: the case has already
failed.
"""

from __future__ import annotations

import contextlib

from grader.sandbox.mesh_in_trace import meshes_settable

# The trace's names of the collectives, in the words of the code that asks for them.
NAMES = {"psum": "psum", "psum_invariant": "psum", "pmax": "pmax", "pmin": "pmin", "ppermute": "ppermute",
         "all_gather": "all_gather", "all_gather_invariant": "all_gather", "reduce_scatter": "psum_scatter",
         "all_to_all": "all_to_all"}
# The parameter holding the dimension a collective gathers along, splits or exchanges along.
_DIMENSION = {"all_gather": "all_gather_dimension", "psum_scatter": "scatter_dimension", "all_to_all": "split_axis"}
LIMIT = 64  # collectives reported at most: what a message can use
MAPS = 16  # per-device computations reported at most
_PMAP = "jax/_src/pmap.py"  # where jax.pmap builds the shard_map it runs


@contextlib.contextmanager
def _replication_unchecked():
    """Every shard_map traced meanwhile runs with ``check_vma=False``."""
    from jax._src.shard_map import shard_map_p

    bind = shard_map_p.bind

    def unchecked(*args, **params):
        return bind(*args, **{**params, "check_vma": False})

    shard_map_p.bind = unchecked
    try:
        yield
    finally:
        del shard_map_p.bind  # the class's own again


@contextlib.contextmanager
def _recording(found: list):
    """Each collective bound meanwhile is appended to ``found`` (with the shape of its result): what a trace
    that fails further on asked for before it failed."""
    from jax._src.lax import parallel

    primitives = [getattr(parallel, f"{name}_p") for name in NAMES]
    binds = {p: p.bind for p in primitives}

    def recorder(primitive):
        def bind(*args, **params):
            out = binds[primitive](*args, **params)
            first = out[0] if isinstance(out, (list, tuple)) and out else out
            _add(found, NAMES[primitive.name], params, getattr(first, "shape", None))
            return out
        return bind

    for p in primitives:
        p.bind = recorder(p)
    try:
        yield
    finally:
        for p in primitives:
            del p.bind


def _spec(spec) -> list | None:
    """A PartitionSpec as its entries, each None or the mesh axes it names; None for no spec (a static input)."""
    from jax.sharding import PartitionSpec

    if not isinstance(spec, PartitionSpec):
        return None
    return [None if e is None else [str(a) for a in (e if isinstance(e, tuple) else (e,))] for e in tuple(spec)]


def _leaves(specs) -> list:
    """The PartitionSpecs of a prefix tree of them (tuples, lists and dicts of specs), in JAX's order."""
    from jax.sharding import PartitionSpec

    if specs is None or isinstance(specs, PartitionSpec):
        return [specs]
    if isinstance(specs, (tuple, list)):
        return [leaf for s in specs for leaf in _leaves(s)]
    if isinstance(specs, dict):
        return [leaf for k in sorted(specs, key=str) for leaf in _leaves(specs[k])]
    return [None]


def _by_pmap(f) -> bool:
    """Whether ``f``, the function a shard_map maps, is the one jax.pmap builds it with (JAX 0.10 builds pmap on
    shard_map): read from where the function is written, or where its trace says it was."""
    code = getattr(f, "__code__", None)
    where = code.co_filename if code is not None else str(getattr(getattr(f, "debug_info", None), "func_src_info", ""))
    return _PMAP in where.replace("\\", "/")


def _map(kind: str, mesh, in_specs, shapes, out_specs) -> dict:
    return {"kind": kind, "mesh": [str(a) for a in getattr(mesh, "axis_names", ())],
            "in": [[_spec(s), [int(d) for d in shape]] for s, shape in zip(in_specs, shapes)][:LIMIT],
            "out": [_spec(s) for s in out_specs][:LIMIT]}


def _named(shardings) -> tuple:
    """(mesh, specs) of a jit's shardings, a spec None where it names none; mesh None where none names one."""
    from jax.sharding import NamedSharding

    named = [s for s in shardings if isinstance(s, NamedSharding)]
    return (named[0].mesh if named else None), [s.spec if isinstance(s, NamedSharding) else None for s in shardings]


@contextlib.contextmanager
def _reading_maps(maps: list):
    """Each shard_map, and each jax.jit given shardings, asked for meanwhile is appended to ``maps`` as JAX checks
    it, before JAX can refuse it (where a trace fails, what was asked for is read from these)."""
    from jax._src import pjit, shard_map

    checks, versus, shardings = shard_map._shmap_checks, shard_map._check_specs_vs_args, pjit.pjit_check_aval_sharding
    asked: list = []

    def check(mesh, axis_names, in_specs, out_specs, *rest):
        asked.append(_leaves(out_specs))
        return checks(mesh, axis_names, in_specs, out_specs, *rest)

    def inputs(f, mesh, in_tree, in_specs, dyn_argnums, in_specs_flat, xs):
        if asked and len(maps) < MAPS:
            maps.append(_map("pmap" if _by_pmap(f) else "shard_map", mesh, in_specs_flat,
                             [getattr(x, "shape", ()) for x in xs], asked.pop()))
        return versus(f, mesh, in_tree, in_specs, dyn_argnums, in_specs_flat, xs)

    def jitted(given, avals, names, what_aval, *rest, **options):
        mesh, specs = _named(given)
        if mesh is not None and what_aval in ("pjit arguments", "pjit outputs") and len(maps) < MAPS:
            shapes = [a.shape for a in avals]
            if what_aval == "pjit arguments":
                maps.append(_map("jit", mesh, specs, shapes, []))
            else:
                maps.append(_map("jit", mesh, [None] * len(shapes), shapes, specs) | {"in": []})
        return shardings(given, avals, names, what_aval, *rest, **options)

    shard_map._shmap_checks, shard_map._check_specs_vs_args, pjit.pjit_check_aval_sharding = check, inputs, jitted
    try:
        yield
    finally:
        shard_map._shmap_checks, shard_map._check_specs_vs_args, pjit.pjit_check_aval_sharding = \
            checks, versus, shardings


def _jit_map(eqn) -> dict | None:
    """A jit given shardings (in_shardings or out_shardings naming a mesh), as a map; None for one given none."""
    mesh_in, ins = _named(eqn.params["in_shardings"])
    mesh_out, outs = _named(eqn.params["out_shardings"])
    mesh = mesh_in if mesh_in is not None else mesh_out
    if mesh is None:
        return None
    return _map("jit", mesh, ins, [v.aval.shape for v in eqn.invars], outs)


def _add(found: list, name: str, params: dict, shape, read: tuple = ()) -> None:
    """One collective; ``read``: (origin, looped) where it was read from a whole trace."""
    if len(found) >= LIMIT:
        return
    axes = params.get("axes", params.get("axis_name", ()))
    dimension = params.get(_DIMENSION.get(name, ""))
    found.append([name, [str(a) for a in (axes if isinstance(axes, (tuple, list)) else (axes,))],
                  None if dimension is None else int(dimension),
                  None if shape is None else [int(d) for d in shape], *read])


_LOOPS = ("while", "scan")  # primitives whose body runs a number of times a trace does not count


def _carried(body, consts: list, carry: list, rest: list, ncarry: int) -> list:
    """A loop's carry as its body sees it: what each element may be computed from once the body has run any
    number of times (what it starts from, and what the body returns in its place, until nothing new arrives)."""
    for _ in range(len(carry) + 1):
        outs = _walk(body, [], [], dict(zip(body.invars, consts + carry + rest)), None, True, record=False)
        grown = [c | o for c, o in zip(carry, outs[:ncarry])]
        if grown == carry:
            break
        carry = grown
    return carry


def _inner(eqn, ins: list) -> list:
    """Each jaxpr nested in ``eqn`` with what each of its inputs may be computed from, ``ins`` being its equation's
    inputs': by place where the nesting says which input is which (a jit, a branch, a loop's consts and carry, a
    loop's carry after any number of runs), else every input for each (more than it may use, never less)."""
    from jax._src import core

    name, params = eqn.primitive.name, eqn.params
    if name == "while":
        cond, body = params["cond_jaxpr"].jaxpr, params["body_jaxpr"].jaxpr
        cn, bn = params["cond_nconsts"], params["body_nconsts"]
        carry = _carried(body, ins[cn:cn + bn], ins[cn + bn:], [], len(ins) - cn - bn)
        return [(cond, ins[:cn] + carry), (body, ins[cn:cn + bn] + carry)]
    if name == "scan":
        body, nc, ncarry = params["jaxpr"].jaxpr, params["num_consts"], params["num_carry"]
        carry = _carried(body, ins[:nc], ins[nc:nc + ncarry], ins[nc + ncarry:], ncarry)
        return [(body, ins[:nc] + carry + ins[nc + ncarry:])]
    if name == "cond":
        return [(branch.jaxpr, ins[1:]) for branch in params["branches"]]
    every = frozenset().union(*ins)
    return [(inner, ins if len(inner.invars) == len(ins) else [every] * len(inner.invars))
            for inner in core.jaxprs_in_params(params)]


def _walk(jaxpr, found: list, maps: list, origin: dict | None = None, inputs: list | None = None,
          looped: bool = False, record: bool = True) -> list | None:
    """Read ``jaxpr``'s collectives and computations into ``found`` and ``maps`` (unless not ``record``); return
    what each of its outputs may be computed from. Inside a per-device computation, ``origin`` maps each variable
    to the inputs of that computation it is computed from (``inputs``: their global shapes), so each collective
    says what it runs on; a nested jaxpr takes its inputs' origins by place (:func:`_inner`). ``looped``: inside
    a loop's body, where a collective asked once may run many times."""
    from jax._src import core

    def of(v) -> frozenset:
        return origin.get(v, frozenset()) if isinstance(v, core.Var) else frozenset()

    divided = {v for eqn in jaxpr.eqns if eqn.primitive.name == "div" for v in eqn.invars[:1]
               if isinstance(v, core.Var)}
    # a sum also used as it is (returned, or anything but divided) is a psum, not a pmean written out (round 35)
    divided -= {v for eqn in jaxpr.eqns for i, v in enumerate(eqn.invars)
                if isinstance(v, core.Var) and (eqn.primitive.name, i) != ("div", 0)}
    divided -= {v for v in jaxpr.outvars if isinstance(v, core.Var)}
    for eqn in jaxpr.eqns:
        ins = [of(v) for v in eqn.invars] if origin is not None else None
        came = frozenset().union(*ins) if ins is not None else None
        name = NAMES.get(eqn.primitive.name)
        if name and record:
            averaged = name == "psum" and any(v in divided for v in eqn.outvars)
            _add(found, "pmean" if averaged else name, eqn.params, eqn.outvars[0].aval.shape,
                 (None if came is None else [[k, [int(d) for d in inputs[k]]] for k in sorted(came)], looped))
        if eqn.primitive.name == "shard_map":
            if len(maps) < MAPS and record:
                maps.append(_map("pmap" if _by_pmap(eqn.params["jaxpr"]) else "shard_map", eqn.params["mesh"],
                                 eqn.params["in_specs"], [v.aval.shape for v in eqn.invars], eqn.params["out_specs"]))
            body = eqn.params["jaxpr"]
            body = getattr(body, "jaxpr", body)
            _walk(body, found, maps, {v: frozenset({k}) for k, v in enumerate(body.invars)},
                  [v.aval.shape for v in eqn.invars], looped, record)
        else:
            jitted = _jit_map(eqn) if eqn.primitive.name == "jit" and len(maps) < MAPS and record else None
            if jitted:
                maps.append(jitted)
            nested = _inner(eqn, ins) if ins is not None else [(j, None) for j in core.jaxprs_in_params(eqn.params)]
            for inner, given in nested:
                _walk(inner, found, maps, None if given is None else dict(zip(inner.invars, given)), inputs,
                      looped or eqn.primitive.name in _LOOPS, record)
        if came is not None:
            origin.update((v, came) for v in eqn.outvars)
    return None if origin is None else [of(v) for v in jaxpr.outvars]


def collectives(fn, specs) -> dict:
    """What ``fn`` traced on ``specs`` (shapes and dtypes) with shard_map's replication check off asks for::

        {"collectives": [[name, [axis, ...], dimension or None, result shape, (origin, looped)], ...],
         "complete": bool,
         "maps": [{"kind": "shard_map" | "pmap" | "jit", "mesh": [axis, ...], "in": [[spec, shape], ...],
                   "out": [spec, ...]}, ...]}

    The collectives in the order the trace holds them, a psum whose result is only ever divided read as pmean, each with
    its origin (inside a per-device computation: [[k, shape of input k], ...] for the inputs of that computation
    its operand is computed from; else None) and whether it sits in a loop's body; where the trace fails, those
    bound before it failed, in the order they were bound (without origin), and ``complete`` False. ``maps``:
    the per-device computations, and the jax.jit calls given shardings, asked for, in order, a spec as its
    entries (each None or a list of mesh axes); an input's or result's spec None where it is given none (a
    static input of shard_map, a jit's unspecified sharding)."""
    import jax

    shapes = jax.tree.map(lambda s: jax.ShapeDtypeStruct(tuple(s.shape), s.dtype), specs)
    bound: list = []
    asked: list = []
    try:
        with _replication_unchecked(), _recording(bound), _reading_maps(asked), meshes_settable():
            traced = jax.make_jaxpr(fn)(*shapes)
    except Exception:  # noqa: BLE001 - the student's trace failing further on is what is being read
        return {"collectives": bound, "complete": False, "maps": asked}
    found: list = []
    maps: list = []  # read from the trace itself: a function JAX traced before is not checked again
    _walk(traced.jaxpr, found, maps)
    return {"collectives": found, "complete": True, "maps": maps}
