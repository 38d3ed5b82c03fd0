"""Wrong submissions for exercise 8's task collective_matmul: each loses points, says why, and leaves layouts whole."""

import pytest

from catalogue import Catalogue, Right, Wrong, mutate

START = "    n, me = lax.axis_size(\"model\"), lax.axis_index(\"model\")\n"
LOOP = "    for step in range(1, n):\n"
TAIL = '''    passing = x_block
    for step in range(1, n):
        passing = lax.ppermute(passing, "model", perm=[(i, (i + 1) % n) for i in range(n)])
        products = products.at[(me - step) % n].set(passing @ w_block)
'''


def collective_matmul(*edits):
    return {"collective_matmul": mutate("collective_matmul", *edits, exercise="exercise8")}


WRONG = {
    "the plain all-gather first": Wrong(
        collective_matmul((START, '    return lax.all_gather(x_block, "model", tiled=True) @ w_block\n' + START)),
        devices="4", says=("collective_matmul runs an all-gather over 'model'", "the point is to do without it")),
    "a ring of n steps": Wrong(
        collective_matmul((LOOP, LOOP.replace("range(1, n)", "range(1, n + 1)"))), devices="4",
        says=("collective_matmul runs 4 ppermutes", "expected n - 1 = 3", "the last one needs no sending")),
    # Rounds 43 and 45 (written apart): each product stored s places the wrong way round (right on rings of 2)
    "the product of the block after s steps stored at me + s": Wrong(
        collective_matmul(("products.at[(me - step) % n]", "products.at[(me + step) % n]")), devices="4",
        says=("puts the product of the block that arrived after s steps in the rows of the device s places one way",
              "belongs in the rows of the device it came from")),
    "the ring's length from jax.device_count()": Wrong(
        collective_matmul((START, START.replace('lax.axis_size("model")', "jax.device_count()"))), devices="4",
        says=("written for 4 devices", "the axis it runs over has fewer")),
    # Round 41 (written apart): a one-way ring that multiplies only the first half of each block while it travels,
    # the other halves behind a barrier after the ring: half a block is what a ring both ways overlaps, not this one.
    "half of each block multiplied while it travels": Wrong(
        {"collective_matmul": '''import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def _per_device(xb, wb):
    """Overlap only the first half of each block's rows with the ring; the second halves after it."""
    n, me = lax.axis_size("model"), lax.axis_index("model")
    r = xb.shape[0]
    h = r // 2
    first = jnp.zeros((n, h, wb.shape[1]), xb.dtype)
    second = jnp.zeros((n, r - h, wb.shape[1]), xb.dtype)
    held, blocks = xb, []
    for s in range(n):
        first = first.at[(me - s) % n].set(held[:h] @ wb)
        blocks.append(held)
        if s < n - 1:
            held = lax.ppermute(held, "model", [(i, (i + 1) % n) for i in range(n)])
    blocks = lax.optimization_barrier(blocks)
    for s, b in enumerate(blocks):
        second = second.at[(me - s) % n].set(b[h:] @ wb)
    return jnp.concatenate([first, second], axis=1).reshape(n * r, wb.shape[1])


def collective_matmul(x, w, mesh):
    x = jax.device_put(x, NamedSharding(mesh, P("model", None)))
    w = jax.device_put(w, NamedSharding(mesh, P(None, "model")))
    return jax.shard_map(_per_device, mesh=mesh, in_specs=(P("model", None), P(None, "model")),
                         out_specs=P(None, "model"))(x, w)
'''}, devices="4",
        says=("collective_matmul runs a product while a block travels in only 0 of the ring's 3 steps on a 1 x 4",)),
    # Round 14 (written apart): the ring only gathers x, then one product of all the blocks (no step overlaps).
    "the ring gathering x, then one product": Wrong(
        collective_matmul((TAIL, '''    blocks = jnp.zeros((n, *x_block.shape), x_block.dtype).at[me].set(x_block)
    passing = x_block
    for step in range(1, n):
        passing = lax.ppermute(passing, "model", perm=[(i, (i + 1) % n) for i in range(n)])
        blocks = blocks.at[(me - step) % n].set(passing)
    products = (blocks.reshape(n * x_block.shape[0], x_block.shape[1]) @ w_block).reshape(n, x_block.shape[0], -1)
''')), devices="4", says=("4.0 times one step's", "each block as it arrives")),
    # Round 26 (written apart): the gathered blocks multiplied as a multiply and a sum, which no dot shows, and a
    # needed decoy dot of half the passing block beside each ppermute.
    "the ring gathering x, a product without a dot, and decoys": Wrong(
        collective_matmul((TAIL, '''    blocks = jnp.zeros((n, *x_block.shape), x_block.dtype).at[me].set(x_block)
    passing, decoy, h = x_block, 0.0, x_block.shape[0] // 2
    for step in range(1, n):
        decoy = decoy + passing[:h] @ w_block
        passing = lax.ppermute(passing, "model", perm=[(i, (i + 1) % n) for i in range(n)])
        blocks = blocks.at[(me - step) % n].set(passing)
    xs = blocks.reshape(n * x_block.shape[0], x_block.shape[1])
    products = jnp.sum(xs[:, :, None] * w_block[None], axis=1).reshape(n, x_block.shape[0], -1)
    products = products.at[0, :h].add(1e-30 * decoy)
''')), devices="4", says=("4.0 times one step's", "each block as it arrives")),
    "a loop carry of zeros": Wrong(
        collective_matmul((TAIL, '''    def step(s, carry):
        products, passing = carry
        passing = lax.ppermute(passing, "model", perm=[(i, (i + 1) % n) for i in range(n)])
        return products.at[(me - s) % n].set(passing @ w_block), passing

    zeros = jnp.zeros((n, x_block.shape[0], w_block.shape[1]), x_block.dtype)
    products = lax.fori_loop(1, n, step, (zeros, x_block))[0].at[me].set(x_block @ w_block)
''')), devices="4", says=("a loop's carry starts the same on every device", "set your own block before the loop")),
}

