"""Modules written from the statements alone (exercises/exercise7/*.py and course.yaml's hints), not from the
reference solutions, by someone who had not read the suites: correct submissions of another hand.

The catalogues' entries marked "Issue 23" are these modules with a realistic mistake edited in
(:func:`apart`), as a student who read only the statement would make it; some of the modules are
also graded as they are, as correct alternatives (``Right(apart("devices"), "2")``), which must keep
full marks.
"""

from catalogue import edited


def apart(module: str, *edits: tuple[str, str]) -> dict[str, str]:
    """``{module: source}``: the module written apart, with each (old, new) edit applied (old occurs once)."""
    return {module: edited(MODULES[module], *edits, name=f"the {module} written apart")}


DEVICES = '''
import jax


def count_devices(platform=None):
    if platform is None:
        return jax.device_count()
    try:
        return len(jax.devices(platform))
    except RuntimeError:
        return 0


def put_on_device(x, index):
    n = jax.device_count()
    if not 0 <= index < n:
        raise ValueError(f"no device {index}: there are {n} devices, indices 0 .. {n - 1}")
    return jax.device_put(x, jax.devices()[index])
'''

BASICS = '''
import jax
import jax.numpy as jnp


def _check(name, a):
    n = jax.device_count()
    if a.shape[0] != n:
        raise ValueError(f"{name} has leading axis {a.shape[0]}, but there are {n} devices: reshape it to ({n}, ...)")


def square_plus_one(x):
    _check("x", x)
    return jax.pmap(lambda b: b ** 2 + 1)(x)


def per_device_sum(x):
    _check("x", x)
    return jax.pmap(lambda b: jnp.sum(b))(x)


def per_device_matmul(X, Y):
    _check("X", X)
    _check("Y", Y)
    return jax.pmap(lambda a, b: a @ b)(X, Y)
'''

SHARD = '''
import numpy as np
import jax.numpy as jnp


def shard_batch(x, n_devices):
    B = x.shape[0]
    if B % n_devices:
        raise ValueError(f"batch of {B} rows does not split over {n_devices} devices; use pad_and_shard")
    return jnp.reshape(x, (n_devices, B // n_devices) + tuple(x.shape[1:]))


def pad_and_shard(x, n_devices):
    B = x.shape[0]
    per = -(-B // n_devices)
    padded = jnp.pad(x, [(0, per * n_devices - B)] + [(0, 0)] * (x.ndim - 1))
    mask = (jnp.arange(per * n_devices) < B).reshape(n_devices, per)
    return padded.reshape((n_devices, per) + tuple(x.shape[1:])), mask


def unshard(x):
    return jnp.reshape(x, (x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))
'''

COLLECTIVES = '''
import jax
import jax.numpy as jnp
from jax import lax


def all_reduce_stats(x):
    def f(row):
        return lax.psum(row, "i"), lax.pmean(row, "i"), lax.pmax(row, "i")
    return jax.pmap(f, axis_name="i")(x)


def standardize_across_devices(x):
    def f(row):
        mean = lax.pmean(jnp.mean(row), "i")
        var = lax.pmean(jnp.mean((row - mean) ** 2), "i")
        return (row - mean) / jnp.sqrt(var)
    return jax.pmap(f, axis_name="i")(x)
'''

DOT = '''
import jax
import jax.numpy as jnp
from jax import lax


def distributed_dot(x, y):
    n = jax.device_count()
    L = x.shape[0]
    padded = -(-L // n) * n
    x = jnp.concatenate([x, jnp.zeros(padded - L, x.dtype)]).reshape(n, -1)
    y = jnp.concatenate([y, jnp.zeros(padded - L, y.dtype)]).reshape(n, -1)
    out = jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), "i"), axis_name="i")(x, y)
    return out[0]
'''

RING = '''
import jax.numpy as jnp
from jax import lax


def ring_shift(x, axis_name, shift=1):
    n = lax.axis_size(axis_name)
    return lax.ppermute(x, axis_name, [(i, (i + shift) % n) for i in range(n)])


def ring_allreduce(x, axis_name):
    n = lax.axis_size(axis_name)
    total, block = x, x
    for _ in range(n - 1):
        block = ring_shift(block, axis_name)
        total = total + block
    return total


def ring_allreduce_optimal(x, axis_name):
    n = lax.axis_size(axis_name)
    i = lax.axis_index(axis_name)
    flat = x.reshape(-1)
    size = flat.shape[0]
    c = -(-size // n)
    chunks = jnp.pad(flat, (0, c * n - size)).reshape(n, c)
    for s in range(n - 1):
        send = (i - s) % n
        got = ring_shift(chunks[send], axis_name)
        recv = (i - s - 1) % n
        chunks = chunks.at[recv].add(got)
    for s in range(n - 1):
        send = (i + 1 - s) % n
        got = ring_shift(chunks[send], axis_name)
        recv = (i - s) % n
        chunks = chunks.at[recv].set(got)
    return chunks.reshape(-1)[:size].reshape(x.shape)
'''

TRAIN = '''
import jax
import jax.numpy as jnp
from jax import lax


def loss_fn(params, batch):
    x, y = batch
    return jnp.mean((x @ params - y) ** 2)


def _step(params, batch, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    grads = lax.pmean(grads, "batch")
    loss = lax.pmean(loss, "batch")
    return params - lr * grads, loss


train_step = jax.pmap(_step, axis_name="batch", in_axes=(0, 0, None))


def replicate(params, n_devices):
    return jnp.broadcast_to(params, (n_devices,) + params.shape)


def fit(params, X, y, steps, lr):
    n = jax.device_count()
    per = X.shape[0] // n
    X = X[: n * per].reshape(n, per, -1)
    y = y[: n * per].reshape(n, per)
    p = replicate(params, n)
    losses = []
    for step in range(steps):
        p, loss = train_step(p, (X, y), lr)
        losses.append(loss[0])
        if step % 10 == 9:
            jax.block_until_ready(p)
    return p[0], jnp.stack(losses) if losses else jnp.zeros((0,))
'''

MESH = '''
import jax
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def make_2d_mesh(n_rows, n_cols):
    return jax.make_mesh((n_rows, n_cols), ("data", "model"))


def shard_matrix(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P("data", "model")))


def sharded_matmul(x, w, mesh):
    x = jax.device_put(x, NamedSharding(mesh, P("data", "model")))
    w = jax.device_put(w, NamedSharding(mesh, P("model", None)))

    def block(xb, wb):
        return lax.psum(xb @ wb, "model")

    return jax.shard_map(block, mesh=mesh, in_specs=(P("data", "model"), P("model", None)),
                         out_specs=P("data", None))(x, w)
'''

MULTIHOST = '''
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def global_mean(local_batch):
    counts = [int(c) for c in np.asarray(multihost_utils.process_allgather(np.int32(local_batch.shape[0]))).reshape(-1)]
    if len(set(counts)) > 1:
        raise ValueError(f"every process must hold the same number of rows; they hold {counts}")
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    sharding = NamedSharding(mesh, P("batch"))
    arr = jax.make_array_from_process_local_data(sharding, local_batch)
    return jax.jit(lambda a: jnp.mean(a, axis=0), out_shardings=NamedSharding(mesh, P()))(arr)
'''


MODULES = {
    "devices": DEVICES,
    "basics": BASICS,
    "shard": SHARD,
    "collectives": COLLECTIVES,
    "dot": DOT,
    "ring": RING,
    "train": TRAIN,
    "mesh": MESH,
    "multihost": MULTIHOST,
}
