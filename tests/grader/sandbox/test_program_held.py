"""How much of each input one device's pmap or shard_map receives, read from the exported program
(grader.sandbox.program_held): a block where the inputs are split, the whole input where every device
is handed it and slices its part inside, whatever calls and loops lie between."""

from __future__ import annotations

from jax_script import run_json, run_json_once

RUN = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.sandbox import program_held
from grader.sandbox.program_check import parse


def blocks(x, y):
    return jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), "i"), axis_name="i")(x.reshape(4, -1), y.reshape(4, -1))[0]


def whole_then_sliced(x, y):
    def part(_, a, b):
        start = lax.axis_index("i") * 10
        return lax.psum(jnp.dot(lax.dynamic_slice_in_dim(a, start, 10), lax.dynamic_slice_in_dim(b, start, 10)), "i")
    return jax.pmap(part, axis_name="i", in_axes=(0, None, None))(jnp.zeros(4), x, y)[0]


mesh = jax.make_mesh((4,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))


def y_whole_in_a_jit_in_a_loop(x, y):
    inner = jax.jit(jax.shard_map(lambda a, b: a * b[:10], mesh=mesh, in_specs=(P("i"), P()), out_specs=P("i")))
    return lax.fori_loop(0, 2, lambda _, v: inner(v, y), x)


def no_per_device_function(x, y):
    return jnp.dot(x, y)


def part(_, a, b):
    start = lax.axis_index("i") * 10
    return lax.psum(jnp.dot(lax.dynamic_slice_in_dim(a, start, 10), lax.dynamic_slice_in_dim(b, start, 10)), "i")


whole = jax.pmap(part, axis_name="i", in_axes=(0, None, None))


def mixed_whole(x, y):
    return whole(jnp.zeros(4), jnp.where(x != x, y, x), y + 0 * x)[0]


def stacked_then_taken_apart_whole(x, y):
    both = jnp.stack([x, y])
    return whole(jnp.zeros(4), both[0], both[1])[0]


def stacked_blocks(x, y):
    both = jnp.stack([x, y], axis=1).reshape(4, -1, 2)
    return jax.pmap(lambda v: lax.psum(jnp.dot(v[:, 0], v[:, 1]), "i"), axis_name="i")(both)[0]


def scaled_blocks(x, y):
    return blocks(x * y[0], y)


def in_pieces(x, y):
    def part(_, *pieces):
        me = lax.axis_index("i")
        return lax.psum(jnp.dot(jnp.stack(pieces[:4])[me], jnp.stack(pieces[4:])[me]), "i")
    xs, ys = x.reshape(4, -1), y.reshape(4, -1)
    return jax.pmap(part, axis_name="i", in_axes=(0,) + (None,) * 8)(jnp.zeros(4), *xs, *ys)[0]


def laundered_through_a_branch(x, y):
    x, y = lax.cond(lax.iota(jnp.int32, 2)[1] > 0, lambda: (x, y), lambda: (y, x))
    return whole(jnp.zeros(4), x, y)[0]


def each_block_to_every_device_in_pmaps_of_its_own(x, y):
    blocks, n = x.reshape(4, -1), 4
    got = [jax.pmap(lambda p, k=k: jnp.where(lax.axis_index("i") == k, p, 0 * p), axis_name="i")(
        jnp.broadcast_to(blocks[k], (n, 10))) for k in range(n)]
    spread = sum(jnp.where((jnp.arange(n) == k)[:, None], g, 0.0) for k, g in enumerate(got))
    return blocks_of(spread, y.reshape(4, -1))


def the_same_blocks_to_two_pmaps(x, y):
    first = jax.pmap(lambda a: a * 2, axis_name="i")(x.reshape(4, -1))
    return blocks_of(x.reshape(4, -1), y.reshape(4, -1)) + first.sum()


def blocks_of(a, b):
    return jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), "i"), axis_name="i")(a, b)[0]


def _chunks_in_a_loop(x, y, run):
    xs, ys = x.reshape(2, 20), y.reshape(2, 20)
    return lax.fori_loop(0, 2, lambda t, acc: acc + run(xs[t], ys[t]).sum(), 0.0)


