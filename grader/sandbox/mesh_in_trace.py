"""A student's ``with jax.set_mesh(mesh):`` inside a function the grader traces under ``jax.jit`` (worker side).

``jax.set_mesh`` refuses to run inside ``jax.jit``, and the grader reads every graded function by tracing it
under ``jax.jit`` (grader.sandbox.program_export) or ``jax.make_jaxpr`` (grader.sandbox.traced_collectives). A
function that sets its mesh that way is right when called, so while it is traced ``jax.set_mesh`` does what it
does outside jit, without the refusal (round 39: a right compiler solution scored 0).
"""

from __future__ import annotations

import contextlib


class _MeshSetInTrace:
    """``jax.set_mesh(mesh)`` without its refusal inside jit: it swaps the same two contexts JAX's own does (the
    abstract and the concrete mesh; none for ``None``), and puts them back as a context manager."""

    meshes: list = []  # the meshes set meanwhile, in order (meshes_settable starts a new list)

    def __init__(self, mesh):
        from jax._src import config
        from jax._src.mesh import empty_abstract_mesh, empty_concrete_mesh

        if mesh is not None:
            _MeshSetInTrace.meshes.append(mesh)

        self._config = config
        self._abstract = config.abstract_mesh_context_manager.swap_local(
            empty_abstract_mesh if mesh is None else mesh.abstract_mesh)
        self._concrete = config.device_context.swap_local(empty_concrete_mesh if mesh is None else mesh)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self._config.abstract_mesh_context_manager.set_local(self._abstract)
        self._config.device_context.set_local(self._concrete)


@contextlib.contextmanager
def meshes_settable():
    """While the student's function is traced (and exported, which may trace it again): ``jax.set_mesh`` (and
    ``jax.sharding.set_mesh``) as :class:`_MeshSetInTrace`; JAX's own again after, and the meshes in context as
    they were, also where the function set one with a plain call, never put back (round 42). Yields the list of
    the meshes the function sets, in order: a program typed with Explicit axes is exported in its mesh."""
    import jax
    from jax._src import config

    owners = [m for m in (jax, jax.sharding) if getattr(m, "set_mesh", None) is not None]
    own = {m: m.set_mesh for m in owners}
    contexts = (config.abstract_mesh_context_manager, config.device_context)
    were = [c.get_local() for c in contexts]
    for m in owners:
        m.set_mesh = _MeshSetInTrace
    _MeshSetInTrace.meshes = []
    try:
        yield _MeshSetInTrace.meshes
    finally:
        for m, setter in own.items():
            m.set_mesh = setter
        for c, was in zip(contexts, were):
            c.set_local(was)
