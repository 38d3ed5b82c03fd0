"""Wrong submissions for exercise 8's task matmuls: each loses points on matmuls, says why, and leaves layouts whole."""

import pytest

from catalogue import Catalogue, Right, Wrong, mutate

CASE2 = 'return lax.all_gather(xb, "model", axis=1, tiled=True) @ wb'
CASE3 = 'return lax.psum_scatter(xb @ wb, "model", scatter_dimension=1, tiled=True)'
CASE4 = 'return xb @ lax.all_gather(wb, "model", axis=1, tiled=True)'
MY_COLUMNS = ('\n        k = y.shape[1] // lax.axis_size("model")\n'
              '        return lax.dynamic_slice_in_dim(y, lax.axis_index("model") * k, k, axis=1)')


def matmuls(*edits):
    return {"matmuls": mutate("matmuls", *edits, exercise="exercise8")}


A2A_GATHER = ("matmul_case3 runs an all-to-all over 'model', and what it brings is then multiplied, not only added "
              "up: that gathers operands, where a reduce-scatter suffices")


def gathered_by_all_to_all_in_a_branch() -> dict:
    """matmuls with case 3's operands gathered by one all_to_all inside a lax.cond's branch, its blocks multiplied
    by a one made of x there (so that what it sends counts as computed by a product), multiplied after the cond."""
    return matmuls((CASE3, 'n = lax.axis_size("model")\n        b, dm = xb.shape\n        dm2, f = wb.shape\n'
                           '        one = xb[0, 0] - xb[0, 0] + 1\n'
                           '        xs = jnp.broadcast_to(xb.reshape(1, -1), (n, b * dm))\n'
                           '        ws = wb.reshape(dm2, n, f // n).transpose(1, 0, 2).reshape(n, -1)\n'
                           '        got = lax.cond(lax.axis_index("model") >= 0, lambda v: lax.all_to_all(v * one, '
                           '"model", 0, 0), lambda v: v * 0, jnp.concatenate([xs, ws], axis=1))\n'
                           '        xfull = got[:, :b * dm].reshape(n, b, dm).transpose(1, 0, 2).reshape(b, n * dm)\n'
                           '        return xfull @ got[:, b * dm:].reshape(n * dm2, f // n)'),
                   ("import jax\n", "import jax\nimport jax.numpy as jnp\n"))


