"""The clean worker runs a program whose inputs and outputs name no sharding but whose body lays its
values out on a mesh (a jit of a function that jits with out_shardings, or that uses shard_map): the
compiled program's output layouts are read back on the mesh the module declares, not on one axis of
devices, which cannot hold a block of a 2 x 2 mesh."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import ROOT

RUN = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.sandbox.program_export import export_program
from grader.sandbox.program_runner import run_program
from grader.protocol import ArraySpec
from grader.suite import hlo

mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
split = NamedSharding(mesh, P("data", "model"))

def blocks(x, w):
    return jax.jit(jnp.matmul, out_shardings=split)(x, w)

x, w = np.arange(32, dtype=np.float32).reshape(4, 8), np.ones((8, 6), np.float32)
specs = tuple(ArraySpec(a.shape, str(a.dtype)) for a in (x, w))
out = run_program(export_program(blocks, specs, "blocks"), [(x, w)], "blocks")
print(json.dumps({{"right": bool(np.allclose(out["values"][0], x @ w)), "shapes": hlo.output_shapes(out["hlo"])}}))
"""


def test_a_result_split_over_a_mesh_the_inputs_do_not_name_comes_back_whole():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(RUN.format(root=str(ROOT)))], capture_output=True,
                          text=True, timeout=120, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"right": True, "shapes": [[2, 3]]}
