"""What a clean worker refuses to compile (host callbacks, custom calls off the allowlist, host
transfers, unknown dialects) and that what correct solutions produce passes; what it reads of a
program itself (a per-device computation); and how it names every operation before compiling."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from grader.sandbox.program_check import CUSTOM_CALLS, holds_manual_computation, refusal
from grader.sandbox.program_labels import label

CALL = "stablehlo.custom_call"


def test_plain_stablehlo_and_the_partitioners_annotations_pass():
    ops = [("builtin.module", None), ("func.func", None), ("stablehlo.all_reduce", None), ("sdy.mesh", None),
           ("chlo.erf", None)] + [(CALL, target) for target in sorted(CUSTOM_CALLS)]
    assert refusal(ops) is None


@pytest.mark.parametrize("op, says", [
    ((CALL, "xla_ffi_python_cpu_callback"), "calls back into Python on the host"),
    ((CALL, "xla_python_gpu_callback"), "calls back into Python on the host"),
    ((CALL, "lapack_sgetrf_ffi"), "calls the external function 'lapack_sgetrf_ffi'"),
    ((CALL, None), "calls the external function None"),
    (("stablehlo.outfeed", None), "exchanges data with the host (stablehlo.outfeed)"),
    (("stablehlo.recv", None), "exchanges data with the host (stablehlo.recv)"),
    (("mhlo.custom_call", None), "an operation the grader does not run (mhlo.custom_call)"),
])
def test_anything_that_could_run_code_on_the_host_is_refused_by_name(op, says):
    why = refusal([("func.func", None), op, ("stablehlo.add", None)])
    assert why is not None and says in why, why


LOWER = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 2)
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback
sys.path[:0] = [{root!r}, {solutions!r}]
from jaxlib.mlir import ir
from grader.sandbox.program_check import context, holds_manual_computation, module_operations, parse, refusal
from grader.sandbox.program_labels import relabel
import dot

scalar = jax.ShapeDtypeStruct((), jnp.float32)
functions = {{
    "reference dot": dot.distributed_dot,
    "pure_callback": lambda x: jax.pure_callback(lambda a: np.float32(a.sum()), scalar, x),
    "io_callback": lambda x: io_callback(lambda a: np.float32(a.sum()), scalar, x),
    "debug.print": lambda x: (jax.debug.print("{{}}", x), x.sum())[1],
    "linalg": lambda x: jnp.linalg.solve(jnp.eye(3) + jnp.outer(x[:3], x[:3]), x[:3]),
}}
x = np.ones(8, np.float32)
out = {{}}
for name, fn in functions.items():
    args = (x, x) if name == "reference dot" else (x,)
    out[name] = refusal(module_operations(parse(jax.jit(fn).lower(*args).as_text())))
for name, fn in {{"pmap": dot.distributed_dot, "plain": jnp.dot}}.items():
    out["manual " + name] = holds_manual_computation(module_operations(parse(jax.jit(fn).lower(x, x).as_text())))
lying = parse(jax.jit(dot.distributed_dot).lower(x, x).as_text(debug_info=True).replace('"psum', '"squeeze'))
named, found = parse(relabel(lying)[0]), []

def visit(op):
    op = op.operation
    found.append([op.name, str(op.location)])
    found.extend(["argument", str(a.location)] for r in op.regions for b in r.blocks for a in b.arguments)
    return ir.WalkResult.ADVANCE

with context():
    named.operation.walk(visit)
out["named"] = found
print(json.dumps(out))
"""


def test_real_modules_are_read_operation_by_operation():
    script = LOWER.format(root=str(ROOT), solutions=str(ROOT / "solutions" / "exercise7"))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=120, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    verdicts = json.loads(proc.stdout)
    assert (verdicts.pop("manual pmap"), verdicts.pop("manual plain")) == (True, False)
    named = verdicts.pop("named")  # the psum labelled "squeeze": named by what it is, the label kept after it
    assert ["stablehlo.all_reduce", 'loc("stablehlo.all_reduce:squeeze:c0")'] in named  # and its place: collective 0
    assert all(where.startswith(f'loc("{what}:') for what, where in named if what != "argument")
    assert {where for what, where in named if what == "argument"} == {"loc(unknown)"}
    assert verdicts.pop("reference dot") is None
    assert "external function 'lapack_" in verdicts.pop("linalg")
    for name, why in verdicts.items():
        assert why is not None and "calls back into Python on the host" in why, (name, why)


def test_a_shard_map_through_gspmd_is_a_per_device_computation_too():
    assert holds_manual_computation([("func.func", None), (CALL, "SPMDFullToShardShape"), ("stablehlo.add", None)])
    assert not holds_manual_computation([("func.func", None), (CALL, "Sharding"), ("stablehlo.dot_general", None)])


@pytest.mark.parametrize("location, name", [
    ('loc("jit(distributed_dot)/squeeze"(callsite("distributed_dot"("dot.py":17:11 to :47))))', "squeeze"),
    ('loc("psum"("distributed_dot.<locals>.<lambda>"("dot.py":16:34 to :72)))', "psum"),
    ('loc("ppermute[perm=((0, 1),)]")', "ppermute"),
    ('loc("stablehlo.all_reduce:psum")', ""),    # what a student writes to pass for the grader's names
    ('loc("psum/x:y")', ""),
    ('loc(unknown)', ""),
])
def test_a_label_is_the_last_name_of_a_location_in_letters_digits_and_underscores(location, name):
    assert label(location) == name
