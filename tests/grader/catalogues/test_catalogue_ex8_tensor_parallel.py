"""Wrong submissions for exercise 8's task tensor_parallel: each loses points, says why, and leaves layouts whole."""

import pytest

from catalogue import Catalogue, Right, Wrong, mutate

PSUM = 'return lax.psum(jax.nn.relu(x @ w1) @ w2, "model")'
SHARD_MAP = 'return jax.shard_map(_per_device, mesh=mesh, in_specs=SPECS, out_specs=P("data", None))(x, w1, w2)'
JIT = ('y_at = NamedSharding(mesh, P("data", None))\n'
       '    return jax.jit(lambda x, w1, w2: jnp.matmul(jax.nn.relu(x @ w1), w2, out_sharding=y_at))(x, w1, w2)')


def tensor_parallel(*edits):
    return {"tensor_parallel": mutate("tensor_parallel", *edits, exercise="exercise8")}


WRONG = {
    # Round 51 (written apart): a product through LAPACK (a solve), which the clean worker does not run: the refusal
    # names the student's function, not the suite's probe that built the program.
    "the output through a linear solve": Wrong(
        tensor_parallel((PSUM, 'return lax.psum(jax.numpy.linalg.solve(jax.numpy.eye(x.shape[0], dtype=x.dtype), '
                               'jax.nn.relu(x @ w1) @ w2), "model")')), devices="2",
        says=("the program of mlp(x, w1, w2, mesh) on a", "was refused: it calls the external function"),
        never=("on_mesh",)),
    # Round 39 (written apart): on an Explicit mesh under jit, the first product asked for h whole over 'model'
    # (out_sharding); the gather XLA adds for that product is told as the product's.
    "h asked whole over 'model' by the first product's out_sharding": Wrong(
        {"tensor_parallel": '''
import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

SPECS = (P("data", None), P(None, "model"), P("model", None))


def mlp(x, w1, w2, mesh):
    x, w1, w2 = (jax.device_put(a, NamedSharding(mesh, spec)) for a, spec in zip((x, w1, w2), SPECS))

    @jax.jit
    def f(x, w1, w2):
        h = jax.nn.relu(jax.lax.dot(x, w1, out_sharding=NamedSharding(mesh, P("data", None))))
        return jax.lax.dot(h, w2, out_sharding=NamedSharding(mesh, P("data", None)))
    return f(x, w1, w2)
'''}, devices="4",
        says=("mlp runs an all-gather over 'model' (added by XLA for a product (dot_general), to give its operands "
              "and result the layouts they are given)",)),
    "activations and w2 gathered": Wrong(
        tensor_parallel((PSUM, 'h = lax.all_gather(jax.nn.relu(x @ w1), "model", axis=1, tiled=True)\n'
                               '    return h @ lax.all_gather(w2, "model", axis=0, tiled=True)'),
                        (SHARD_MAP, SHARD_MAP.replace(
                            'out_specs=P("data", None))', 'out_specs=P("data", None), check_vma=False)'))),
        devices="4", says=("mlp runs an all-gather over 'model'", "nothing needs gathering"),
        never=("name 'model' in out_specs",)),
    "the partial sums added over 'data'": Wrong(
        tensor_parallel((PSUM, PSUM.replace('"model")', '"data")'))), devices="4",
        says=("differing along 'model'", "your function's lax.psum runs over 'data'; the reference's runs over "
                                          "'model'"), never=("lax.pmean averages them",)),
    "w1 row-parallel and w2 column-parallel": Wrong(
        tensor_parallel(('SPECS = (P("data", None), P(None, "model"), P("model", None))',
                         'SPECS = (P("data", None), P("model", None), P(None, "model"))')), devices="4",
        says=("w1 is column-parallel, P(None, 'model')", "its rows match the columns of h")),
    # Plain jax.jit on the arrays as they come, nothing placed on the mesh: every device computes the whole MLP.
    "plain jit, nothing on the mesh": Wrong(
        tensor_parallel(("    x, w1, w2 = (jax.device_put(a, NamedSharding(mesh, spec)) for a, spec in zip((x, w1, w2), "
                         "SPECS))\n", ""), (SHARD_MAP, "return jax.jit(lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2)(x, w1, w2)")),
        devices="4", says=("about the whole computation's work, done on every device", "another design"),
        never=("lax.psum", "all-reduce over 'model'")),
    # round 26 (written apart): the jit route with the weights placed whole on every device (P()), XLA slicing what
    # each device multiplies: the arithmetic and the all-reduce are the reference's, the weights are not split
    "weights placed whole, then jit with shardings": Wrong(tensor_parallel(
        ('SPECS = (P("data", None), P(None, "model"), P("model", None))', 'SPECS = (P("data", None), P(), P())'),
        (SHARD_MAP, JIT.replace("y_at = ", 'h_at = NamedSharding(mesh, P("data", "model"))\n    y_at = ').replace(
            "jax.nn.relu(x @ w1)", "jax.nn.relu(jnp.matmul(x, w1, out_sharding=h_at))")),
        ("import jax\n", "import jax\nimport jax.numpy as jnp\n")), devices="4",
        says=("each device holds all of", "where your program places it (jax.device_put)", "2.0 times")),
    "jit on Explicit axes with no out_sharding": Wrong(
        tensor_parallel((SHARD_MAP, "return jax.jit(lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2)(x, w1, w2)")),
        devices="4", says=("Explicit axes", "split over mesh axis 'model'", "out_sharding=")),
}

RIGHT = {
    # Round 54 (written apart): the first layer left to XLA (the columns of h need no communication), the second in a
    # shard_map with its psum. On 2 x 1 a block of h is as large as x's block only where D = H (the suite's sizes).
    "the first layer left to XLA": Right(tensor_parallel((SHARD_MAP, 'h = jax.nn.relu(x @ w1)\n    return '
                                                                    'jax.shard_map(lambda h, w2: lax.psum(h @ w2, "model"), '
                                                                    'mesh=mesh, in_specs=(P("data", "model"), P("model", '
                                                                    'None)), out_specs=P("data", None))(h, w2)')),
                                         devices="2"),
    "jit with shardings instead of shard_map": Right(tensor_parallel(
        (SHARD_MAP, JIT), ("import jax\n", "import jax\nimport jax.numpy as jnp\n")), devices="4"),
}

CATALOGUE = Catalogue(exercise="exercise8", task="tensor_parallel", intact="layouts", wrong=WRONG, right=RIGHT)


@pytest.mark.parametrize("name", WRONG)
def test_wrong_tensor_parallel_is_caught(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("name", RIGHT)
def test_other_right_tensor_parallel_keeps_full_marks(name):
    CATALOGUE.expect_full_marks(name)
