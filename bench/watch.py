"""Watch mode's regrade against a cold ``grade``, measured in one run on this machine.

A cold ``grade exercise7 --task dot`` is timed from process start to exit. A ``--watch`` session on
the same submission is then timed from the moment a save is written (the solution's dot.py again,
with one comment changed, so the program to compile is the same as the cold run's) to the moment
its next report has been read; the round's own time (its "graded in N s" line) is kept too. Cold
runs and saves alternate, so load drifts hit both alike. The target: the regrade takes at most
half of the cold run. Run it from anywhere:
``python bench/watch.py [--repeat 5] [--devices 1,2,4,8]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRADE = [sys.executable, "-m", "grader"]
TARGET = 0.5
READY = "watching "


def cold(submission: Path, task: str, devices: list[str]) -> float:
    began = time.perf_counter()
    proc = subprocess.run([*GRADE, "exercise7", "--submission", str(submission), "--task", task, *devices],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"cold grade exited {proc.returncode}:\n{proc.stderr}")
    return time.perf_counter() - began


def read_report(session: subprocess.Popen) -> list[str]:
    lines = []
    while not lines or not lines[-1].startswith(READY):
        line = session.stdout.readline()
        if not line:
            raise SystemExit("the watch session ended:\n" + "".join(lines) + session.stderr.read())
        lines.append(line)
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="cold runs and saves each (the median is reported)")
    p.add_argument("--task", default="dot")
    p.add_argument("--devices", help="device counts, e.g. 1,2 (default: course.yaml)")
    args = p.parse_args(argv)
    devices = ["--devices", args.devices] if args.devices else []
    work = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    try:
        shutil.copytree(ROOT / "solutions" / "exercise7", work / "exercise7")
        module = work / "exercise7" / f"{args.task}.py"
        source = module.read_text()
        session = subprocess.Popen([*GRADE, "exercise7", "--submission", str(work), "--task", args.task, "--watch",
                                    *devices], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            read_report(session)
            colds, regrades, rounds = [], [], []
            for i in range(args.repeat):
                colds.append(cold(work, args.task, devices))
                time.sleep(0.3)  # a save lands on a quiet session, as an editor's would
                began = time.perf_counter()
                module.write_text(source + f"\n# save {i}\n")
                lines = read_report(session)
                regrades.append(time.perf_counter() - began)
                rounds.append(float(re.search(r"graded in ([\d.]+) s", lines[1] if lines[0] == "\n" else lines[0])[1]))
                if not any("passed" in line for line in lines):
                    raise SystemExit("the regrade did not pass:\n" + "".join(lines))
        finally:
            session.send_signal(signal.SIGINT)
            code = session.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"cold_s": colds, "regrade_s": regrades, "round_s": rounds, "cold_median_s": statistics.median(colds),
              "regrade_median_s": statistics.median(regrades), "round_median_s": statistics.median(rounds),
              "session_exit": code,
              "load_average": os.getloadavg()}
    result["ratio"] = result["regrade_median_s"] / result["cold_median_s"]
    met = "met" if result["ratio"] <= TARGET else "missed"
    print(json.dumps(result, indent=2))
    print(f"regrade after a save / cold grade --task {args.task}: {result['ratio']:.2f} "
          f"({result['regrade_median_s']:.2f} s / {result['cold_median_s']:.2f} s); target <= {TARGET}, {met}; "
          f"the round itself {result['round_median_s']:.1f} s, the rest is noticing the save and drawing")


if __name__ == "__main__":
    main()
