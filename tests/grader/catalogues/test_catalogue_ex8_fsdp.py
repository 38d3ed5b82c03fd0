"""Wrong submissions for exercise 8's task fsdp: each loses points on fsdp, says why, and leaves layouts whole."""

import pytest

from catalogue import Catalogue, Right, Wrong, mutate

GRAD = '''    def local_loss(w_shard):
        return loss_fn(lax.all_gather(w_shard, "data", axis=0, tiled=True), x, y)

    loss, grad = jax.value_and_grad(local_loss)(w_shard)'''
UPDATE = 'return w_shard - lr * grad / n, lax.pmean(loss, "data")'
WHOLE_GRADIENT = '''    w = lax.all_gather(w_shard, "data", axis=0, tiled=True)
    loss, grad = jax.value_and_grad(loss_fn)(w, x, y)'''


def fsdp(*edits):
    return {"fsdp": mutate("fsdp", *edits, exercise="exercise8")}


WRONG = {
    "replicated parameters, the gradient all-reduced": Wrong(fsdp(
        (GRAD, "    loss, grad = jax.value_and_grad(loss_fn)(w_shard, x, y)"),
        (UPDATE, 'return w_shard - lr * lax.pmean(grad, "data") / n, lax.pmean(loss, "data")'),
        ("w, x, y = (jax.device_put(a, rows) for a in (w, x, y))",
         "w = jax.device_put(w, NamedSharding(mesh, P()))\n    x, y = (jax.device_put(a, rows) for a in (x, y))"),
        ('in_specs=P("data", None),\n                         out_specs=(P("data", None), P()))',
         'in_specs=(P(), rows.spec, rows.spec),\n                         out_specs=(P(), P()))')), devices="4",
        says=("fsdp_step all-reduces", "the whole gradient", "that is data parallelism", "a reduce-scatter")),
    "the gradient all-reduced, then its rows kept": Wrong(fsdp(
        (GRAD, WHOLE_GRADIENT),
        (UPDATE, 'k = w_shard.shape[0]\n'
                 '    mine = lax.dynamic_slice_in_dim(lax.psum(grad, "data"), lax.axis_index("data") * k, k)\n'
                 '    return w_shard - lr * mine / n, lax.pmean(loss, "data")')), devices="4",
        says=("the whole gradient", "a reduce-scatter"), never=("all-gather of",)),
    # Round 26 (written apart): the gradient's reduce-scatter written as a ring of ppermutes: not a collective the
    # statement names, and the advice says so, not to gather w inside the differentiated function (it already is)
    "the gradient reduce-scattered by a ring of ppermutes": Wrong(fsdp(
        (GRAD, WHOLE_GRADIENT + '''
    m, me = lax.axis_size("data"), lax.axis_index("data")
    chunks = grad.reshape(m, grad.shape[0] // m, -1)
    total = chunks[(me - 1) % m]
    for step in range(1, m):
        total = lax.ppermute(total, "data", [(i, (i + 1) % m) for i in range(m)]) + chunks[(me - step - 1) % m]
    grad = total''')), devices="4",
        says=("the collective-permute is neither", "exchange the gradient with one of those two"),
        never=("gather w inside the function you differentiate",)),
    "the gradient summed, not averaged": Wrong(fsdp(
        (UPDATE, 'return w_shard - lr * grad, lax.pmean(loss, "data")')), devices="4",
        says=("update is 4 times the full-batch step", "divide it by n")),
    "the loss summed, not averaged": Wrong(fsdp(
        (UPDATE, 'return w_shard - lr * grad / n, lax.psum(loss, "data")')), devices="4",
        says=("result[1]", "is 4 times the answer", "adds up (lax.psum); the reference's averages")),
    # round 59 (written apart): both summed; each wrong result is told, and the communication difference named is
    # the loss's psum, the one collective that differs among those the wrong results depend on
    "the gradient and the loss summed, not averaged": Wrong(fsdp(
        (UPDATE, 'return w_shard - lr * grad, lax.psum(loss, "data")')), devices="4",
        says=("result[0]", "by 4 times the change the answer makes", "; and result[1] is 4 times the answer",
              "adds up (lax.psum); the reference's averages")),
    # round 22 (written apart): no gradient reduced at all: the batch's column blocks and residuals sent to every
    # device by all_to_alls, each under w's size, and each device's gradient rows taken from everyone's batch
    "the batch sent by all_to_alls, no gradient reduced": Wrong(fsdp(
        (GRAD, '''    n, (b, d), k = lax.axis_size("data"), x.shape, w_shard.shape[0]
    w = lax.all_gather(w_shard, "data", axis=0, tiled=True)
    residual = x @ w - y
    columns = lax.all_to_all(x.reshape(b, n, k), "data", 1, 0).reshape(n * b, k)
    copies = jnp.broadcast_to(residual, (n,) + residual.shape)
    halves = [lax.all_to_all(part, "data", 0, 0, tiled=True).reshape(n * b, -1)
              for part in (copies[:, :, :2], copies[:, :, 2:])]
    grad = n * 2 * columns.T @ jnp.concatenate(halves, axis=1) / (n * residual.size)
    loss = jnp.mean(residual ** 2)''')), devices="4",
        says=("all-to-alls move", "more than the whole gradient of w", "the batch stays where it is")),
    # the one rule matmuls case 3 measures (round 42 there): what a reduce-scatter by hand brings is summed, never
    # multiplied; here what arrives is multiplied by a one made of x, as a disguised gather's blocks would be
    "what the all_to_all brings multiplied": Wrong(fsdp(
        (GRAD, WHOLE_GRADIENT),
        (UPDATE, 'grad = lax.all_to_all(grad.reshape(n, w_shard.shape[0], -1), "data", 0, 0).sum(0) * (x[0, 0] * 0 + 1)\n'
                 '    return w_shard - lr * grad / n, lax.pmean(loss, "data")')), devices="4",
        says=("fsdp_step does more than add up what its all-to-all brings", "only sums the gradient row blocks that arrive")),
    # Round 43 (written apart): FSDP by shardings alone, w gathered by jax.reshard under jit: right values, but XLA
    # sums the gradient with all-reduces the code never wrote, and the message says who chose them
    "w gathered by jax.reshard, no shard_map": Wrong({"fsdp": '''import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


def fsdp_step(w, x, y, lr, mesh):
    with jax.set_mesh(mesh):
        w, x, y = (jax.reshard(jnp.asarray(a), P("data", None)) for a in (w, x, y))

        @jax.jit
        def step(w, x, y):
            def loss(w):
                return jnp.mean((x @ jax.reshard(w, P()) - y) ** 2)
            value, grad = jax.value_and_grad(loss)(w)
            return w - lr * grad, value
        return step(w, x, y)
'''}, devices="4", says=("and your code wrote none of them: the compiler (XLA's partitioner) chose them",
                          "gather w yourself with lax.all_gather inside jax.shard_map")),
    "new parameters gathered whole": Wrong(fsdp(
        (UPDATE, 'new = lax.all_gather(w_shard - lr * grad / n, "data", axis=0, tiled=True)\n'
                 '    return new, lax.pmean(loss, "data")'),
        ('out_specs=(P("data", None), P()))', 'out_specs=(P(), P()), check_vma=False)')), devices="4",
        says=("fsdp_step leaves every device a (8, 3) block of the new w", "parameters stay sharded over 'data'")),
}

RIGHT = {
    "the gradient reduce-scattered by hand": Right(fsdp(
        (GRAD, WHOLE_GRADIENT),
        (UPDATE, 'grad = lax.psum_scatter(grad, "data", scatter_dimension=0, tiled=True)\n'
                 '    return w_shard - lr * grad / n, lax.pmean(loss, "data")')), devices="4"),
    # round 17 (written apart): the reduce-scatter as an all_to_all of the gradient's row blocks, summed on arrival
    "the gradient reduce-scattered by an all_to_all": Right(fsdp(
        (GRAD, WHOLE_GRADIENT),
        (UPDATE, 'grad = lax.all_to_all(grad.reshape(n, w_shard.shape[0], -1), "data", 0, 0).sum(0)\n'
                 '    return w_shard - lr * grad / n, lax.pmean(loss, "data")')), devices="4"),
}

CATALOGUE = Catalogue(exercise="exercise8", task="fsdp", intact="layouts", wrong=WRONG, right=RIGHT)


@pytest.mark.parametrize("name", WRONG)
def test_wrong_fsdp_is_caught(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("name", RIGHT)
def test_other_right_fsdp_keeps_full_marks(name):
    CATALOGUE.expect_full_marks(name)