def a_block_of_each_chunk_per_run(x, y):
    return _chunks_in_a_loop(x, y, lambda a, b: blocks_of(a.reshape(4, 5), b.reshape(4, 5)))


def each_chunk_whole_per_run(x, y):
    return _chunks_in_a_loop(x, y, lambda a, b: whole(jnp.zeros(4), a, b))


def placed_by_a_jit_program(x, y):
    at = lambda spec: jax.sharding.NamedSharding(mesh, spec)  # noqa: E731
    return jnp.dot(lax.with_sharding_constraint(x, at(P())), lax.with_sharding_constraint(y, at(P("i"))))


def a_layout_the_product_never_reads(x, y):
    at = lambda spec: jax.sharding.NamedSharding(mesh, spec)  # noqa: E731
    split = lax.with_sharding_constraint(x, at(P("i")))  # placed, but the select never picks it
    return jnp.dot(jnp.where(x == x, x, split), lax.with_sharding_constraint(y, at(P("i"))))


def stacked_and_laid_out(x, y):
    both = lax.with_sharding_constraint(jnp.stack([x, y], axis=1), jax.sharding.NamedSharding(mesh, P("i", None)))
    return jax.shard_map(lambda v: lax.psum(jnp.dot(v[:, 0], v[:, 1]), "i"), mesh=mesh, in_specs=P("i", None),
                         out_specs=P())(both)


def narrowed_whole(x, y):
    return whole(jnp.zeros(4), x.astype(jnp.bfloat16), y)[0]


def packed_whole(x, y):
    packed = lax.bitcast_convert_type(x.astype(jnp.int8).reshape(10, 4), jnp.int32)  # four elements to a word
    return jax.pmap(lambda _, p, b: lax.psum(jnp.sum(p) + jnp.dot(b[:10], b[:10]), "i"), axis_name="i",
                    in_axes=(0, None, None))(jnp.zeros(4), packed, y)[0]


def padded_to_eights(x, y):
    pad = lambda v: jnp.pad(v[:37], (0, 4 * 16 - 37)).reshape(4, 16)  # 37 elements: 10 a device, padded to 16
    return blocks_of(pad(x), pad(y))


def shares(fn):
    shape = jax.ShapeDtypeStruct((40,), jnp.float32)
    return program_held.shares(parse(jax.export.export(jax.jit(fn))(shape, shape).mlir_module()))


print(json.dumps({{fn.__name__: shares(fn) for fn in (blocks, whole_then_sliced, y_whole_in_a_jit_in_a_loop,
                                                     no_per_device_function, placed_by_a_jit_program, mixed_whole,
                                                     a_layout_the_product_never_reads,
                                                     each_block_to_every_device_in_pmaps_of_its_own,
                                                     a_block_of_each_chunk_per_run, each_chunk_whole_per_run,
                                                     the_same_blocks_to_two_pmaps,
                                                     stacked_then_taken_apart_whole, stacked_blocks,
                                                     scaled_blocks, stacked_and_laid_out, in_pieces,
                                                     laundered_through_a_branch, narrowed_whole, packed_whole,
                                                     padded_to_eights)}}))
"""



def test_each_input_is_followed_to_what_a_device_receives():
    found = run_json_once(RUN)
    assert found["blocks"] == [["x", 0.25, "received"], ["y", 0.25, "received"]]
    assert found["whole_then_sliced"] == [["x", 1.0, "received"], ["y", 1.0, "received"]]
    assert found["y_whole_in_a_jit_in_a_loop"] == [["x", 0.25, "received"], ["y", 1.0, "received"]]
    assert found["no_per_device_function"] == [["x", None, "arrived"], ["y", None, "arrived"]]
    # reaching no per-device computation, each is held where the program places it: x whole, y in blocks
    assert found["placed_by_a_jit_program"] == [["x", 1.0, "placed"], ["y", 0.25, "placed"]]
    # x laid out in blocks, but the product reads x as it arrived: held as it arrives (program_held.as_arrived)
    assert found["a_layout_the_product_never_reads"] == [["x", 0.25, "arrived"], ["y", 0.25, "placed"]]


def test_inputs_mixed_into_one_value_are_each_received_whole():
    """x mixed with y into x's bytes (arithmetic by 0, a select that never picks y) still carries all of x and
    all of y, and so does each half of their stack taken apart again; stacked and split in blocks they are
    not (laid out by a sharding constraint or not); x's blocks scaled by an element of y add, beside y's own
    block, their part of y: half a block's bytes each (within 1.5 times a block)."""
    found = run_json_once(RUN)
    assert found["mixed_whole"] == [["x", 1.0, "arrived"], ["y", 1.0, "arrived"]]  # y + 0 * x: computed on, whole
    assert found["stacked_then_taken_apart_whole"] == [["x", 1.0, "received"], ["y", 1.0, "received"]]
    assert found["stacked_blocks"] == [["x", 0.25, "received"], ["y", 0.25, "received"]]
    # a layout asked for moves no element
    assert found["stacked_and_laid_out"] == [["x", 0.25, "received"], ["y", 0.25, "received"]]


