"""What program mode's extra run costs: each program run once more, on inputs the grader drew.

Every ``student.program`` case runs its compiled program on the test's inputs and on one more set
(grader.grading.program_mode.FRESH_SETS). This script measures that second run for each program
exercise 7's suites compile, at the suites' shapes, with the clean worker's own code: for each device
count a process exports the reference solution's program from shapes and dtypes and runs it with
``run_program`` on one set and on 1 + K sets (the same compile; the difference of the medians over K
is one extra run: the inputs fitted, the call, waiting for the result; K stays small, since hundreds
of queued collective programs stall emulated devices), and times the extra set's trip through the
protocol both ways. It adds these up over the exercise's program cases and sets the sum against the floor of
``grade exercise7 --submission solutions`` (its report's ``timing.worker_s``), graded in the same run.

    python bench/extra_run.py [--repeat 5] [--sets 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from measure import ROOT, grade_report

DEVICES = tuple(int(n) for n in os.environ.get("BENCH_DEVICES", "1,2,4,8").split(","))
CHILD = "--child"


def programs(n: int):
    """(name, program cases at n devices, target, args, fixed) for each program exercise 7's suites compile at n
    devices: each structural test's own inputs, then every configuration of its value tests it reads too, from the
    suites' own constants (tests/exercise7), and the mesh value test's program."""
    import numpy as np

    sys.path.insert(0, str(ROOT / "tests" / "exercise7"))
    import test_basics as basics
    import test_collectives as collectives
    import test_dot as dot
    import test_ring as ring
    import test_ring_optimal as optimal
    import test_train as train
    from test_mesh import wide

    rng = np.random.default_rng(0)

    def drawn(shape, dtype=np.float32):
        values = rng.normal(size=shape) if np.dtype(dtype).kind == "f" else rng.integers(-9, 10, size=shape)
        return values.astype(dtype)

    rows, cols = wide(n)
    yield "sharded_matmul", (n in (1, 2, 4)) + (n >= 2), "probes_mesh.sharded_matmul", (
        drawn((3 * rows, 4 * cols)), drawn((4 * cols, 5))), {"n_rows": rows, "n_cols": cols}
    if n < 2:  # the structural tests run from 2 devices on
        return
    visible = n in (1, 2, 4)
    for length, dtype in ((dot.MEASURED, np.float32), *(dot.VISIBLE if visible else ()), *dot.OTHERS):
        yield f"dot {length} {np.dtype(dtype)}", 1, "dot.distributed_dot", (drawn(length, dtype),) * 2, {}
    shifts = [(n, (2, 3), 1), *((n, ring.SHIFTED, s) for s in (*(ring.VISIBLE_SHIFTS if visible else ()),
                                                                  *ring.OTHER_SHIFTS)),
              *(((n - 1, ring.SHIFTED, 1),) if n in ring.SOME_COUNTS else ())]
    for length, block, shift in shifts:
        if shift % length:
            yield f"ring_shift {length}x{block} {shift}", 1, "probes_ring.ring_shift", (drawn((length, *block)),), {
                "shift": shift}
    sums = [*((((n, 6), np.float32),) if n > 2 else ()), *((((n, *ring.SUMMED), np.float32),) if visible else ()),
            ((n, *ring.OTHER_SUMMED[0]), ring.OTHER_SUMMED[1]),
            *((((n - 1, *ring.SOME_SUMMED), np.float32),) if n in ring.SOME_COUNTS else ())]
    for shape, dtype in sums:
        yield f"ring_allreduce {shape}", 1, "probes_ring.ring_allreduce", (drawn(shape, dtype),), {}
    if n >= 4:
        blocks = [*(((n, size), np.float32) for size in optimal.LENGTHS),
                  *((((n, *optimal.VISIBLE), np.float32),) if n in optimal.VISIBLE_COUNTS else ()),
                  ((n, *optimal.OTHER), np.int32)]
        for shape, dtype in blocks:
            yield f"ring_allreduce_optimal {shape}", 1, "probes_ring.ring_allreduce_optimal", (drawn(shape, dtype),), {}
    for name, (seen, others) in collectives.WIDTHS.items():
        for width in (collectives.MEASURED, *((seen,) if visible else ()), *others):
            yield f"{name} {width}", 1, f"collectives.{name}", (drawn((n, width)),), {}
    for lr in (train.MEASURED, *((train.VISIBLE_LR,) if visible else ()), train.OTHER_LR):
        yield f"train_step {lr}", 1, "probes_train.train_step", (drawn((n, 3)), (drawn((n, 5, 3)), drawn((n, 5)))), {
            "lr": lr}
    for name, shapes in basics.MEASURED.items():
        seen, others = basics.SHAPES[name]
        for dtype, each in ((np.float32, shapes), *(((np.float32, seen),) if visible else ()), (np.int32, others)):
            yield (f"{name} {each}", 1, f"basics.{name}", tuple(drawn((n, *shape), dtype) for shape in each), {})


def child(n: int, repeat: int, sets: int) -> None:
    """At n devices: the extra run of each program, in ms (from the medians of ``repeat`` measurements)."""
    import jax

    jax.config.update("jax_num_cpu_devices", n)
    sys.path[:0] = [str(ROOT)]
    from grader import protocol
    from grader.sandbox import worker
    from grader.sandbox.program_export import export_program
    from grader.sandbox.program_runner import run_program
    from grader.sandbox.student_code import use_submission

    worker._probes_folder = str(ROOT / "tests" / "exercise7")
    use_submission(str(ROOT / "solutions" / "exercise7"))
    out = {}
    for name, cases, target, args, fixed in programs(n):
        specs = jax.tree.map(lambda a: protocol.ArraySpec(a.shape, str(a.dtype)), args)
        blob = export_program(worker._program_function(target, specs, fixed), specs, name)
        value = run_program(blob, [args], name)["values"][0]  # and XLA set up for this program's shapes
        took = {count: [] for count in (0, sets)}
        for _ in range(repeat):
            for count in took:  # the same compile either way: the difference is `sets` runs
                began = time.perf_counter()
                run_program(blob, [args] * (1 + count), name)
                took[count].append(time.perf_counter() - began)
        extra = (statistics.median(took[sets]) - statistics.median(took[0])) / sets
        began = time.perf_counter()
        for _ in range(sets):  # the extra set to the clean worker, and its values back
            for sent in (args, value):
                protocol.decode(*protocol.encode(sent))
        out[name] = {"cases": cases, "run_ms": 1000 * extra, "transfer_ms": 1000 * (time.perf_counter() - began) / sets}
    print(json.dumps(out))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--sets", type=int, default=30, help="K: extra input sets per measurement")
    p.add_argument(CHILD, type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(a.child, a.repeat, a.sets)
        return
    total, rows = 0.0, []
    for n in DEVICES:
        proc = subprocess.run([sys.executable, __file__, CHILD, str(n), "--repeat", str(a.repeat), "--sets",
                               str(a.sets)], capture_output=True, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        if proc.returncode != 0:
            raise SystemExit(f"measuring at {n} devices failed:\n{proc.stderr}")
        for name, m in json.loads(proc.stdout.splitlines()[-1]).items():
            cost = m["cases"] * (m["run_ms"] + m["transfer_ms"])
            total += cost
            rows.append(f"{n} devices  {name:28s} {m['cases']} x ({m['run_ms']:.2f} + {m['transfer_ms']:.2f}) ms")
    print("\n".join(rows))
    _, report = grade_report(ROOT / "solutions", [], 1234)
    floor_ms = 1000 * report["timing"]["worker_s"]
    print(f"extra runs of the exercise: {total:.0f} ms; floor {floor_ms:.0f} ms; {100 * total / floor_ms:.2f} % of the "
          f"floor (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
