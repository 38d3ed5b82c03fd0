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

# The trace's names of the collectives, in the words of the code that asks for them.
NAMES = {"psum": "psum", "psum_invariant": "psum", "pmax": "pmax", "pmin": "pmin", "ppermute": "ppermute",
         "all_gather": "all_gather", "all_gather_invariant": "all_gather", "reduce_scatter": "psum_scatter",
         "all_to_all": "all_to_all"}
# The parameter holding the dimension a collective gathers along, splits or exchanges along.
_DIMENSION = {"all_gather": "all_gather_dimension", "psum_scatter": "scatter_dimension", "all_to_all": "split_axis"}
LIMIT = 64  # collectives reported at most: what a message can use


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


def _add(found: list, name: str, params: dict, shape) -> None:
    if len(found) >= LIMIT:
        return
    axes = params.get("axes", params.get("axis_name", ()))
    dimension = params.get(_DIMENSION.get(name, ""))
    found.append([name, [str(a) for a in (axes if isinstance(axes, (tuple, list)) else (axes,))],
                  None if dimension is None else int(dimension),
                  None if shape is None else [int(d) for d in shape]])


def _walk(jaxpr, found: list) -> None:
    from jax._src import core

    divided = {v for eqn in jaxpr.eqns if eqn.primitive.name == "div" for v in eqn.invars[:1]
               if isinstance(v, core.Var)}
    for eqn in jaxpr.eqns:
        name = NAMES.get(eqn.primitive.name)
        if name:
            averaged = name == "psum" and any(v in divided for v in eqn.outvars)
            _add(found, "pmean" if averaged else name, eqn.params, eqn.outvars[0].aval.shape)
        for inner in core.jaxprs_in_params(eqn.params):
            _walk(inner, found)


def collectives(fn, specs) -> dict:
    """{"collectives": [[name, [axis, ...], dimension or None, result shape], ...], "complete": bool}: the
    collectives of ``fn`` traced on ``specs`` (shapes and dtypes) with shard_map's replication check off,
    in the order the trace holds them, a psum whose result is divided read as pmean; where the trace
    fails, those bound before it failed, in the order they were bound, and ``complete`` False."""
    import jax

    shapes = jax.tree.map(lambda s: jax.ShapeDtypeStruct(tuple(s.shape), s.dtype), specs)
    bound: list = []
    try:
        with _replication_unchecked(), _recording(bound):
            traced = jax.make_jaxpr(fn)(*shapes)
    except Exception:  # noqa: BLE001 - the student's trace failing further on is what is being read
        return {"collectives": bound, "complete": False}
    found: list = []
    _walk(traced.jaxpr, found)
    return {"collectives": found, "complete": True}
