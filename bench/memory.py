"""Peak memory of a whole grading run: the sum of PSS over ``grade`` and every process below it.

    python bench/memory.py [--repeat 1] [-- GRADE ARGUMENTS]   # default: the whole exercise7

Runs ``grade exercise7 --submission solutions ...`` and samples, every 50 ms until it exits, the
proportional set size (smaps_rollup ``Pss``) of the grader, its zygote, its workers and clean workers
and anything they started, summed: pages forked processes share with the zygote are counted once.
Prints the peak of that sum, the most processes alive at one sample, and the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from measure import GRADE, ROOT, descendants, git_commit, pss_mb

INTERVAL_S = 0.05


def sample(args: list[str], env: dict[str, str] | None = None) -> dict:
    """One run: peak summed PSS (MB), the most processes at once, and the wall time."""
    command = [*GRADE, "exercise7", "--submission", "solutions", "--format", "json", *args]
    began = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, start_new_session=True)
    peak_mb, most = 0.0, 0
    while proc.poll() is None:
        tree = [proc.pid, *descendants(proc.pid)]
        peak_mb, most = max(peak_mb, sum(pss_mb(pid) for pid in tree)), max(most, len(tree))
        time.sleep(INTERVAL_S)
    err = proc.stderr.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {proc.returncode}:\n{err}")
    return {"peak_pss_mb": peak_mb, "processes": most, "wall_s": time.perf_counter() - began}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("grade_args", nargs="*", help="after --: arguments for grade (default: none, the whole exercise)")
    a = p.parse_args(argv)
    load_before = os.getloadavg()
    runs = [sample(a.grade_args) for _ in range(a.repeat)]
    for r in runs:
        print(f"peak PSS of the process tree {r['peak_pss_mb']:.0f} MB, {r['processes']} processes at most, "
              f"wall {r['wall_s']:.1f} s")
    print(f"grade exercise7 --submission solutions {' '.join(a.grade_args)}: peak PSS "
          f"{max(r['peak_pss_mb'] for r in runs):.0f} MB (target <= 1024)\ncommit {git_commit()} · "
          f"{os.cpu_count()} cores · load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    sys.exit(main())
