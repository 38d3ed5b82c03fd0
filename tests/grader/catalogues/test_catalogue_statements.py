"""Issue 30's catalogue: wrong submissions written from the statements alone, every task of both exercises.

Each entry is a mistake a student who read only the task's statement (the stub's docstring) makes, in
one of the three classes the issue names: a wrong factor, index or direction inside per-device code;
a wrong axis, dimension or spec argument; a design that bypasses the tool the task teaches. Exercise 7's
entries edit the modules written apart from the project (apart.py); exercise 8's edit the reference
solutions, the mistake taken from the statement. No entry has a rule of its own in a suite or the
engine: what names it is the difference engine (grader.suite.differences), the JAX errors mapped to
the argument the student wrote (grader.suite.jax_errors, call_arguments), and the suites' general
checks.

Every entry must lose points and give none of the advice in ``never``; ``says`` holds the words that
name the mistake. At least 90 % must be named (checked over the whole catalogue, and printed as a
tally: ``pytest -s`` shows it), so a message that states only where values differ is allowed for a few
and counted. Each entry is graded at one or two device counts, in a ``grade`` run shared with entries of
other tasks (catalogue.py).
"""

from __future__ import annotations

import pytest

from apart import apart
from catalogue import Catalogue, Wrong, mutate

LOCAL_FIX = ("use jnp.",)  # a local fix offered for a design that computes on the host
RAW = ("jax/_src", "Traceback")  # JAX's own text or a traceback is no message: never, for any entry


def ex8(module: str, *edits: tuple[str, str]) -> dict[str, str]:
    return {module: mutate(module, *edits, exercise="exercise8")}


