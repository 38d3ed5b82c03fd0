"""Wrong submissions for exercise 8's task compiler: each loses points, says why, and leaves layouts whole."""

import pytest

from catalogue import Catalogue, Right, Wrong, mutate

LOCAL = 'out_shardings=NamedSharding(mesh, P("data", "model")))(x, w)'
SUMMED = 'out_shardings=NamedSharding(mesh, P("data", None)))(x, w)'


def compiler(*edits):
    return {"compiler": mutate("compiler", *edits, exercise="exercise8")}


WRONG = {
    "y whole on every device": Wrong(
        compiler((LOCAL, "out_shardings=NamedSharding(mesh, P()))(x, w)")), devices="4",
        says=("no_collective's program runs an all-gather", "leave y there"), never=("reduce",)),
    "y's columns gathered": Wrong(
        compiler((LOCAL, SUMMED)), devices="4",
        says=("no_collective's program runs an all-gather over 'model'",), never=("reduce",)),
    "the reduced y also whole over 'data'": Wrong(
        compiler((SUMMED, "out_shardings=NamedSharding(mesh, P()))(x, w)")), devices="4",
        says=("an all-gather over 'data' and an all-reduce over 'model'", "keep y's rows split over 'data'"),
        never=("no sum over 'model'",)),
    "x and w gathered instead of summing partial products": Wrong(
        compiler((SUMMED, 'in_shardings=(NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P())),\n'
                          '                   out_shardings=NamedSharding(mesh, P("data", None)))(x, w)')), devices="4",
        says=("every device gathers w (P('model', None) as it arrives) whole", "added by XLA at the program's entry")),
    # Round 39 (written apart): x and w moved by device_put to other layouts; the gathers XLA adds for them were told
    # as if the code had asked for them.
    "x and w put whole over 'model' first": Wrong(
        compiler(("def one_reduction(x, w, mesh):\n", "def one_reduction(x, w, mesh):\n"
                  '    x = jax.device_put(x, NamedSharding(mesh, P("data", None)))\n'
                  "    w = jax.device_put(w, NamedSharding(mesh, P(None, None)))\n")), devices="4",
        says=("one_reduction's program runs 2 all-gathers over 'model' (added by XLA for a layout the code sets with "
              "device_put or with_sharding_constraint)",)),
    "a PartitionSpec without its mesh": Wrong(
        compiler((LOCAL, 'out_shardings=P("data", "model"))(x, w)')), devices="4",
        says=("bare PartitionSpec", "NamedSharding(mesh, P(...))")),
}

RIGHT = {
    "the compiler's own layout (no out_shardings)": Right(compiler(
        (", " + LOCAL, ")(x, w)"), (", " + SUMMED, ")(x, w)")), devices="4"),
    "the sum left split over both axes": Right(compiler((SUMMED, LOCAL)), devices="4"),
    # Round 39 (written apart): the mesh made current with jax.set_mesh, the layouts bare PartitionSpecs. Right when
    # called; the grader traces it under jax.jit, where JAX's own set_mesh refuses (grader.sandbox.mesh_in_trace).
    "the mesh set with jax.set_mesh, bare specs": Right(compiler(
        ("    return jax.jit(jnp.matmul, " + LOCAL, "    with jax.set_mesh(mesh):\n"
         '        return jax.jit(jnp.matmul, out_shardings=P("data", "model"))(x, w)'),
        ("    return jax.jit(jnp.matmul, " + SUMMED, "    with jax.set_mesh(mesh):\n"
         '        return jax.jit(jnp.matmul, out_shardings=P("data", None))(x, w)')), devices="4"),
}

CATALOGUE = Catalogue(exercise="exercise8", task="compiler", intact="layouts", wrong=WRONG, right=RIGHT)


@pytest.mark.parametrize("name", WRONG)
def test_wrong_compiler_is_caught(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("name", RIGHT)
def test_other_right_compiler_keeps_full_marks(name):
    CATALOGUE.expect_full_marks(name)