def test_an_input_handed_over_in_pieces_or_through_a_branch_is_received_whole():
    """Each device handed all the blocks of x and y as separate arguments receives them whole, as it does
    when x and y come out of a lax.cond whose branches close over them (its operand, the predicate, holds none)."""
    found = run_json_once(RUN)
    assert found["in_pieces"] == [["x", 1.0, "received"], ["y", 1.0, "received"]]
    # each block handed whole to every device, a pmap per block: the pieces add up to all of x; the same blocks
    # handed to two pmaps are still one block each (and a pmap's result handed on is no piece of x)
    assert found["each_block_to_every_device_in_pmaps_of_its_own"] == [["x", 1.0, "received"],
                                                                       ["y", 0.25, "received"]]
    assert found["the_same_blocks_to_two_pmaps"] == [["x", 0.25, "received"], ["y", 0.25, "received"]]
    # a pmap in a loop handed a chunk of x each run, sliced from x the loop carries as it is: a piece per run
    assert found["a_block_of_each_chunk_per_run"] == [["x", 0.25, "received"], ["y", 0.25, "received"]]
    assert found["each_chunk_whole_per_run"] == [["x", 1.0, "received"], ["y", 1.0, "received"]]
    assert found["laundered_through_a_branch"] == [["x", 1.0, "received"], ["y", 1.0, "received"]]
    # computed on outside the pmap (x * y[0]): each held as the worker hands it over (program_held.as_arrived)
    assert found["scaled_blocks"] == [["x", 0.25, "arrived"], ["y", 0.375, "arrived"]]


def test_shares_are_counted_in_the_inputs_elements():
    """Round 58: x narrowed (bfloat16) or packed four to a word (a bitcast) is still all of x on every device,
    though it holds a half or a quarter of x's bytes; a block padded with zeros holds its part of x's elements
    whatever the padding: 37 of x's 40 elements spread over 4 devices, 37/160 of x each, as the reference's
    blocks of 10 hold (a pad, like a stack, spreads what it holds evenly over the value)."""
    found = run_json_once(RUN)
    assert found["narrowed_whole"] == [["x", 1.0, "received"], ["y", 1.0, "received"]]
    assert found["packed_whole"][0] == ["x", 1.0, "received"]
    assert [[name, round(share, 6), how] for name, share, how in found["padded_to_eights"]] == [
        ["x", round(37 / 160, 6), "received"], ["y", round(37 / 160, 6), "received"]]


DEEP = """
import json, sys
sys.path[:0] = [{root!r}]
from grader.sandbox import program_held
from grader.sandbox.program_check import parse

calls = "\\n".join(f"func.func private @f{{i}}(%a: tensor<4xf32>) -> tensor<4xf32> {{{{ %r = call @f{{i + 1}}(%a) : "
                  f"(tensor<4xf32>) -> tensor<4xf32>\\n return %r : tensor<4xf32> }}}}" for i in range(3000))
module = ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{ %r = call @f0(%x) : (tensor<4xf32>) -> tensor<4xf32>\\n"
          " return %r : tensor<4xf32> }}\\n" + calls + "\\nfunc.func private @f3000(%a: tensor<4xf32>) -> tensor<4xf32> "
          "{{ return %a : tensor<4xf32> }}")
print(json.dumps({{"shares": program_held.shares(parse(module))}}))
"""


def test_a_program_nested_too_deep_to_follow_counts_as_the_worst():
    assert run_json(DEEP) == {"shares": None}
