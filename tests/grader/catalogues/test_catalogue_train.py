"""Wrong submissions for task train: each loses points on train, says why, and leaves mesh at full points."""

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong, mutate

GRADS = "grads = lax.pmean(grads, AXIS)"

WRONG = {
    # round 23 (written apart): the gradient averaged by a reduce-scatter of n copies of it, an all-reduce in
    # disguise at n times the bytes
    "gradients averaged by a reduce-scatter of copies": Wrong(
        {"train": mutate("train", (GRADS, "grads = lax.psum_scatter(jnp.broadcast_to(grads, (lax.axis_size(AXIS), "
                                          "*grads.shape)), AXIS, scatter_dimension=0, tiled=False) / lax.axis_size(AXIS)"))},
        "2", says=("runs a reduce-scatter (psum_scatter) where the reference's runs no reduce-scatter",)),
    "gradients not averaged": Wrong(
        {"train": mutate("train", (GRADS, "grads = grads"))},
        "2", says=("average the gradients with lax.pmean",)),
    "psum where pmean was meant": Wrong(
        {"train": mutate("train", (GRADS, "grads = lax.psum(grads, AXIS)"))},
        "2", says=("update is 2 times the full-batch step", "their sum (lax.psum)"),
        fails=(("test_train_step_sends_only_gradient_and_loss", ("your function runs lax.psum over 'batch'",), {2}),)),
    # Round 38 (written apart): the gradients averaged, then lr scaled by the device count (a linear-scaling rule).
    # The program runs the reference's pmean: no psum may be blamed.
    "lr scaled by the device count": Wrong(
        {"train": mutate("train", ("params - lr * grads", "params - lr * lax.axis_size(AXIS) * grads"))},
        "2", says=("update is 2 times the full-batch step", "anything else scaled by the device count"),
        never=("runs lax.psum",)),
    "the chapter's lr mapped over devices": Wrong(
        {"train": mutate("train", (", in_axes=(0, 0, None)", ""))},
        "2", says=("maps lr over the devices",)),
    "the chapter's params @ x": Wrong(
        {"train": mutate("train", ("x @ params", "params @ x"))},
        "2", says=("not the chapter's params @ x",)),
    "loss not averaged": Wrong(
        {"train": mutate("train", ("lax.pmean(loss, AXIS)", "loss"))},
        "2", says=("lax.pmean the loss too",)),
    "the batch given whole to every device": Wrong(
        {"train": mutate("train", ("in_axes=(0, 0, None)", "in_axes=(0, None, None)"))},
        "2", says=("times the reference's", "about the whole computation's work"), never=("params @ x", "lax.psum")),
    "gathers the whole batch": Wrong(
        {"train": mutate("train", ("jax.value_and_grad(loss_fn)(params, batch)",
                         "jax.value_and_grad(loss_fn)(params, [lax.all_gather(a, AXIS, tiled=True) for a in batch])"))},
        "2", says=("runs an all-gather (from lax.all_gather)",)),
    "hard-coded 4 devices in fit": Wrong(
        {"train": mutate("train", ("    n = jax.device_count()\n", "    n = 4\n"))},
        "2,4", says=("[2 devices] fit() raised ValueError at `", "jax.pmap got an input with leading axis 4, "
                                                                  "2 rows per device")),
    "train_step as a Python loop of device_puts, no pmap": Wrong(
        {"train": mutate("train", ("train_step = jax.pmap(_step, axis_name=AXIS, in_axes=(0, 0, None))", """\
def train_step(params, batch, lr):
    shards = [jax.device_put((p, x, y), d) for p, x, y, d in zip(params, *batch, jax.devices())]
    home = jax.devices()[0]
    losses, grads = zip(*(jax.device_put(jax.value_and_grad(loss_fn)(p, (x, y)), home) for p, x, y in shards))
    n = len(shards)
    return params - lr * sum(grads) / n, jnp.full((n,), sum(losses) / n)"""))},
        "2", says=("train_step(params, batch, lr=0.05): its program has no jax.pmap that its answer depends on",)),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "params shared instead of mapped": Wrong(
        apart("train", ("in_axes=(0, 0, None)", "in_axes=(None, 0, None)")), "2",
        says=("every device got the whole params array (2, 3)", "in_axes=(0, 0, None)"), never=("params @ x",)),
    "the sum of the squared errors": Wrong(
        apart("train", ("return jnp.mean((x @ params - y) ** 2)", "return jnp.sum((x @ params - y) ** 2)")), "2",
        says=("it is the sum of the 5 squared errors, not their mean",), never=("params @ x",)),
    "losses recorded after each step": Wrong(
        apart("train", ("losses.append(loss[0])",
                        "losses.append(loss_fn(p[0], (X.reshape(-1, X.shape[-1]), y.reshape(-1))))")), "2",
        says=("are the losses after each step, one step late",), never=("params @ x",)),
    "the remainder padded with zero samples": Wrong(
        apart("train", ("per = X.shape[0] // n", "per = -(-X.shape[0] // n)"),
              ("X = X[: n * per].reshape(n, per, -1)",
               "X = jnp.pad(X, ((0, n * per - X.shape[0]), (0, 0))).reshape(n, per, -1)"),
              ("y = y[: n * per].reshape(n, per)", "y = jnp.pad(y, (0, n * per - y.shape[0])).reshape(n, per)")), "2",
        says=("pads the 51 samples with 1 zero row", "keep the first 50"), never=("params @ x",)),
}


RIGHT = {
    "lr as a static argument": Right(
        {"train": mutate("train", ("in_axes=(0, 0, None)", "static_broadcasted_argnums=2"))}),
    "gradients summed, then divided by the axis size": Right({"train": mutate(
        "train", (GRADS, "grads = lax.psum(grads, AXIS) / lax.axis_size(AXIS)"))}),
}


CATALOGUE = Catalogue("train", WRONG, RIGHT, intact="mesh")


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_train_is_caught(mistake):
    CATALOGUE.expect_caught(mistake)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_train_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)
