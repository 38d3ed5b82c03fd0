"""Wrong submissions for task train: each loses points on train, says why, and leaves mesh at full points."""

import pytest

from catalogue import expect_caught, expect_full_marks, mutate

GRADS = "grads = lax.pmean(grads, AXIS)"

WRONG = {
    "gradients not averaged": (mutate("train", (GRADS, "grads = grads")), "2",
                               "average the gradients with lax.pmean"),
    "psum where pmean was meant": (mutate("train", (GRADS, "grads = lax.psum(grads, AXIS)")), "2",
                                   "lax.psum adds the gradients up"),
    "the chapter's lr mapped over devices": (mutate("train", (", in_axes=(0, 0, None)", "")), "2",
                                             "maps lr over the devices"),
    "the chapter's params @ x": (mutate("train", ("x @ params", "params @ x")), "2", "not the chapter's params @ x"),
    "loss not averaged": (mutate("train", ("lax.pmean(loss, AXIS)", "loss")), "2", "lax.pmean the loss too"),
    "gathers the whole batch": (
        mutate("train", ("jax.value_and_grad(loss_fn)(params, batch)",
                         "jax.value_and_grad(loss_fn)(params, [lax.all_gather(a, AXIS, tiled=True) for a in batch])")),
        "2", "runs an all-gather (from lax.all_gather)"),
    "hard-coded 4 devices in fit": (mutate("train", ("    n = jax.device_count()\n", "    n = 4\n")), "2,4",
                                    "[2 devices] fit() raised ValueError: jax.pmap got an input with leading axis 4, "
                                    "2 rows per device"),
    "train_step as a Python loop of device_puts, no pmap": (
        mutate("train", ("train_step = jax.pmap(_step, axis_name=AXIS, in_axes=(0, 0, None))", """\
def train_step(params, batch, lr):
    shards = [jax.device_put((p, x, y), d) for p, x, y, d in zip(params, *batch, jax.devices())]
    home = jax.devices()[0]
    losses, grads = zip(*(jax.device_put(jax.value_and_grad(loss_fn)(p, (x, y)), home) for p, x, y in shards))
    n = len(shards)
    return params - lr * sum(grads) / n, jnp.full((n,), sum(losses) / n)""")),
        "2", "train_step runs no all-reduce of its own"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_train_is_caught(make_submission, mistake):
    source, devices, reason = WRONG[mistake]
    expect_caught(make_submission({"train": source}), "train", "mesh", devices, reason)


RIGHT = {
    "lr as a static argument": mutate("train", ("in_axes=(0, 0, None)", "static_broadcasted_argnums=2")),
    "gradients summed, then divided by the axis size": mutate(
        "train", (GRADS, "grads = lax.psum(grads, AXIS) / lax.axis_size(AXIS)")),
}


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_train_keeps_full_marks(make_submission, way):
    expect_full_marks(make_submission({"train": RIGHT[way]}), "train", "1,4")