WRONG = {
    "case 3: an all-reduce, then keeping its columns": Wrong(
        matmuls((CASE3, 'y = lax.psum(xb @ wb, "model")' + MY_COLUMNS)), devices="4",
        says=("matmul_case3 runs an all-reduce over 'model'", "an all-reduce where a reduce-scatter suffices"),
        never=("all-gather", "all_gather")),
    "case 3: both operands gathered": Wrong(
        matmuls((CASE3, 'y = lax.all_gather(xb, "model", axis=1, tiled=True) @ '
                        'lax.all_gather(wb, "model", axis=0, tiled=True)' + MY_COLUMNS)), devices="4",
        says=("gathering operands where a reduce-scatter suffices",), never=("an all-reduce where",)),
    "case 2: w gathered as well": Wrong(
        matmuls((CASE2, 'y = lax.all_gather(xb, "model", axis=1, tiled=True) @ '
                        'lax.all_gather(wb, "model", axis=1, tiled=True)' + MY_COLUMNS)), devices="4",
        says=("matmul_case2 runs an all-gather over 'model' and an all-gather over 'model'",
              "it needs exactly one all-gather")),
    "case 4: x gathered instead of w": Wrong(
        matmuls((CASE4, 'return lax.all_gather(xb, "model", axis=0, tiled=True) @ wb'),
                ('P(("data", "model"), None), P(None, "model"), P(("data", "model"), None))',
                 'P(("data", "model"), None), P(None, "model"), P("data", "model"))')), devices="4",
        says=("matmul_case4's all-gather takes 64 bytes per device where 48 suffice", "gathers w's column blocks")),
    "case 3 scattered over y's rows": Wrong(
        matmuls((CASE3, CASE3.replace("scatter_dimension=1", "scatter_dimension=0"))), devices="4",
        says=("matmul_case3(x, w, mesh) on a", "your reduce-scatter over 'model' splits dimension 0; the reference's "
                                               "splits dimension 1")),
    # The statement asks for shard_map in every case (its per-device code shows what the layout costs): case 1,
    # which needs no collective, computed by jax.jit with shardings keeps its values and loses its structural point.
    "case 1 with jax.jit and shardings": Wrong(matmuls((
        'return _sharded(lambda xb, wb: xb @ wb, mesh, P("data", None), P(None, "model"), P("data", "model"))(x, w)',
        'x = jax.device_put(x, NamedSharding(mesh, P("data", None)))\n'
        '    w = jax.device_put(w, NamedSharding(mesh, P(None, "model")))\n'
        '    return jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P("data", "model")))(x, w)'),
        ("import jax\n", "import jax\nimport jax.numpy as jnp\n")), devices="4",
        says=("matmul_case1(x, w, mesh) on a", "holds no jax.shard_map over more than one device")),
    "case 3: all_to_all of the partial sum twice over": Wrong(
        matmuls((CASE3, 'partial = xb @ wb\n        n = lax.axis_size("model")\n'
                        '        parts = partial.reshape(partial.shape[0], n, -1).transpose(1, 0, 2)\n'
                        '        both = lax.all_to_all(jnp.concatenate([parts, parts], 2), "model", 0, 0).sum(0)\n'
                        '        return both[:, :parts.shape[2]]'),
                ("import jax\n", "import jax\nimport jax.numpy as jnp\n")), devices="4",
        says=("matmul_case3's all-to-all takes 384 bytes per device where 192 suffice",)),
    # Rounds 41 to 43 (written apart): both operands gathered by one all_to_all (x's block to everyone, w's column
    # pieces to their owners), then multiplied: within the partial sum's bytes, but a gather by another name; its
    # blocks multiplied by a one made of x, so that what it sends counts as computed by a product (round 42), and
    # the all_to_all inside a lax.cond's branch, the product after the cond (round 43). The plain form, which sends
    # no product, and the one multiplied where it arrives are tests/grader/suite/test_hlo.py's fixtures.
    "case 3: operands gathered by an all_to_all in a branch, sent as 'products'": Wrong(
        gathered_by_all_to_all_in_a_branch(), devices="4", says=(A2A_GATHER,)),
    "w used without placing it on the mesh": Wrong(
        matmuls(("        w = jax.device_put(w, NamedSharding(mesh, w_spec))\n", "")), devices="4",
        says=("laid out as P(None, 'model'), but it arrives as P(None, None)", "jax.device_put")),
}

RIGHT = {
    "gathers that stack, then reshape": Right(matmuls(
        (CASE2, 'g = lax.all_gather(xb, "model", axis=1)\n        return g.reshape(xb.shape[0], -1) @ wb'),
        (CASE4, 'g = lax.all_gather(wb, "model", axis=1)\n        return xb @ g.reshape(wb.shape[0], -1)')),
        devices="4"),
    # Round 36 (written apart): case 3's reduce-scatter by hand, as fsdp accepts it: each device's column blocks of
    # its partial sum sent to their owners by one all_to_all, summed where they arrive.
    "case 3: a reduce-scatter by hand with all_to_all": Right(matmuls(
        (CASE3, 'partial = xb @ wb\n        n = lax.axis_size("model")\n'
                '        parts = partial.reshape(partial.shape[0], n, -1).transpose(1, 0, 2)\n'
                '        return lax.all_to_all(parts, "model", 0, 0).sum(0)')), devices="4"),
}

CATALOGUE = Catalogue(exercise="exercise8", task="matmuls", intact="layouts", wrong=WRONG, right=RIGHT)


@pytest.mark.parametrize("name", WRONG)
def test_wrong_matmuls_is_caught(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("name", RIGHT)
def test_other_right_matmuls_keeps_full_marks(name):
    CATALOGUE.expect_full_marks(name)
