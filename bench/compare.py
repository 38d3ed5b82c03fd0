"""What a change costs: grade the reference solutions with a baseline checkout and with this one.

Runs ``grade EXERCISE --submission solutions`` alternately from the baseline's tree (its own
grader, course and suites, e.g. ``git worktree add /tmp/base main``) and from this checkout, so a
drift in the machine's load hits both alike, and prints the median wall time, floor
(``timing.worker_s``), wall / floor and CPU seconds (the grade process and everything it started)
of each, and how far the floor and the CPU time moved. Both use this interpreter.

    python bench/compare.py /tmp/base [--repeat 3] [-- --task dot --devices 1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOT = "import sys; sys.path.insert(0, '.'); from grader.cli import main; main()"


def grade(tree: Path, extra: list[str], seed: int) -> dict:
    """One grade process run in ``tree``: wall, floor and CPU seconds."""
    before, began = os.times(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", BOOT, "exercise7", "--submission", "solutions", "--format", "json",
                           "--seed", str(seed), *extra], cwd=tree, capture_output=True, text=True)
    wall, after = time.perf_counter() - began, os.times()
    if proc.returncode != 0:
        raise SystemExit(f"grade in {tree} exited {proc.returncode}:\n{proc.stderr}")
    timing = json.loads(proc.stdout)["timing"]
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"wall_s": wall, "floor_s": timing["worker_s"], "cpu_s": cpu}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("baseline", type=Path, help="the root of the checkout to compare against")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("extra", nargs="*", help="more arguments for grade, after --")
    a = p.parse_args(argv)
    trees = {"baseline": a.baseline.resolve(), "this": ROOT}
    runs = {name: [] for name in trees}
    for i in range(a.repeat):
        for name, tree in trees.items():
            runs[name].append(grade(tree, a.extra, a.seed))
            r = runs[name][-1]
            print(f"{name} {i + 1}: wall {r['wall_s']:.2f} s, floor {r['floor_s']:.2f} s, cpu {r['cpu_s']:.2f} s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    median = {name: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "floor_s", "cpu_s")}
              for name, rs in runs.items()}
    for name, m in median.items():
        print(f"{name}: median wall {m['wall_s']:.2f} s, floor {m['floor_s']:.2f} s, wall / floor "
              f"{m['wall_s'] / m['floor_s']:.2f}, cpu {m['cpu_s']:.2f} s")
    base, this = median["baseline"], median["this"]
    print(f"floor {100 * (this['floor_s'] / base['floor_s'] - 1):+.1f} %, "
          f"cpu {100 * (this['cpu_s'] / base['cpu_s'] - 1):+.1f} %")


if __name__ == "__main__":
    main()
