"""Write the real JAX errors that tests/grader/suite/test_jax_errors.py reads: one per rule of grader.suite.jax_errors.

Run it again after a JAX upgrade (``python tests/grader/suite/data/make_jax_errors.py``) and rerun the
tests: each entry is a mistake students make, on 4 emulated CPU devices, with the exception's type,
its full text, and the line of this file that raised (what the worker reports as the student's line).
"""

import json
import os
import traceback

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

DEVICES = 4
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_errors.json")


def ring_written_for_4_on_2_devices():
    shift = jax.pmap(lambda b: lax.ppermute(b, "r", perm=[(i, (i + 1) % 4) for i in range(4)]), axis_name="r")
    return shift(np.ones((2, 3), np.float32))


def ring_that_sends_everything_to_device_0():
    gather = jax.pmap(lambda b: lax.ppermute(b, "r", perm=[(i, 0) for i in range(4)]), axis_name="r")
    return gather(np.ones((4, 3), np.float32))


def _mesh_operands():
    mesh = jax.make_mesh((2, 2), ("data", "model"))
    x = jax.device_put(np.ones((4, 4), np.float32), NamedSharding(mesh, P("data", "model")))
    w = jax.device_put(np.ones((4, 3), np.float32), NamedSharding(mesh, P("model", None)))
    return mesh, x, w


def psum_over_the_wrong_mesh_axis():
    mesh, x, w = _mesh_operands()
    matmul = jax.shard_map(lambda a, b: lax.psum(a @ b, "data"), mesh=mesh,
                           in_specs=(P("data", "model"), P("model", None)), out_specs=P("data", None))
    return matmul(x, w)


def w_not_placed_on_the_mesh():
    mesh, x, _ = _mesh_operands()
    matmul = jax.shard_map(lambda a, b: lax.psum(a @ b, "model"), mesh=mesh,
                           in_specs=(P("data", "model"), P("model", None)), out_specs=P("data", None))
    return matmul(x, np.ones((4, 3), np.float32))


def rows_that_do_not_split_over_the_mesh():
    mesh, _, _ = _mesh_operands()
    return jax.device_put(np.ones((3, 4), np.float32), NamedSharding(mesh, P("data", "model")))


def np_sqrt_inside_pmap():
    return jax.pmap(lambda r: r / np.sqrt(jnp.mean(r)))(np.ones((4, 3), np.float32))


def float_inside_pmap():
    return jax.pmap(lambda r: float(jnp.sum(r)))(np.ones((4, 3), np.float32))


def if_on_a_traced_value():
    return jax.jit(lambda r: r if r.sum() > 0 else -r)(np.ones((4, 3), np.float32))


def reshape_without_padding():
    return jnp.ones(37).reshape(4, -1)


def leading_axis_one_too_many():
    return jax.pmap(lambda r: r)(np.ones((5, 3), np.float32))


def leading_axis_twice_the_devices():
    return jax.pmap(lambda r: r)(np.ones((8, 3), np.float32))


def lr_mapped_by_pmap():
    return jax.pmap(lambda p, lr: p * lr)(np.ones((4, 3), np.float32), 0.1)


def lr_mapped_by_a_pmap_with_an_axis_name():
    return jax.pmap(lambda p, lr: p * lr, axis_name="batch")(np.ones((4, 3), np.float32), 0.1)


def lr_mapped_by_a_pmap_inside_jit():
    step = jax.pmap(lambda p, lr: p * lr, axis_name="batch")
    return jax.jit(lambda p: step(p, np.float32(0.1)))(np.ones((4, 3), np.float32))


def params_at_x():
    return jnp.ones(3) @ jnp.ones((5, 3))


def psum_scatter_that_does_not_divide():
    return jax.pmap(lambda r: lax.psum_scatter(r, "i", tiled=True), axis_name="i")(np.ones((4, 3), np.float32))


def psum_over_an_unbound_axis_name():
    return jax.pmap(lambda r: lax.psum(r, "batch"), axis_name="i")(np.ones((4, 3), np.float32))


def mesh_larger_than_the_machine():
    return jax.make_mesh((2, 4), ("data", "model"))


def batch_marked_static_where_lr_was_meant():
    step = jax.pmap(lambda p, b, lr: p - lr * b[0], axis_name="i", static_broadcasted_argnums=(1,))
    return step(np.ones((4, 3)), (np.ones((4, 3)), np.ones(4)), 0.1)


def device_mesh_of_a_fixed_shape():
    from jax.experimental import mesh_utils
    return mesh_utils.create_device_mesh((2, 1))


def ring_over_every_device_on_a_mesh_axis():
    mesh, x, _ = _mesh_operands()
    n = jax.device_count()  # 4, where the ring is the 2 devices along 'model'
    shift = jax.shard_map(lambda b: lax.ppermute(b, "model", [(i, (i + 1) % n) for i in range(n)]), mesh=mesh,
                          in_specs=P("data", "model"), out_specs=P("data", "model"))
    return shift(x)


