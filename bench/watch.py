"""Watch mode's regrade against a cold ``grade``, measured in one run on this machine.

A cold ``grade exercise7 --task dot`` is timed from process start to exit. A ``--watch`` session on
the same submission is then timed from the moment a save is written to the moment its next report
has been read; the round's own time (its "graded in N s" line) is kept too. Two kinds of save
alternate with the cold runs, so load drifts hit all alike:

- an *edit*: the solution's per-device function with a new constant in it (``* k / k``, k never
  used before in the session), so the program the student's code compiles is one the session has
  never seen, as after a real change; the target is for this save;
- a *touch*: the solution saved again with one comment changed, so the program is the same as the
  last round's (its compiles come from the session's cache), shown for comparison.

The cold run grades what the folder holds at that moment (the last save). The target: an edit's
regrade takes at most half of the cold run. Run it from anywhere:
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

from measure import descendants, pss_mb

ROOT = Path(__file__).resolve().parents[1]
GRADE = [sys.executable, "-m", "grader"]
TARGET = 0.5
READY = "watching "
SPARES_READY_S = 8.0  # after a report: time for the next round's spares to start and warm up
EDITED = "jnp.dot(a, b)"  # in solutions/exercise7/dot.py: the per-device dot an edit changes


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


def saves(source: str, repeat: int):
    """(kind, text) of each save: an edit and a touch per repeat, every text new to the session."""
    if EDITED not in source:
        raise SystemExit(f"the solution's dot.py no longer holds {EDITED!r}, which an edit changes; update EDITED")
    for i in range(repeat):
        yield "edit", source.replace(EDITED, f"{EDITED} * {i + 2} / {i + 2}") + f"\n# edit {i}\n"
        yield "touch", source.replace(EDITED, f"{EDITED} * {i + 2} / {i + 2}") + f"\n# touch {i}\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="edits and touches each (medians are reported)")
    p.add_argument("--devices", help="device counts, e.g. 1,2 (default: course.yaml)")
    args = p.parse_args(argv)
    devices = ["--devices", args.devices] if args.devices else []
    work = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    times: dict[str, list[float]] = {"cold": [], "edit": [], "touch": [], "edit round": [], "touch round": []}
    try:
        shutil.copytree(ROOT / "solutions" / "exercise7", work / "exercise7")
        module = work / "exercise7" / "dot.py"
        session = subprocess.Popen([*GRADE, "exercise7", "--submission", str(work), "--task", "dot", "--watch",
                                    *devices], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            read_report(session)
            time.sleep(SPARES_READY_S)
            held = [pss_mb(pid) for pid in descendants(session.pid)]
            for kind, text in saves(module.read_text(), args.repeat):
                time.sleep(2.0)  # the session's spares are ready and idle: the cold run has the cores to itself
                times["cold"].append(cold(work, "dot", devices))
                time.sleep(1.0)  # a save lands some time after the last, as a student's does
                began = time.perf_counter()
                module.write_text(text)
                lines = read_report(session)
                times[kind].append(time.perf_counter() - began)
                heading = lines[1] if lines[0] == "\n" else lines[0]
                times[f"{kind} round"].append(float(re.search(r"graded in ([\d.]+) s", heading)[1]))
                if not any("passed" in line for line in lines):
                    raise SystemExit(f"the regrade after the {kind} did not pass:\n" + "".join(lines))
        finally:
            session.send_signal(signal.SIGINT)
            code = session.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {kind: statistics.median(values) for kind, values in times.items()}
    ratio = {kind: medians[kind] / medians["cold"] for kind in ("edit", "touch")}
    print(json.dumps({"seconds": times, "medians_s": medians, "ratio": ratio, "session_exit": code,
                      "between_rounds_pss_mb": [round(mb, 1) for mb in held], "load_average": os.getloadavg()},
                     indent=2))
    met = "met" if ratio["edit"] <= TARGET else "missed"
    print(f"regrade after an edit / cold grade --task dot: {ratio['edit']:.2f} ({medians['edit']:.2f} s / "
          f"{medians['cold']:.2f} s); target <= {TARGET}, {met}; the round itself {medians['edit round']:.2f} s")
    print(f"regrade after a touch (same program) / cold: {ratio['touch']:.2f} ({medians['touch']:.2f} s; "
          f"round {medians['touch round']:.2f} s)")
    print(f"held between rounds (smaps_rollup PSS): {sum(held):.0f} MB in {len(held)} processes, the zygote and "
          f"the warmed-up spares (the grader's own process not counted)")


if __name__ == "__main__":
    main()
