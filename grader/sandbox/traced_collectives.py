"""The collectives a function's trace asks for, read where its program cannot be built (worker side).

A ``jax.shard_map`` whose out_specs say a result is the same on every device along an axis where JAX
counts it as differing fails while it is traced, with JAX's words about types: there is no compiled
program to compare with the reference's, and the mistake behind it is one of several (a psum over
another axis, a collective missing, a gather that made every device compute the same numbers). JAX's
check is optional (``check_vma=False``), so the function is traced again with the check off, and the
collectives its trace holds are read from the jaxpr: their primitive and the mesh axes they run over,
the same at any device count. The grader compares them with the reference's, traced the same way
(grader.suite.traced), for a message only: the case has already failed.
"""

from __future__ import annotations

import contextlib

# The trace's names of the collectives, in the words of the code that asks for them.
NAMES = {"psum": "psum", "psum_invariant": "psum", "pmax": "pmax", "pmin": "pmin", "ppermute": "ppermute",
         "all_gather": "all_gather", "all_gather_invariant": "all_gather", "reduce_scatter": "psum_scatter",
         "all_to_all": "all_to_all"}
LIMIT = 64  # collectives reported at most: what a message can use


@contextlib.contextmanager
def _replication_unchecked():
    """Every shard_map traced meanwhile runs with ``check_vma=False``, one built before (at import, by a
    decorator) too: the flag is set where the computation is bound, not where it is built."""
    from jax._src.shard_map import shard_map_p

    bind = shard_map_p.bind

    def unchecked(*args, **params):
        return bind(*args, **{**params, "check_vma": False})

    shard_map_p.bind = unchecked
    try:
        yield
    finally:
        del shard_map_p.bind  # the class's own again


def _axes(params: dict) -> list[str]:
    names = params.get("axes", params.get("axis_name", ()))
    return [str(a) for a in (names if isinstance(names, (tuple, list)) else (names,))]


def _walk(jaxpr, found: list) -> None:
    from jax._src import core

    divided = {v for eqn in jaxpr.eqns if eqn.primitive.name == "div" for v in eqn.invars[:1]
               if isinstance(v, core.Var)}
    for eqn in jaxpr.eqns:
        name = NAMES.get(eqn.primitive.name)
        if name and len(found) < LIMIT:
            averaged = name == "psum" and any(v in divided for v in eqn.outvars)
            found.append(["pmean" if averaged else name, _axes(eqn.params)])
        for inner in core.jaxprs_in_params(eqn.params):
            _walk(inner, found)


def collectives(fn, specs) -> list[list]:
    """[[name, [axis, ...]], ...]: the collectives of ``fn`` traced on ``specs`` (shapes and dtypes) with
    shard_map's replication check off, in the order the trace holds them; a psum whose result is
    divided reads as pmean."""
    import jax

    shapes = jax.tree.map(lambda s: jax.ShapeDtypeStruct(tuple(s.shape), s.dtype), specs)
    with _replication_unchecked():
        traced = jax.make_jaxpr(fn)(*shapes)
    found: list = []
    _walk(traced.jaxpr, found)
    return found