def spec_without_a_mesh_as_out_shardings():
    return jax.jit(jnp.matmul, out_shardings=P("data", "model"))(np.ones((4, 4), np.float32), np.ones((4, 3), np.float32))


def spec_without_a_mesh_to_device_put():
    return jax.device_put(np.ones((4, 4), np.float32), P("data"))


def explicit_matmul_without_out_sharding():
    _, x, w = _mesh_operands()
    return jax.jit(jnp.matmul)(x, w)


def matmul_of_rows_and_columns_split_over_one_axis():
    mesh = jax.make_mesh((2, 2), ("data", "model"))
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P(("data", "model"), None)))
    w = jax.device_put(np.ones((4, 6), np.float32), NamedSharding(mesh, P(None, "model")))
    return jax.jit(lambda a, b: a @ b, out_shardings=NamedSharding(mesh, P(("data", "model"), None)))(x, w)


def out_shardings_that_do_not_divide():
    mesh = jax.make_mesh((1, 4), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    x, w = np.ones((3, 4), np.float32), np.ones((4, 8), np.float32)
    return jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P("model", "data")))(x, w)


def loop_carry_of_zeros_set_per_device():
    mesh, x, _ = _mesh_operands()

    def gather(block):
        me = lax.axis_index("model")
        step = lambda s, acc: acc.at[(me - s) % 2].set(block)  # noqa: E731
        return lax.fori_loop(0, 2, step, jnp.zeros((2, *block.shape))).reshape(-1, block.shape[1])

    return jax.shard_map(gather, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data", "model"))(x)


def indexing_an_explicit_array():
    _, x, _ = _mesh_operands()
    return x[0]


def axis_not_in_the_mesh():
    mesh, _, _ = _mesh_operands()
    return jax.device_put(np.ones((4, 4), np.float32), NamedSharding(mesh, P("batch", None)))


def one_axis_for_two_dimensions():
    mesh, _, _ = _mesh_operands()
    return jax.device_put(np.ones((4, 4), np.float32), NamedSharding(mesh, P("model", "model")))


def spec_longer_than_the_array():
    mesh, _, _ = _mesh_operands()
    return jax.device_put(np.ones((4, 4), np.float32), NamedSharding(mesh, P("data", "model", None)))


def gradient_of_a_vector():
    return jax.grad(lambda w: (jnp.ones((3, 2)) @ w - 1.0) ** 2)(jnp.ones(2))


def matmul_of_two_sharded_arrays_outside_shard_map():
    _, x, w = _mesh_operands()
    return x @ w


def add_of_arrays_sharded_differently():
    mesh, x, _ = _mesh_operands()
    return x + jax.device_put(np.ones((4, 4), np.float32), NamedSharding(mesh, P("model", "data")))


def in_specs_naming_an_axis_the_mesh_lacks():
    mesh, x, w = _mesh_operands()
    return jax.shard_map(lambda a, b: lax.psum(a @ b, "model"), mesh=mesh,
                         in_specs=(P("rows", "model"), P("model", None)), out_specs=P("rows", None))(x, w)


def out_specs_longer_than_the_result():
    mesh, x, w = _mesh_operands()
    return jax.shard_map(lambda a, b: lax.psum(a @ b, "model"), mesh=mesh,
                         in_specs=(P("data", "model"), P("model", None)), out_specs=P("data", None, None))(x, w)


def one_spec_for_two_arguments():
    mesh, x, w = _mesh_operands()
    return jax.shard_map(lambda a, b: lax.psum(a @ b, "model"), mesh=mesh, in_specs=P("data", "model"),
                         out_specs=P("data", None))(x, w)


def range_over_the_device_index():
    def rotate(block):
        for _ in range(lax.axis_index("i")):
            block = jnp.roll(block, 1)
        return block
    return jax.pmap(rotate, axis_name="i")(np.ones((4, 3), np.float32))


def slice_up_to_the_device_index():
    return jax.pmap(lambda block: block[:lax.axis_index("i")], axis_name="i")(np.ones((4, 3), np.float32))


def int_blocks_added_up_in_a_float_carry():
    def ring_sum(block):
        return lax.fori_loop(0, 3, lambda i, total: total + jnp.zeros(block.shape), block)
    return jax.pmap(ring_sum, axis_name="i")(np.ones((4, 3), np.int32))


def padding_to_a_shorter_length():
    return jnp.pad(jnp.ones(7), (0, 3 * (7 // 4) - 7))


def _auto_mesh():
    return jax.make_mesh((2, 2), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def all_gather_over_a_dimension_the_block_lacks():
    mesh = _auto_mesh()
    return jax.shard_map(lambda b: lax.all_gather(b, "model", axis=3, tiled=True), mesh=mesh,
                         in_specs=P("data", "model"), out_specs=P("data", None))(np.ones((4, 4), np.float32))


def psum_scatter_over_a_dimension_the_block_lacks():
    mesh = _auto_mesh()
    return jax.shard_map(lambda b: lax.psum_scatter(b, "model", scatter_dimension=2, tiled=True), mesh=mesh,
                         in_specs=P("data", None), out_specs=P("data", "model"))(np.ones((4, 4), np.float32))


def pmap_in_axes_over_columns():
    return jax.pmap(lambda a, b: a + b, in_axes=(0, 1))(np.ones((4, 3), np.float32), np.ones((4, 3), np.float32))


def psum_over_an_axis_the_mesh_lacks():
    mesh = _auto_mesh()
    return jax.shard_map(lambda b: lax.psum(b, "i"), mesh=mesh, in_specs=P("data"), out_specs=P())(np.ones((4, 4)))


def psum_scatter_without_tiled():
    mesh = _auto_mesh()
    return jax.shard_map(lambda b: lax.psum_scatter(b, "model", scatter_dimension=1), mesh=mesh,
                         in_specs=P("data", None), out_specs=P("data", "model"))(np.ones((4, 6), np.float32))


def out_spec_of_a_tuple_replicated():
    mesh = _auto_mesh()
    return jax.shard_map(lambda b: (b, 2 * b), mesh=mesh, in_specs=P("data"), out_specs=(P(), P()))(np.ones((4, 4)))


def global_shape_of_the_local_rows():
    mesh = _auto_mesh()
    sharding = NamedSharding(mesh, P("data"))
    return jax.make_array_from_process_local_data(sharding, np.ones((4, 4)), global_shape=(2, 4))


def set_mesh_inside_the_function():
    mesh = _auto_mesh()

    def step(x):
        with jax.set_mesh(mesh):
            return jax.device_put(x, NamedSharding(mesh, P("data")))
    return jax.jit(step)(np.ones((4, 4)))


MISTAKES = [ring_written_for_4_on_2_devices, ring_that_sends_everything_to_device_0, psum_over_the_wrong_mesh_axis,
            w_not_placed_on_the_mesh, rows_that_do_not_split_over_the_mesh, np_sqrt_inside_pmap, float_inside_pmap,
            if_on_a_traced_value, reshape_without_padding, leading_axis_one_too_many, leading_axis_twice_the_devices,
            lr_mapped_by_pmap, lr_mapped_by_a_pmap_with_an_axis_name, lr_mapped_by_a_pmap_inside_jit, params_at_x,
            psum_scatter_that_does_not_divide, psum_over_an_unbound_axis_name, mesh_larger_than_the_machine,
            device_mesh_of_a_fixed_shape, batch_marked_static_where_lr_was_meant,
            matmul_of_two_sharded_arrays_outside_shard_map, add_of_arrays_sharded_differently,
            in_specs_naming_an_axis_the_mesh_lacks, out_specs_longer_than_the_result, one_spec_for_two_arguments,
            range_over_the_device_index, slice_up_to_the_device_index, int_blocks_added_up_in_a_float_carry,
            padding_to_a_shorter_length, ring_over_every_device_on_a_mesh_axis, spec_without_a_mesh_as_out_shardings,
            spec_without_a_mesh_to_device_put, explicit_matmul_without_out_sharding,
            matmul_of_rows_and_columns_split_over_one_axis, out_shardings_that_do_not_divide,
            loop_carry_of_zeros_set_per_device, indexing_an_explicit_array, axis_not_in_the_mesh,
            one_axis_for_two_dimensions, spec_longer_than_the_array, gradient_of_a_vector,
            all_gather_over_a_dimension_the_block_lacks, psum_scatter_over_a_dimension_the_block_lacks,
            pmap_in_axes_over_columns, psum_over_an_axis_the_mesh_lacks, global_shape_of_the_local_rows,
            psum_scatter_without_tiled, out_spec_of_a_tuple_replicated, set_mesh_inside_the_function]


def _line_here(exc: BaseException) -> str:
    """The deepest line of this file in the traceback: what the worker reports as the student's line."""
    here = os.path.abspath(__file__)
    lines = [frame.line for frame in traceback.extract_tb(exc.__traceback__) if os.path.abspath(frame.filename) == here]
    return lines[-1].strip() if lines else ""


def main():
    jax.config.update("jax_num_cpu_devices", DEVICES)
    samples = {}
    for mistake in MISTAKES:
        try:
            mistake()
        except Exception as exc:  # noqa: BLE001 - every one of them is meant to raise
            samples[mistake.__name__] = {"exc_type": type(exc).__name__, "text": str(exc), "line": _line_here(exc)}
        else:
            raise SystemExit(f"{mistake.__name__} raised nothing on JAX {jax.__version__}")
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"jax": jax.__version__, "devices": DEVICES, "errors": samples}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
