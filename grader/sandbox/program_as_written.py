"""The program a student's function runs as written, when it is traced inside the grader's jax.jit.

A function is exported as one program: the grader traces it inside ``jax.jit``
(:mod:`grader.sandbox.program_export`). Written code mostly means the same either way, with one
exception that decides where data lives: ``jax.device_put(x, NamedSharding(mesh, spec))``. Called
outside any jit, as a student calls it, it moves x to that layout before anything else runs
(``P()`` copies all of x to every device). Inside jit JAX drops it from the lowered program: on a mesh
of Auto axes always; on Explicit axes wherever the value's type already says the same (an input traced
from its shape alone is whole, so a ``device_put`` of it to ``P()`` leaves no trace, and one to a split
layout only changes the type the rest of the program reads). XLA then lays x out as the rest of the
program likes, and a function that gathers its inputs whole, or keeps its weights whole on every
device, before multiplying them compiles to the same program as one that leaves them where they arrive.
So the program would be graded on a layout the student's code never has.

The student's own jit calls are the boundary: inside one, ``device_put`` is dropped in eager
execution too. So each ``device_put`` to a NamedSharding at the top of the traced function, outside
every jit the student wrote, is replaced by ``with_sharding_constraint`` to the same layout (on Auto
axes; ``jax.sharding.reshard`` on Explicit ones, exported in that mesh), which the compiled program must
honour, and the program then moves exactly what the student's code moves; and the module records
where each input was placed (:mod:`grader.sandbox.program_held` reads it). A single device or a bare
PartitionSpec is not a layout of the program's mesh and is left as it is.
"""

from __future__ import annotations


def _placed(layout) -> bool:
    """Whether a ``device_put`` to ``layout`` places data on a mesh: a NamedSharding."""
    from jax.sharding import NamedSharding

    return isinstance(layout, NamedSharding)


def _auto(layout) -> bool:
    """Whether ``layout``'s mesh has Auto axes only (where a sharding constraint asks for a layout; on Explicit
    axes it only asserts the type it is given, and ``jax.sharding.reshard`` asks)."""
    from jax.sharding import AxisType

    return all(t == AxisType.Auto for t in layout.mesh.axis_types)


def _constraint_equations(eqn) -> list | None:
    """The equations that do what the ``device_put`` equation ``eqn`` does when run eagerly: a
    ``with_sharding_constraint`` to each layout on Auto axes, a ``reshard`` on Explicit ones (traced in its mesh,
    from the type the value has); or None if one of its layouts is no mesh's (see :func:`_placed`)."""
    import jax

    if not all(map(_placed, eqn.params.get("devices", ()))):
        return None
    made = []
    for var, out, sharding in zip(eqn.invars, eqn.outvars, eqn.params["devices"]):
        aval = var.aval
        if _auto(sharding):
            place, given = jax.lax.with_sharding_constraint, jax.ShapeDtypeStruct(aval.shape, aval.dtype)
        else:
            place = jax.sharding.reshard
            given = jax.ShapeDtypeStruct(aval.shape, aval.dtype, sharding=getattr(aval, "sharding", None))
        with jax.set_mesh(sharding.mesh):
            traced = jax.make_jaxpr(lambda v, s=sharding: place(v, s))(given)
        (constraint,) = traced.jaxpr.eqns
        made.append(constraint.replace(invars=[var], outvars=[out], source_info=eqn.source_info))
    return made


def mesh_context(traced):
    """What the program as written is exported in: the mesh of Explicit axes its top-level ``device_put`` places
    values on (a reshard between layouts of that mesh is lowered in it), else nothing."""
    import contextlib

    import jax

    for eqn in traced.jaxpr.jaxpr.eqns:
        if eqn.primitive.name == "device_put":
            for layout in eqn.params.get("devices", ()):
                if _placed(layout) and not _auto(layout):
                    return jax.set_mesh(layout.mesh)
    return contextlib.nullcontext()


def as_written(closed):
    """``closed`` (the ClosedJaxpr of a traced function) with its top-level ``device_put`` to a NamedSharding
    made a sharding constraint or a reshard (:func:`_constraint_equations`), or None if it has none."""
    from jax.extend.core import ClosedJaxpr

    eqns, changed = [], False
    for eqn in closed.jaxpr.eqns:
        replaced = _constraint_equations(eqn) if eqn.primitive.name == "device_put" else None
        changed |= replaced is not None
        eqns.extend(replaced if replaced is not None else [eqn])
    return ClosedJaxpr(closed.jaxpr.replace(eqns=eqns), closed.consts) if changed else None


def function(traced):
    """A function of the same arguments as the one ``traced`` (a ``jax.stages.Traced``) was traced from that
    runs it as written (see the module's docstring), or None if tracing it inside jit changed nothing or JAX
    refuses the rewrite (the program is then exported as jit reads it)."""
    import jax
    from jax.extend.core import jaxpr_as_fun

    try:
        closed = as_written(traced.jaxpr)
    except Exception:  # noqa: BLE001 - JAX of the student's process refusing the rewrite: the program as jit reads it
        return None
    if closed is None:
        return None
    run, out_tree = jaxpr_as_fun(closed), jax.tree.structure(traced.out_info)
    return lambda *args: jax.tree.unflatten(out_tree, run(*jax.tree.leaves(args)))