# (exercise, task) -> {name: Wrong}
ENTRIES: dict[tuple[str, str], dict[str, Wrong]] = {
    ("exercise7", "devices"): {
        "platform ignored": Wrong(apart("devices", ("    if platform is None:\n        return jax.device_count()\n",
                                                    "    return jax.device_count()\n")), "2",
                                  says=("whatever the platform",)),
        "negative index accepted": Wrong(apart("devices", ("if not 0 <= index < n:", "if index >= n:")), "2",
                                         says=("put_on_device(x, -1)", "expected it to raise ValueError")),
        "a NumPy copy returned": Wrong(apart("devices", ("    return jax.device_put(x, jax.devices()[index])",
                                                         "    import numpy as np\n"
                                                         "    return np.asarray(jax.device_put(x, jax.devices()[index]))")),
                                       "2", says=("a NumPy array lives on no device",)),
        "RuntimeError not caught": Wrong(apart("devices", ("    try:\n        return len(jax.devices(platform))\n"
                                                           "    except RuntimeError:\n        return 0\n",
                                                           "    return len(jax.devices(platform))\n")), "2",
                                         says=("catch the RuntimeError",)),
    },
    ("exercise7", "basics"): {
        "a float literal turns ints into floats": Wrong(apart("basics", ("b ** 2 + 1", "b ** 2 + 1.0")), "2",
                                                        says=("dtype changed from int32 to float32", "float literal")),
        "sums added up over the devices": Wrong(apart("basics", (
            "jax.pmap(lambda b: jnp.sum(b))(x)",
            "jax.pmap(lambda b: jax.lax.psum(jnp.sum(b), 'i'), axis_name='i')(x)")), "2",
            says=("every device holds the sum over all devices",)),
        "Y given whole to every device": Wrong(apart("basics", ("jax.pmap(lambda a, b: a @ b)(X, Y)",
                                                                "jax.pmap(lambda a, b: a @ b, in_axes=(0, None))(X, Y)")),
                                              "2", says=("in_axes entry for its input 1", "is None")),
        "leading axis not checked": Wrong(apart("basics", ('    _check("x", x)\n    return jax.pmap(lambda b: b ** 2 + 1)(x)',
                                                           "    return jax.pmap(lambda b: b ** 2 + 1)(x)")), "2",
                                          says=("not from a check of your own",)),
        "vmap instead of pmap": Wrong(apart("basics", ("jax.pmap(lambda a, b: a @ b)(X, Y)",
                                                       "jax.vmap(lambda a, b: a @ b)(X, Y)")), "2",
                                      says=("jax.vmap",)),
        "each device sums over one axis only": Wrong(apart("basics", ("jax.pmap(lambda b: jnp.sum(b))(x)",
                                                                      "jax.pmap(lambda b: jnp.sum(b, axis=0))(x)")), "2",
                                                     says=("per_device_sum", "expected shape (2,)")),
    },
    ("exercise7", "shard"): {
        "rows dealt round-robin": Wrong(apart("shard", (
            "return jnp.reshape(x, (n_devices, B // n_devices) + tuple(x.shape[1:]))",
            "return jnp.swapaxes(jnp.reshape(x, (B // n_devices, n_devices) + tuple(x.shape[1:])), 0, 1)")), "2",
            says=("deals the rows out like cards",)),
        "padding at the front": Wrong(apart("shard", ("[(0, per * n_devices - B)]", "[(per * n_devices - B, 0)]")),
                                      "2", says=("puts the padding first",)),
        "mask from the values": Wrong(apart("shard", (
            "mask = (jnp.arange(per * n_devices) < B).reshape(n_devices, per)",
            "mask = (padded != 0).reshape(n_devices, per, -1).any(axis=-1)")), "2",
            says=("by position",)),
        "no ValueError when rows do not divide": Wrong(apart("shard", (
            '    if B % n_devices:\n        raise ValueError(f"batch of {B} rows does not split over {n_devices} '
            'devices; use pad_and_shard")\n', "    B = B - B % n_devices\n    x = x[:B]\n")), "2",
            says=("expected it to raise ValueError",)),
        "padding with ones": Wrong(apart("shard", ("[(0, 0)] * (x.ndim - 1))",
                                                   "[(0, 0)] * (x.ndim - 1), constant_values=1)")), "2",
                                   says=("zero padding", "got 1, expected 0")),
        "unshard flattens every axis": Wrong(apart("shard", (
            "return jnp.reshape(x, (x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))", "return jnp.reshape(x, (-1,))")),
            "2", says=("returned shape (20,), expected shape (4, 5)",)),
    },
    ("exercise7", "collectives"): {
        "pmean where psum belongs": Wrong(apart("collectives", ('return lax.psum(row, "i"), lax.pmean(row, "i")',
                                                                'return lax.pmean(row, "i"), lax.pmean(row, "i")')),
                                          "2", says=("lax.pmean where lax.psum was meant",)),
        "variance as the mean of the devices' variances": Wrong(apart("collectives", (
            'var = lax.pmean(jnp.mean((row - mean) ** 2), "i")', 'var = lax.pmean(jnp.var(row), "i")')), "2",
            says=("average of the devices' own variances",)),
        "std with n - 1": Wrong(apart("collectives", (
            "return (row - mean) / jnp.sqrt(var)",
            "count = lax.psum(row.size, 'i')\n        return (row - mean) / jnp.sqrt(var * count / (count - 1))")),
            "2", says=("N - 1",)),
        "results in another order": Wrong(apart("collectives", (
            'return lax.psum(row, "i"), lax.pmean(row, "i"), lax.pmax(row, "i")',
            'return lax.psum(row, "i"), lax.pmax(row, "i"), lax.pmean(row, "i")')), "2",
            says=("returned in another order",)),
        "the whole array gathered": Wrong(apart("collectives", (
            'mean = lax.pmean(jnp.mean(row), "i")\n        var = lax.pmean(jnp.mean((row - mean) ** 2), "i")',
            'whole = lax.all_gather(row, "i")\n        mean = jnp.mean(whole)\n        var = jnp.var(whole)')), "2",
            says=("all-gather",)),
        "maximum of everything": Wrong(apart("collectives", ('lax.pmax(row, "i")', 'lax.pmax(jnp.max(row), "i")')),
                                       "2", says=("one number per device",)),
        "the whole array reduced under jax.jit": Wrong(apart("collectives", (
            '    def f(row):\n        return lax.psum(row, "i"), lax.pmean(row, "i"), lax.pmax(row, "i")\n'
            '    return jax.pmap(f, axis_name="i")(x)',
            '    return jax.jit(lambda a: tuple(jnp.broadcast_to(s, a.shape) for s in (a.sum(0), a.mean(0), a.max(0))))(x)')),
            "2", says=("its program has no jax.pmap that its answer depends on",), never=LOCAL_FIX),
    },
    ("exercise7", "dot"): {
        "both vectors reshaped (-1, n)": Wrong(apart("dot", (
            "x = jnp.concatenate([x, jnp.zeros(padded - L, x.dtype)]).reshape(n, -1)",
            "x = jnp.concatenate([x, jnp.zeros(padded - L, x.dtype)]).reshape(-1, n)"), (
            "y = jnp.concatenate([y, jnp.zeros(padded - L, y.dtype)]).reshape(n, -1)",
            "y = jnp.concatenate([y, jnp.zeros(padded - L, y.dtype)]).reshape(-1, n)")), "2",
            says=("your jax.pmap is handed its input 0 in shape",), never=("jnp.pad", "pad it")),
        "pmean where psum belongs": Wrong(apart("dot", ('lax.psum(jnp.dot(a, b), "i")', 'lax.pmean(jnp.dot(a, b), "i")')),
                                          "2", says=("1/2 of the answer", "lax.pmean"), never=("out[0]",)),
        "the devices' totals added up again": Wrong(apart("dot", ("return out[0]", "return out.sum()")), "2",
                                                    says=("2 times the answer", "return out[0]"), never=("lax.pmean",)),
        "padded with ones": Wrong(apart("dot", ("jnp.zeros(padded - L, x.dtype)", "jnp.ones(padded - L, x.dtype)"),
                                        ("jnp.zeros(padded - L, y.dtype)", "jnp.ones(padded - L, y.dtype)")),
                                  "4", says=("padding with", "pad with zeros")),
        "no psum: device 0's part only": Wrong(apart("dot", ('lax.psum(jnp.dot(a, b), "i")', "jnp.dot(a, b)")), "4",
                                               says=("leaves out x's block 1 (device 1's)",)),
        "y split strided, x in blocks": Wrong(apart("dot", (
            "y = jnp.concatenate([y, jnp.zeros(padded - L, y.dtype)]).reshape(n, -1)",
            "y = jnp.concatenate([y, jnp.zeros(padded - L, y.dtype)]).reshape(-1, n).T")), "2",
            says=("is the answer for y split strided",)),
        "NumPy on the host, then device_put": Wrong(apart("dot", (
            '    n = jax.device_count()\n    L = x.shape[0]\n',
            "    import numpy as np\n    return jax.device_put(np.dot(np.asarray(x), np.asarray(y)))\n"
            "    n = jax.device_count()\n    L = x.shape[0]\n")), "2",
            says=("computes on the host",), never=LOCAL_FIX),
        "its own ValueError on a length that does not divide": Wrong(apart("dot", (
            "    padded = -(-L // n) * n\n",
            "    if L % n:\n        raise ValueError(f'length {L} is not a multiple of {n}')\n"
            "    padded = -(-L // n) * n\n")), "2", says=("your own code raised it", "distributed_dot(float32[5], float32[5])")),
        "jax.jit with shardings instead of jax.pmap": Wrong(apart("dot", (
            '    out = jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), "i"), axis_name="i")(x, y)\n    return out[0]',
            '    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n'
            '    mesh = Mesh(jax.devices(), ("i",))\n'
            '    at = NamedSharding(mesh, P("i"))\n'
            '    return jax.jit(jnp.vdot, out_shardings=NamedSharding(mesh, P()))(\n'
            '        jax.device_put(x.reshape(-1), at), jax.device_put(y.reshape(-1), at))')), "2",
            says=("its program has no jax.pmap that its answer depends on",), never=LOCAL_FIX),
    },
    ("exercise7", "ring"): {
        "ring turned the other way": Wrong(apart("ring", ("(i, (i + shift) % n)", "(i, (i - shift) % n)")), "4",
                                           says=("moves blocks the wrong way",)),
        "n shifts, own block twice": Wrong(apart("ring", ("for _ in range(n - 1):", "for _ in range(n):")), "4",
                                           says=("counts twice x's block 0 (device 0's) from device 0's result",)),
        "adds before it shifts": Wrong(apart("ring", (
            "block = ring_shift(block, axis_name)\n        total = total + block",
            "total = total + block\n        block = ring_shift(block, axis_name)")), "4",
            says=("leaves out x's block 1 (device 1's) from device 0's result", "counts twice x's block 0 (device 0's) from device 0's result")),
        "psum instead of a ring": Wrong(apart("ring", (
            "    n = lax.axis_size(axis_name)\n    total, block = x, x\n",
            "    return lax.psum(x, axis_name)\n    n = lax.axis_size(axis_name)\n    total, block = x, x\n")), "4",
            says=("runs an all-reduce (from lax.psum)",)),
        "ring written for 4 devices": Wrong(apart("ring", ("n = lax.axis_size(axis_name)\n    return lax.ppermute",
                                                           "n = 4\n    return lax.ppermute")), "2",
                                            says=("written for 4 devices, but this ring has 2",)),
    },
    ("exercise7", "ring_optimal"): {
        "reduce-scatter only": Wrong(apart("ring", ("        chunks = chunks.at[recv].set(got)\n",
                                                    "        chunks = chunks\n")), "4",
                                     says=("one chunk per device only",), intact="ring"),
        "all-gather that adds": Wrong(apart("ring", ("chunks = chunks.at[recv].set(got)",
                                                     "chunks = chunks.at[recv].add(got)")), "4",
                                      says=(".add",), never=("is missing", "no all-gather"), intact="ring"),
        "the naive ring as the optimal one": Wrong(apart("ring", (
            "    n = lax.axis_size(axis_name)\n    i = lax.axis_index(axis_name)\n",
            "    return ring_allreduce(x, axis_name)\n    n = lax.axis_size(axis_name)\n"
            "    i = lax.axis_index(axis_name)\n")), "4", says=("sends the whole block",), intact="ring"),
    },
    ("exercise7", "train"): {
        "gradients summed, not averaged": Wrong(apart("train", ('grads = lax.pmean(grads, "batch")',
                                                                'grads = lax.psum(grads, "batch")')), "2",
                                                says=("2 times the full-batch step", "lax.pmean averages them")),
        "loss not averaged over devices": Wrong(apart("train", ('    loss = lax.pmean(loss, "batch")\n', "")), "2",
                                                says=("lax.pmean the loss",)),
        "gradients never averaged": Wrong(apart("train", ('    grads = lax.pmean(grads, "batch")\n', "")), "2",
                                          says=("average the gradients with lax.pmean",)),
        "loss summed": Wrong(apart("train", ("return jnp.mean((x @ params - y) ** 2)",
                                             "return jnp.sum((x @ params - y) ** 2)")), "2",
                             says=("not their mean",)),
        "lr mapped by pmap": Wrong(apart("train", ('in_axes=(0, 0, None)', 'in_axes=0')), "2",
                                   says=("in_axes=(0, 0, None)",)),
        "replicate with tile": Wrong(apart("train", ("return jnp.broadcast_to(params, (n_devices,) + params.shape)",
                                                     "return jnp.tile(params, n_devices)")), "2",
                                     says=("returned shape (6,), expected shape (2, 3)",)),
    },
    ("exercise7", "mesh"): {
        "psum over 'data'": Wrong(apart("mesh", ('lax.psum(xb @ wb, "model")', 'lax.psum(xb @ wb, "data")')), "4",
                                  says=("your function's lax.psum runs over 'data'; the reference's runs over 'model'",)),
        "mesh axes named the other way": Wrong(apart("mesh", ('(n_rows, n_cols), ("data", "model"))', '(n_rows, n_cols), ("model", "data"))')), "4",
                                               says=("axis names ('model', 'data')",)),
        "matrix split over the axes the other way": Wrong(apart("mesh", (
            'return jax.device_put(x, NamedSharding(mesh, P("data", "model")))',
            'return jax.device_put(x, NamedSharding(mesh, P("model", "data")))')), "4",
            says=("P('model', 'data'), expected P('data', 'model')",)),
        "jax.jit instead of shard_map": Wrong(apart("mesh", (
            "    return jax.shard_map(block, mesh=mesh, in_specs=(P(\"data\", \"model\"), P(\"model\", None)),\n"
            "                         out_specs=P(\"data\", None))(x, w)",
            "    return jax.jit(lambda a, b: a @ b, out_shardings=NamedSharding(mesh, P(\"data\", None)))(x, w)")),
            "4", says=("jax.shard_map",)),
        "out_specs say the result is the same everywhere": Wrong(apart("mesh", ('out_specs=P("data", None))(x, w)',
                                                                                'out_specs=P())(x, w)')), "4",
                                                                 says=("out_specs entry for its result 0 is P()",
                                                                       "the reference's is P('data')"),
                                                                 never=("A collective over 'data' makes it",)),
        "psum over an axis the mesh lacks": Wrong(apart("mesh", ('lax.psum(xb @ wb, "model")',
                                                                 'lax.psum(xb @ wb, "i")')), "4",
                                                  says=("axis_name='i'", "name an axis the mesh has")),
        "out_specs split over 'model' too": Wrong(apart("mesh", ('out_specs=P("data", None))(x, w)',
                                                                 'out_specs=P("data", "model"))(x, w)')), "4",
                                                  says=("out_specs entry for its result 0 is P('data', 'model')",)),
    },
    ("exercise7", "multihost"): {
        "the local mean": Wrong(apart("multihost", (
            "    return jax.jit(lambda a: jnp.mean(a, axis=0), out_shardings=NamedSharding(mesh, P()))(arr)",
            "    return jnp.mean(local_batch, axis=0)")), "2", says=("own rows only",)),
        "global_shape of the local rows": Wrong(apart("multihost", (
            "arr = jax.make_array_from_process_local_data(sharding, local_batch)",
            "arr = jax.make_array_from_process_local_data(sharding, local_batch, local_batch.shape)")), "2",
            says=("global_shape=local_batch.shape",)),
        "no check of the row counts": Wrong(apart("multihost", (
            '    if len(set(counts)) > 1:\n        raise ValueError(f"every process must hold the same number of rows; '
            'they hold {counts}")\n', "")), "2", says=("expected it to raise ValueError",)),
    },
    ("exercise8", "compiler"): {
        "no_collective laid out as rows": Wrong(ex8("compiler", (
            'out_shardings=NamedSharding(mesh, P("data", "model")))(x, w)\n\n\ndef one',
            'out_shardings=NamedSharding(mesh, P("data", None)))(x, w)\n\n\ndef one')), "4",
            says=("runs an all-gather over 'model'",)),
        "no_collective's rows split over both axes": Wrong(ex8("compiler", (
            'out_shardings=NamedSharding(mesh, P("data", "model")))(x, w)\n\n\ndef one',
            'out_shardings=NamedSharding(mesh, P(("data", "model"), None)))(x, w)\n\n\ndef one')), "4",
            says=("out_shardings entry for its result 0 is P(('data', 'model'),)",
                  "the reference's is P('data', 'model')"), never=("jnp.pad", "pad it")),
        "NumPy on the host": Wrong(ex8("compiler", (
            '    return jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P("data", "model")))(x, w)',
            '    import numpy as np\n    return jax.device_put(np.asarray(x) @ np.asarray(w), '
            'NamedSharding(mesh, P("data", "model")))')), "4", says=("computes on the host",), never=LOCAL_FIX),
        "inputs gathered first": Wrong(ex8("compiler", (
            '    return jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P("data", None)))(x, w)',
            '    return jax.jit(jnp.matmul, in_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, P())),\n'
            '                   out_shardings=NamedSharding(mesh, P("data", None)))(x, w)')), "4",
            says=("every device gathers x (P('data', 'model') as it arrives) and w",), never=LOCAL_FIX),
    },
    ("exercise8", "layouts"): {
        "mesh shape the other way round": Wrong(ex8("layouts", ('jax.make_mesh((n // model, model), ("data", "model"))',
                                                                'jax.make_mesh((model, n // model), ("data", "model"))')),
                                                "4", says=("returned shape (4, 1), expected shape (1, 4)",)),
        "batch over 'data' only": Wrong(ex8("layouts", ('P(("data", "model"), None)', 'P("data", None)')), "4",
                                        says=("P('data', None)", "P(('data', 'model'), None)")),
        "weights split by rows": Wrong(ex8("layouts", ('P(None, "model")', 'P("model", None)')), "4",
                                       says=("P('model', None)", "P(None, 'model')")),
        "the global shape as the shard's": Wrong(ex8("layouts", ("return x.sharding.shard_shape(x.shape)",
                                                                 "return x.shape")), "4", says=("returned (8, 12)", "expected (4, 6)")),
        "copies as the device count": Wrong(ex8("layouts", ("return len(x.sharding.device_set) // len(blocks)",
                                                            "return len(x.sharding.device_set)")), "4",
                                            says=("returned 4", "expected 1")),
        "no ValueError for a model size that does not divide": Wrong(ex8("layouts", (
            "    if model < 1 or n % model:\n", "    if model < 1:\n")), "4", says=("expected it to raise ValueError",)),
        "block ends inclusive": Wrong(ex8("layouts", ("index_range.indices(size)[:2]",
                                                      "(index_range.indices(size)[0], index_range.indices(size)[1] - 1)")),
                                      "4", says=("((0, 3), (0, 5))", "expected ((0, 4), (0, 6))")),
    },
    ("exercise8", "rings"): {
        "gathered blocks stored the wrong way round": Wrong(ex8("rings", (
            "gathered = gathered.at[(me - step) % n].set(passing)", "gathered = gathered.at[(me + step) % n].set(passing)")),
            "4", says=("in the wrong places",)),
        "reduce-scatter adds before it shifts": Wrong(ex8("rings", (
            "total = _to_next(total, axis_name, n) + chunks[(me - step - 1) % n]",
            "total = _to_next(total + chunks[(me - step - 1) % n], axis_name, n)")), "4",
            says=("chunk 0 of x's block 0 (device 0's) lands in device 1's result, where it belongs in device 0's",)),
        "gathered blocks not concatenated": Wrong(ex8("rings", (
            "return gathered.reshape(n * block.shape[0], *block.shape[1:])", "return gathered")), "4",
            says=("returned shape (8, 2, 3), expected shape (16, 3)",)),
        "lax.psum_scatter instead of a ring": Wrong(ex8("rings", (
            "    chunks = x.reshape(n, x.shape[0] // n, *x.shape[1:])\n",
            "    return lax.psum_scatter(x, axis_name, tiled=True)\n"
            "    chunks = x.reshape(n, x.shape[0] // n, *x.shape[1:])\n")), "4", says=("runs a reduce-scatter over 'model'", "lax.ppermute alone")),
        "ring over every device": Wrong(ex8("rings", (
            "def ring_all_gather(block, axis_name):\n    n, me = lax.axis_size(axis_name), lax.axis_index(axis_name)",
            "def ring_all_gather(block, axis_name):\n    import jax\n    n, me = jax.device_count(), "
            "lax.axis_index(axis_name)")), "4", says=("written for 4 devices", "lax.axis_size(axis_name)")),
    },
    ("exercise8", "matmuls"): {
        "case 2 gathers over axis 0": Wrong(ex8("matmuls", ('lax.all_gather(xb, "model", axis=1, tiled=True) @ wb',
                                                            'lax.all_gather(xb, "model", axis=0, tiled=True) @ wb')),
                                            "4", says=("axis=0",)),
        "case 3 scatters dimension 0": Wrong(ex8("matmuls", ("scatter_dimension=1, tiled=True)",
                                                             "scatter_dimension=0, tiled=True)")), "4",
                                             says=("your reduce-scatter over 'model' splits dimension 0; the "
                                                   "reference's splits dimension 1",)),
        "case 3 without tiled": Wrong(ex8("matmuls", ("scatter_dimension=1, tiled=True)", "scatter_dimension=1)")),
                                      "4", says=("without tiled=True",)),
        "case 1 out_specs over 'data' only": Wrong(ex8("matmuls", (
            'mesh, P("data", None), P(None, "model"), P("data", "model"))(x, w)',
            'mesh, P("data", None), P(None, "model"), P("data", None))(x, w)')), "4", says=("out_specs entry for its result 0 is P('data')",
                                                                  "the reference's is P('data', 'model')")),
        "case 3 with an all-reduce": Wrong(ex8("matmuls", (
            'return lax.psum_scatter(xb @ wb, "model", scatter_dimension=1, tiled=True)',
            'return lax.psum(xb @ wb, "model")')), "4", says=("runs an all-reduce over 'model'; the reference's program runs no all-reduce",)),
        "case 2 gather over a dimension the block lacks": Wrong(ex8("matmuls", (
            'lax.all_gather(xb, "model", axis=1, tiled=True) @ wb', 'lax.all_gather(xb, "model", axis=2, tiled=True) @ wb')),
            "4", says=("lax.all_gather's axis=2",)),
        "case 3 scatters a dimension the block lacks": Wrong(ex8("matmuls", ("scatter_dimension=1, tiled=True)",
                                                                             "scatter_dimension=2, tiled=True)")), "4",
                                                             says=("scatter_dimension=2",)),
    },
    ("exercise8", "collective_matmul"): {
        "products stored at (me + step)": Wrong(ex8("collective_matmul", (
            "products = products.at[(me - step) % n].set(passing @ w_block)",
            "products = products.at[(me + step) % n].set(passing @ w_block)")), "4", says=("wrong order",)),
        "n steps": Wrong(ex8("collective_matmul", ("for step in range(1, n):", "for step in range(1, n + 1):")), "4",
                         says=("runs 2 ppermutes", "expected n - 1 = 1")),
        "an all-gather instead of a ring": Wrong(ex8("collective_matmul", (
            "    n, me = lax.axis_size(\"model\"), lax.axis_index(\"model\")\n",
            "    return lax.all_gather(x_block, \"model\", axis=0, tiled=True) @ w_block\n"
            "    n, me = lax.axis_size(\"model\"), lax.axis_index(\"model\")\n")), "4", says=("all-gather",)),
        "the block never passed on": Wrong(ex8("collective_matmul", (
            "        passing = lax.ppermute(passing, \"model\", perm=[(i, (i + 1) % n) for i in range(n)])\n", "")),
            "4", says=("not each once",)),
        "passed the other way round the ring": Wrong(ex8("collective_matmul", ("(i, (i + 1) % n)", "(i, (i - 1) % n)")),
                                                     "4", says=("wrong order",)),
        "jax.jit and out_shardings instead of a ring": Wrong(ex8("collective_matmul", (
            '    x = jax.device_put(x, NamedSharding(mesh, P("model", None)))\n'
            '    w = jax.device_put(w, NamedSharding(mesh, P(None, "model")))\n'
            '    return jax.shard_map(_per_device, mesh=mesh, in_specs=(P("model", None), P(None, "model")),\n'
            '                         out_specs=P(None, "model"))(x, w)',
            '    return jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P(None, "model")))(x, w)')), "4",
            says=("its program has no jax.shard_map that its answer depends on",), never=LOCAL_FIX),
    },
    ("exercise8", "tensor_parallel"): {
        "pmean where psum belongs": Wrong(ex8("tensor_parallel", ('lax.psum(jax.nn.relu(x @ w1) @ w2, "model")',
                                                                  'lax.pmean(jax.nn.relu(x @ w1) @ w2, "model")')),
                                          "2", says=("1/2 of the answer", "devices along 'model'"), never=("all_gather",)),
        "psum over 'data'": Wrong(ex8("tensor_parallel", ('lax.psum(jax.nn.relu(x @ w1) @ w2, "model")',
                                                          'lax.psum(jax.nn.relu(x @ w1) @ w2, "data")')), "4",
                                  says=("lax.psum runs over 'data'; the reference's runs over 'model'",)),
        "w1 split by rows": Wrong(ex8("tensor_parallel", ('SPECS = (P("data", None), P(None, "model"), P("model", None))',
                                                          'SPECS = (P("data", None), P("model", None), P("model", None))')),
                                  "4", says=("w1 is column-parallel",)),
        "h gathered": Wrong(ex8("tensor_parallel", (
            'return lax.psum(jax.nn.relu(x @ w1) @ w2, "model")',
            'h = lax.all_gather(jax.nn.relu(x @ w1), "model", axis=1, tiled=True)\n'
            '    return h @ lax.all_gather(w2, "model", axis=0, tiled=True)')), "4", says=("lax.all_gather over 'model' twice, the reference's never",)),
        "relu after the sum": Wrong(ex8("tensor_parallel", ('lax.psum(jax.nn.relu(x @ w1) @ w2, "model")',
                                                            'jax.nn.relu(lax.psum((x @ w1) @ w2, "model"))')), "2",
                                    says=("relu",)),
    },
    ("exercise8", "fsdp"): {
        "gradient not divided by n": Wrong(ex8("fsdp", ("return w_shard - lr * grad / n,", "return w_shard - lr * grad,")),
                                           "2", says=("2 times the full-batch step",)),
        "loss summed over devices": Wrong(ex8("fsdp", ('lax.pmean(loss, "data")', 'lax.psum(loss, "data")')), "2",
                                          says=("all-reduce over 'data' adds up (lax.psum); the reference's averages",)),
        "w left whole on every device": Wrong(ex8("fsdp", ("out_specs=(P(\"data\", None), P()))",
                                                           "out_specs=(P(), P()))")), "4", says=("out_specs[0] P()",)),
        "y declared whole in in_specs": Wrong(ex8("fsdp", ('in_specs=P("data", None),',
                                                           'in_specs=(P("data", None), P("data", None), P()),')), "2",
                                              says=("in_specs entry for its input 2", "is P() (whole on every device)",
                                                    "the reference's is P('data')"),
                                              never=("jax.device_put(x, NamedSharding(mesh, P(None, None)))",)),
        "gradient averaged twice": Wrong(ex8("fsdp", ("return w_shard - lr * grad / n,",
                                                      "return w_shard - lr * grad / n / n,")), "2",
                                         says=("1/2 of the change",), never=("divide it by n",)),
    },
    ("exercise8", "two_d"): {
        "gradients not divided by n": Wrong(ex8("two_d", ("return w1 - lr * g1 / n, w2 - lr * g2 / n,",
                                                          "return w1 - lr * g1, w2 - lr * g2,")), "4",
                                            says=("2 times the change",)),
        "partial sums added over 'data'": Wrong(ex8("two_d", (
            'prediction = lax.psum(jax.nn.relu(x @ w1_rows) @ w2_cols, "model")',
            'prediction = lax.psum(jax.nn.relu(x @ w1_rows) @ w2_cols, "data")')), "4", says=("lax.psum runs over 'data'; the reference's runs over 'model'",)),
        "loss summed over devices": Wrong(ex8("two_d", ('lax.pmean(loss, "data")', 'lax.psum(loss, "data")')), "4",
                                          says=("2 times",)),
        "w1 gathered over 'model'": Wrong(ex8("two_d", ('w1_rows = lax.all_gather(w1, "data", axis=0, tiled=True)',
                                                        'w1_rows = lax.all_gather(w1, "model", axis=0, tiled=True)')),
                                          "4", says=("over 'data'",)),
    },
}

