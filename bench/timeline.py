"""The timeline of one grading run: what the grader, its zygote and each worker did when, and what waited on what.

    python bench/timeline.py [--repeat 1] [--seed 1234] [-- GRADE ARGUMENTS]   # default: --task dot --devices 4
    python bench/timeline.py --read FILE                                           # draw a file a run wrote

Runs ``grade exercise7 --submission solutions ...`` with ``GRADE_TIMELINE`` set (the grader then
writes the spans of grader.workers.timeline to a file) and prints every span in order of start,
then one lane per process on a common time axis, then the CPU time of the whole process tree
(user + system of ``grade``, its zygote and workers, all collected by the time it exits). With
``--repeat N`` it grades N times and draws the run of median wall time. Times are seconds from the
start of the ``grade`` process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile

from measure import GRADE, ROOT, git_commit, timed

WIDTH = 100  # columns of the lane chart
DEFAULT_ARGS = ["--task", "dot", "--devices", "4"]


def run(args: list[str], seed: int) -> tuple[dict, float, float]:
    """One graded run: (its timeline, wall seconds, CPU seconds of its whole process tree)."""
    with tempfile.TemporaryDirectory(prefix="timeline-") as tmp:
        path = os.path.join(tmp, "timeline.json")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        command = [*GRADE, "exercise7", "--submission", "solutions", "--seed", str(seed), *args]
        wall, proc = timed(command, {"GRADE_TIMELINE": path})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return data, wall, cpu


def _lanes(spans: list[dict]) -> list[str]:
    """Processes in the order they first appear."""
    return list(dict.fromkeys(s["process"] for s in sorted(spans, key=lambda s: s["start"])))


def table(data: dict) -> str:
    t0 = data["started"]
    spans = sorted(data["spans"], key=lambda s: (s["start"], -s["end"]))
    width = max(len(s["process"]) for s in spans)
    lines = [f"{'start':>7} {'end':>7} {'took':>6}  {'process':<{width}}  what"]
    for s in spans:
        lines.append(f"{s['start'] - t0:7.3f} {s['end'] - t0:7.3f} {s['end'] - s['start']:6.3f}  "
                     f"{s['process']:<{width}}  {s['what']}")
    return "\n".join(lines)


def chart(data: dict) -> str:
    """One lane per process: '=' busy in a span of its own, 'w' (grader only) waiting for another process."""
    t0, spans = data["started"], data["spans"]
    end = max(s["end"] for s in spans) - t0
    step = end / WIDTH
    names = _lanes(spans)
    width = max(map(len, names))
    rows = [f"{'':<{width}}  0 s{'':{WIDTH - 10}}{end:6.2f} s"]
    for name in names:
        cells = [" "] * WIDTH
        for s in (s for s in spans if s["process"] == name):
            mark = "w" if s["what"].startswith("wait for") else "="
            first, last = int((s["start"] - t0) / step), int((s["end"] - t0) / step)
            for i in range(max(first, 0), min(last + 1, WIDTH)):
                if cells[i] != "w":
                    cells[i] = mark
        rows.append(f"{name:<{width}} |{''.join(cells)}|")
    return "\n".join(rows)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--read", help="draw this timeline file instead of grading")
    p.add_argument("--repeat", type=int, default=1, help="grade this many times and draw the median run")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("grade_args", nargs="*", help=f"arguments for grade exercise7 (default: {' '.join(DEFAULT_ARGS)})")
    a = p.parse_args(argv)
    if a.read:
        with open(a.read, encoding="utf-8") as f:
            data = json.load(f)
        print(table(data), chart(data), sep="\n\n")
        return
    args = a.grade_args or DEFAULT_ARGS
    load = os.getloadavg()[0]
    runs = sorted((run(args, a.seed) for _ in range(a.repeat)), key=lambda r: r[1])
    data, wall, cpu = runs[len(runs) // 2]
    print(table(data), chart(data), sep="\n\n")
    walls = ", ".join(f"{w:.2f}" for _, w, _ in runs)
    cpus = ", ".join(f"{c:.2f}" for _, _, c in runs)
    print(f"\ngrade exercise7 --submission solutions {' '.join(args)}: wall {wall:.2f} s, CPU (user + system, whole "
          f"process tree) {cpu:.2f} s (runs: wall {walls}; CPU {cpus})\n"
          f"commit {git_commit()} · {os.cpu_count()} cores · load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after", file=sys.stdout)


if __name__ == "__main__":
    main()
