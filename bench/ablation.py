"""What measuring the collectives costs: each program's collectives replaced by zeros, the variants run.

Every ``student.program`` case has its clean worker measure which collectives left in the compiled HLO,
and whether its per-device computations, the answer needs (grader.sandbox.program_ablation): variants
of the program (each collective's results replaced), those whose answer is not known without running
them run on the drawn inputs by one probe of the program compiled once (grader.sandbox.program_probe).
This script measures that, for each program exercise 7's suites compile (bench/extra_run.py lists them,
at the suites' shapes) at each device count: a process exports the reference solution's program and
times ``run_program`` with the measurement and with it switched off, alternately, ``--repeat`` times;
the difference of the medians is the measurement. Each row also says how many collectives were measured,
how many variants ran, and how many compiles of a probe (of how many lanes) it took. It adds these up
over the exercise's program cases and sets the sum against the floor of ``grade exercise7 --submission solutions``
(its report's ``timing.worker_s``, which holds the measurement, the median of ``--floors`` gradings: one grading's
varies by a tenth on a shared machine; the floor without it is that minus the sum).

    GRADE_COMPILE_CACHE=off python bench/ablation.py [--repeat 5] [--floors 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from extra_run import DEVICES, programs
from measure import ROOT, grade_report

CHILD = "--child"


def child(n: int, repeat: int) -> None:
    """At n devices: for each program, its collectives measured and the measurement's cost in ms."""
    import jax
    import numpy as np

    jax.config.update("jax_num_cpu_devices", n)
    sys.path[:0] = [str(ROOT)]
    from grader import protocol
    from grader.grading.program_mode import fresh_inputs
    from grader.sandbox import program_ring_steps, program_runner, program_sites, worker
    from grader.sandbox.program_export import export_program
    from grader.sandbox.student_code import use_submission

    worker._probes_folder = str(ROOT / "tests" / "exercise7")
    use_submission(str(ROOT / "solutions" / "exercise7"))
    measure, steps, read, measured, compiled, ran = (program_runner.measure, program_ring_steps.variants,
                                                     program_sites.read, [], [], [])

    def counting(bytecode, sites, kept, compile_probe, *rest, also=None, **options):
        measured.append(len(kept))
        compiled.clear(), ran.clear()

        def compiling(probe):  # one compile of the probe, with its lanes
            compiled.append(2 if probe.donor else 1)
            run = compile_probe(probe)
            return lambda chosen: ran.extend(chosen) or run(chosen)

        return measure(bytecode, sites, kept, compiling, *rest, also=also, **options)

    out = {}
    for name, cases, target, args, fixed in programs(n):
        specs = jax.tree.map(lambda a: protocol.ArraySpec(a.shape, str(a.dtype)), args)
        blob = export_program(worker._program_function(target, specs, fixed), specs, name)
        # the test's inputs and the sets drawn by the default rule, as program mode runs them
        sets = [args, *fresh_inputs(args, None, np.random.default_rng(0), name)]
        took = {True: [], False: []}
        for _ in range(repeat):
            for on in took:
                program_runner.measure = counting if on else (lambda *a, **options: ([], True, {}))
                program_ring_steps.variants = steps if on else (lambda *a: {})
                program_sites.read = read if on else (lambda module: None)
                began = time.perf_counter()
                program_runner.run_program(blob, sets, name)
                took[on].append(time.perf_counter() - began)
        out[name] = {"cases": cases, "collectives": measured[-1] if measured else 0, "lanes": sum(compiled),
                     "compiles": len(compiled), "variants": len(ran),
                     "ms": 1000 * (statistics.median(took[True]) - statistics.median(took[False]))}
        measured.clear()
    print(json.dumps(out))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--floors", type=int, default=3,
                   help="gradings of the exercise whose median worker time is the floor")
    p.add_argument(CHILD, type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(a.child, a.repeat)
        return
    total, rows = 0.0, []
    for n in DEVICES:
        proc = subprocess.run([sys.executable, __file__, CHILD, str(n), "--repeat", str(a.repeat)],
                              capture_output=True, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        if proc.returncode != 0:
            raise SystemExit(f"measuring at {n} devices failed:\n{proc.stderr}")
        for name, m in json.loads(proc.stdout.splitlines()[-1]).items():
            total += m["cases"] * m["ms"]
            rows.append(f"{n} devices  {name:28s} {m['cases']} x {m['ms']:.1f} ms ({m['collectives']} collectives; "
                        f"{m['variants']} variants run by {m['compiles']} compiles of a probe, {m['lanes']} lanes)")
    print("\n".join(rows))
    floors = sorted(1000 * grade_report(ROOT / "solutions", [], 1234)[1]["timing"]["worker_s"] for _ in range(a.floors))
    floor_ms = statistics.median(floors)
    print(f"measuring the collectives of the exercise: {total:.0f} ms; floor {floor_ms:.0f} ms with it (median of "
          f"{', '.join(f'{f:.0f}' for f in floors)}), {floor_ms - total:.0f} ms without; "
          f"{100 * total / (floor_ms - total):.1f} % of the floor (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