RIGHT = {
    # Round 16 (written apart): half of each block each way round, 2(n - 1) ppermutes of half a block.
    "a ring both ways": Right(collective_matmul((TAIL, '''    fwd = [(i, (i + 1) % n) for i in range(n)]
    bwd = [(i, (i - 1) % n) for i in range(n)]
    h = x_block.shape[0] // 2
    top, bot = x_block[:h], x_block[h:]
    for step in range(1, n):
        top = lax.ppermute(top, "model", fwd)
        bot = lax.ppermute(bot, "model", bwd)
        products = products.at[(me - step) % n, :h].set(top @ w_block)
        products = products.at[(me + step) % n, h:].set(bot @ w_block)
''')), devices="4,8"),
    # In a fori_loop the product of a block and its sending run in one iteration: the block a step brings is
    # multiplied in the next, while it travels on (a product of what just arrived, in the same iteration, waits for
    # the transfer: no overlap, measured so on rings of 3 or more: 1 x 4 at 4 devices).
    "a fori_loop ring": Right(collective_matmul(
        ("jnp.zeros((n, x_block.shape[0], w_block.shape[1]), x_block.dtype).at[me].set(x_block @ w_block)",
         'lax.pcast(jnp.zeros((n, x_block.shape[0], w_block.shape[1]), x_block.dtype), ("model",), to="varying")'),
        (TAIL, '''    def step(s, carry):
        products, passing = carry
        products = products.at[(me - s + 1) % n].set(passing @ w_block)
        return products, lax.ppermute(passing, "model", perm=[(i, (i + 1) % n) for i in range(n)])

    products, passing = lax.fori_loop(1, n, step, (products, x_block))
    products = products.at[(me + 1) % n].set(passing @ w_block)
''')), devices="1,4"),
    # Each block's product written as a multiply and a sum: products all the same, one step's each.
    "products as a multiply and a sum": Right(collective_matmul(
        ("set(x_block @ w_block)", "set(jnp.sum(x_block[:, :, None] * w_block[None], axis=1))"),
        ("set(passing @ w_block)", "set(jnp.sum(passing[:, :, None] * w_block[None], axis=1))")), devices="4"),
    # Round 51 (written apart): the products kept in a list, stacked and put in order by one take (at 8 devices the
    # eight stacked products were read with two of them lost to XLA's "/*index=5*/" operand comment: test_hlo).
    "products stacked, then taken in order": Right(collective_matmul((TAIL, '''    products, passing = [], x_block
    for step in range(n):
        products.append(passing @ w_block)
        if step < n - 1:
            passing = lax.ppermute(passing, "model", perm=[(i, (i - 1) % n) for i in range(n)])
    products = jnp.take(jnp.stack(products), (jnp.arange(n) - me) % n, axis=0)
''')), devices="4"),
    # Round 54 (written apart): whole blocks both ways, n - 1 ppermutes in all; the own block's product runs beside
    # both first sends, which send it either way (grader.suite.hlo.overlapped).
    "whole blocks both ways": Right(collective_matmul((TAIL, '''    ahead = behind = x_block
    for step in range(1, n // 2 + 1):
        ahead = lax.ppermute(ahead, "model", perm=[(i, (i + 1) % n) for i in range(n)])
        products = products.at[(me - step) % n].set(ahead @ w_block)
        if step <= (n - 1) // 2:
            behind = lax.ppermute(behind, "model", perm=[(i, (i - 1) % n) for i in range(n)])
            products = products.at[(me + step) % n].set(behind @ w_block)
''')), devices="4"),
    "blocks passed the other way round": Right(collective_matmul(
        ("perm=[(i, (i + 1) % n) for i in range(n)]", "perm=[(i, (i - 1) % n) for i in range(n)]"),
        ("products.at[(me - step) % n]", "products.at[(me + step) % n]")), devices="4"),
}

CATALOGUE = Catalogue(exercise="exercise8", task="collective_matmul", intact="layouts", wrong=WRONG, right=RIGHT)


@pytest.mark.parametrize("name", WRONG)
def test_wrong_collective_matmul_is_caught(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("name", RIGHT)
def test_other_right_collective_matmul_keeps_full_marks(name):
    CATALOGUE.expect_full_marks(name)