CATALOGUES = {key: Catalogue(task=key[1], exercise=key[0], wrong=wrong) for key, wrong in ENTRIES.items()}
NAMES = [(key, name) for key, wrong in ENTRIES.items() for name in wrong]


def _messages(graded: dict) -> list[str]:
    return [graded["reason"], *graded.get("other_failures", ()),
            *(c["message"] for c in graded["cases"] if c["outcome"] != "passed")]


def _verdict(key, name) -> tuple[bool, bool, str]:
    """(named, wrong advice, the task's reason) of one entry, from its grading."""
    catalogue, entry = CATALOGUES[key], ENTRIES[key][name]
    graded = next(t for t in catalogue.report(name)["tasks"] if t["id"] == key[1])
    shown = " ".join([graded["reason"], *graded.get("other_failures", ())])
    named = all(word in shown for word in entry.says)
    wrong_advice = any(word in message for word in (*entry.never, *RAW) for message in _messages(graded))
    return named, wrong_advice, graded["reason"]


@pytest.mark.parametrize("key, name", NAMES, ids=[f"{k[1]}: {n}" for k, n in NAMES])
def test_a_mistake_from_the_statements_loses_points_and_gets_no_wrong_advice(key, name):
    graded = next(t for t in CATALOGUES[key].report(name)["tasks"] if t["id"] == key[1])
    assert graded["score"] < graded["max_score"], f"{key[1]} kept full points"
    for word in (*ENTRIES[key][name].never, *RAW):
        wrong = [m for m in _messages(graded) if word in m]
        assert not wrong, f"{key[1]}'s messages give advice wrong for this mistake ({word!r}): {wrong[0]}"


def test_the_catalogue_covers_every_task_and_most_of_its_mistakes_are_named():
    from conftest import ROOT
    from grader.course import load_course
    tasks = {(e.name, t.id) for e in load_course(str(ROOT / "course.yaml")).exercises.values() for t in e.tasks}
    assert tasks <= set(ENTRIES), f"tasks without an entry: {sorted(tasks - set(ENTRIES))}"
    verdicts = {(key, name): _verdict(key, name) for key, name in NAMES}
    named = sum(v[0] for v in verdicts.values())
    advice = sum(v[1] for v in verdicts.values())
    print(f"\nissue 30 catalogue: {len(NAMES)} wrong submissions, {named} named ({100 * named / len(NAMES):.0f} %), "
          f"{advice} with wrong advice")
    for (key, name), (ok, _, reason) in verdicts.items():
        if not ok:
            print(f"  not named: {key[1]}: {name}: {reason[:300]}")
    assert len(NAMES) >= 80
    assert advice == 0
    assert named >= 0.9 * len(NAMES), f"{named} of {len(NAMES)} named"
