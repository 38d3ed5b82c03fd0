"""The arithmetic a program writes outside its per-device computations, read from the exported program
(grader.sandbox.program_outside): none where the pmap or shard_map does the work, all of it where the per-device
code only combines what was computed around it, whatever calls, loops and partitioner forms lie between."""

from __future__ import annotations

from jax_script import run_json_once

from grader.sandbox import program_outside

RUN = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.sandbox import program_outside
from grader.sandbox.program_check import composites_as_calls, parse

mesh = jax.make_mesh((4,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))


@jax.jit
def product(a, b):
    return a * b


@jax.jit
def shifted(v):
    return v + 1


def inside(x, y):
    return jax.pmap(lambda a, b: lax.psum(jnp.sum(product(a, b)), "i"), axis_name="i")(x.reshape(4, -1),
                                                                                       y.reshape(4, -1))[0]


def outside(x, y):
    partial = jnp.sum(product(x, y).reshape(4, -1), axis=1)
    return jax.pmap(lambda p: lax.psum(p, "i"), axis_name="i")(partial)[0]


def outside_in_a_loop(x, y):
    return inside(lax.fori_loop(0, 3, lambda _, v: v * y, x), y)


def outside_in_a_loop_of_unknown_length(x, y):
    return inside(lax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * y, x), y)


def outside_in_a_branch(x, y):
    return inside(lax.cond(x[0] > 0, lambda: x * y, lambda: x), y)


def indices_in_a_function(x, y):
    return inside(jnp.take(x, jnp.minimum(shifted(jnp.arange(40)), 39)), y)  # take's bounds: a function of its own


def the_same_function_on_data(x, y):
    return inside(jnp.take(shifted(x), jnp.minimum(shifted(jnp.arange(40)), 39)), y)


def inside_a_composite(x, y):
    return jax.lax.composite(inside, name="course.dot")(x, y)  # its body a function of the module's


def shard_map_inside(x, y):
    return jax.shard_map(lambda a, b: lax.psum(jnp.dot(a, b), "i"), mesh=mesh, in_specs=(P("i"), P("i")),
                         out_specs=P())(x, y)


def figure(fn):
    shape = jax.ShapeDtypeStruct((40,), jnp.float32)
    module = parse(jax.export.export(jax.jit(fn))(shape, shape).mlir_module())
    composites_as_calls(module)  # as the clean worker reads every program
    return program_outside.work(module, 4)


found = {{fn.__name__: figure(fn) for fn in (inside, outside, outside_in_a_loop, outside_in_a_loop_of_unknown_length,
                                             outside_in_a_branch, indices_in_a_function,
                                             the_same_function_on_data, inside_a_composite, shard_map_inside)}}
jax.config.update("jax_use_shardy_partitioner", False)
found["gspmd_inside"] = figure(shard_map_inside)
print(json.dumps(found))
"""



def test_work_inside_the_per_device_code_is_not_outside_and_work_around_it_is():
    found = run_json_once(RUN)
    # (outside, spread over the 4 devices; inside, one device's): 10 products and 10 elements summed per device
    assert found["inside"] == [0, 10 + 10]  # the same jitted product, called from inside the pmap
    assert found["inside_a_composite"] == found["inside"]  # a jax.lax.composite read as the call of its body
    assert found["shard_map_inside"] == found["gspmd_inside"] == [0, 10 + 10]  # both partitioners' shard_maps
    assert found["outside"] == [(40 + 40) // 4, 0]  # written around the pmap, which only adds up


def test_a_loop_outside_counts_every_iteration_a_branch_counts_and_an_unknown_length_is_not_guessed():
    found = run_json_once(RUN)
    assert 3 * 40 // 4 <= found["outside_in_a_loop"][0] < 4 * 40 // 4  # three products of 40 (and the counter)
    assert found["outside_in_a_branch"][0] >= 40 // 4
    assert found["outside_in_a_loop_of_unknown_length"] == [None, 10 + 10]


def test_arithmetic_on_indices_alone_is_no_work_through_calls_and_the_same_function_on_data_is():
    found = run_json_once(RUN)
    assert found["indices_in_a_function"] == [0, 10 + 10]  # iotas shifted and clamped, in called functions
    assert found["the_same_function_on_data"] == [40 // 4, 10 + 10]  # shifted(x): x's 40 elements, once


MAPPED = """
module @m {
  func.func public @main(%x: tensor<6x5xf32>, %y: tensor<6x5xf32>) -> tensor<6x5xf32> {
    %0 = "stablehlo.map"(%x, %y) <{dimensions = array<i64: 0, 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %1 = stablehlo.multiply %a, %b : tensor<f32>
      %2 = stablehlo.add %1, %a : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<6x5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
    return %0 : tensor<6x5xf32>
  }
}
"""


def test_a_map_written_outside_counts_its_body_once_per_element():
    from grader.sandbox.program_check import parse

    assert program_outside.work(parse(MAPPED), 2) == (30 * 2 // 2, 0)  # a multiply and an add per element, over 2


COMPLEX = """
module @m {
  func.func public @main(%x: tensor<2x3xcomplex<f32>>, %w: tensor<3x5xcomplex<f32>>) -> tensor<2x5xcomplex<f32>> {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<2x3xcomplex<f32>>, tensor<3x5xcomplex<f32>>) -> tensor<2x5xcomplex<f32>>
    return %0 : tensor<2x5xcomplex<f32>>
  }
}
"""


def test_a_complex_product_written_outside_counts_four_real_ones():
    from grader.sandbox.program_check import parse

    assert program_outside.work(parse(COMPLEX), 2) == (4 * 2 * 2 * 3 * 5 // 2, 0)  # as grader.suite.hlo counts it
