"""The program a student's function runs as written, when it is traced inside the grader's jax.jit.

A function is exported as one program: the grader traces it inside ``jax.jit``
(:mod:`grader.sandbox.program_export`). Written code mostly means the same either way, with one
exception that decides where data lives: ``jax.device_put(x, NamedSharding(mesh, spec))``. Called
outside any jit, as a student calls it, it moves x to that layout before anything else runs
(``P()`` copies all of x to every device). Inside jit, on a mesh of Auto axes, JAX drops it from
the lowered program: XLA then lays x out as the rest of the program likes, and a function that
gathers its inputs whole before multiplying them compiles to the same program as one that leaves
them where they arrive. So the program would be graded on a layout the student's code never has.

The student's own jit calls are the boundary: inside one, ``device_put`` is dropped in eager
execution too. So each ``device_put`` at the top of the traced function, outside every jit the
student wrote, is replaced by ``with_sharding_constraint`` to the same layout, which the compiled
program must honour, and the program then moves exactly what the student's code moves. Other
layouts are left as they are: jit keeps a layout on Explicit axes itself (it is part of the type),
and a single device or a bare PartitionSpec is not a layout of the program's mesh.
"""

from __future__ import annotations


def _dropped(layout) -> bool:
    """Whether jit drops a ``device_put`` to ``layout``: a NamedSharding on a mesh of Auto axes (on Explicit
    axes the layout is part of the type, and jit keeps it)."""
    from jax.sharding import AxisType, NamedSharding

    return isinstance(layout, NamedSharding) and all(t == AxisType.Auto for t in layout.mesh.axis_types)


def _constraint_equations(eqn) -> list | None:
    """The ``with_sharding_constraint`` equations that do what the ``device_put`` equation ``eqn`` does when
    run eagerly, or None if jit keeps one of its layouts, or cannot hold it (see :func:`_dropped`)."""
    import jax

    if not all(map(_dropped, eqn.params.get("devices", ()))):
        return None
    made = []
    for var, out, sharding in zip(eqn.invars, eqn.outvars, eqn.params["devices"]):
        aval = var.aval
        traced = jax.make_jaxpr(lambda v, s=sharding: jax.lax.with_sharding_constraint(v, s))(
            jax.ShapeDtypeStruct(aval.shape, aval.dtype))
        (constraint,) = traced.jaxpr.eqns
        made.append(constraint.replace(invars=[var], outvars=[out], source_info=eqn.source_info))
    return made


def as_written(closed):
    """``closed`` (the ClosedJaxpr of a traced function) with its top-level ``device_put`` to a NamedSharding
    made a sharding constraint, or None if it has none."""
    from jax.extend.core import ClosedJaxpr

    eqns, changed = [], False
    for eqn in closed.jaxpr.eqns:
        replaced = _constraint_equations(eqn) if eqn.primitive.name == "device_put" else None
        changed |= replaced is not None
        eqns.extend(replaced if replaced is not None else [eqn])
    return ClosedJaxpr(closed.jaxpr.replace(eqns=eqns), closed.consts) if changed else None


def function(traced):
    """A function of the same arguments as the one ``traced`` (a ``jax.stages.Traced``) was traced from that
    runs it as written (see the module's docstring), or None if tracing it inside jit changed nothing."""
    import jax
    from jax.extend.core import jaxpr_as_fun

    closed = as_written(traced.jaxpr)
    if closed is None:
        return None
    run, out_tree = jaxpr_as_fun(closed), jax.tree.structure(traced.out_info)
    return lambda *args: jax.tree.unflatten(out_tree, run(*jax.tree.leaves(args)))
