"""How close grading comes to its floor, measured in one run on this machine.

The floor of a grading run is the time the workers themselves spent compiling and running student
calls (``timing.worker_s`` of the JSON report); everything above it is overhead: process start,
imports, worker start-up, pytest, IPC. This script grades the reference solutions and prints one
table: wall time and floor of ``grade EXERCISE`` and of ``grade EXERCISE --task TASK`` (each with
and without the zygote, and without the sandbox), a batch of copies with one and two jobs, peak memory,
and the start-up time of ``grade --help`` and ``grade list``, and what an endless loop in ``dot`` costs
next to its budget (one time limit per layout plus the other tasks' normal grading). It writes every
raw figure as JSON, so a figure can be compared across commits. Run it from anywhere:
``python bench/bench.py [--output PATH]``; ``--endless-loop`` measures only the last figure (a minute);
``--confinement`` only what confining the workers costs (wall / floor confined against
``GRADE_SANDBOX=0``, interleaved in one run), for both grade commands; ``--peer`` only the student's
loop against its peer: ``grade exercise7 --task dot --devices 4`` against one plain in-process
pytest of the same checks (bench/peer_dot.py: no worker, no sandbox), interleaved, medians of each;
``--extra-run`` only what program mode's second run of each program costs (bench/extra_run.py);
``--memory`` only the peak PSS of ``grade exercise7``'s whole process tree (bench/memory.py). ``--peer``
grades with the shared compile cache off, filled by clean workers only, and filled by ``grade check``,
and as a student grades their own exercises (their own compile cache, the same code every round and a
new edit of the function every round), and in the same rounds times one plain process doing only the checks' work (bench/plain_dot.py: no
pytest either) and, with ``--otter OTTER`` (the ``otter`` command of a separate venv where
otter-grader is installed; never this project's dependency), ``otter run`` of the same checks
(bench/otter_dot/tests/dot.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import GRADE, ROOT, GradeFailed, align, floor_figures, git_commit, grade_report, timed

TARGETS = {  # name: (target, True if the measured value must be at most the target)
    "exercise_ratio": (1.2, True),  # issue 25 (it was 1.5)
    "peer_ratio": (0.8, True),  # grade --task dot --devices 4 over the same checks as one in-process pytest
    "plain_wall_ratio": (1.1, True),  # the same, over one plain process doing only the checks' work (issue 35)
    "otter_ratio": (0.35, True),  # the same, over otter-grader's otter run of the same checks (issue 35)
    "batch_jobs1_ratio": (1.3, True),
    "batch_speedup": (1.7, False),
    "help_s": (0.3, True),
    "confinement_cost": (0.05, True),  # wall / floor confined over unconfined, minus 1 (issue 11)
}


def grade_once(submission: Path, extra: list[str], seed: int, env: dict[str, str] | None = None) -> dict:
    """One ``grade`` process: its wall time (start to exit) and its report's timing."""
    return floor_figures(*grade_report(submission, extra, seed, env))


def breakdown(run: dict) -> dict:
    """Where the wall time of one grade process went."""
    return {"floor (student calls in workers)": run["report_worker_s"],
            "worker start-up (zygote or fresh)": run["report_start_s"],
            "grader during the run (pytest, IPC, checks)": run["report_wall_s"] - run["report_worker_s"] - run["report_start_s"],
            "process start, imports, report, exit": run["wall_s"] - run["report_wall_s"]}


MODES = {"zygote": {}, "fresh": {"GRADE_ZYGOTE": "0"}, "unconfined": {"GRADE_SANDBOX": "0"}}


def single(label: str, extra: list[str], repeat: int, seed: int, modes=tuple(MODES)) -> dict:
    """``repeat`` runs with the zygote, as many without, and as many unconfined (GRADE_SANDBOX=0, the
    zygote on), interleaved so load drifts hit all alike (``modes``: fewer of them)."""
    runs = {mode: [] for mode in modes}
    for _ in range(repeat):
        for mode in modes:
            runs[mode].append(grade_once(ROOT / "solutions", extra, seed, MODES[mode]))
    out = {"label": label, "command": " ".join(["grade", "exercise7", "--submission", "solutions", *extra]),
           "runs": runs}
    for mode, rs in runs.items():
        median = sorted(rs, key=lambda r: r["wall_s"] / r["report_worker_s"])[len(rs) // 2]
        out[mode] = {"wall_s": median["wall_s"], "floor_s": median["report_worker_s"],
                     "ratio": median["wall_s"] / median["report_worker_s"], "breakdown": breakdown(median)}
    return out


def grade_batch(folders: list[Path], jobs: int, seed: int, extra: list[str], book: Path) -> list[dict]:
    """``grade batch`` over ``folders`` with ``jobs``: one record per submission, from its gradebook."""
    from grader.classroom.gradebook import Gradebook

    args = [*GRADE, "batch", *map(str, folders), "--exercise", "exercise7", "--jobs", str(jobs), "--seed", str(seed),
            "--gradebook", str(book), *extra]
    _, proc = timed(args)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    with Gradebook(str(book), readonly=True) as gb:
        return [{"score": r.score, "max_score": r.max_score, **{f"report_{k}": v for k, v in r.report["timing"].items()}}
                for r in gb.results()]


def cpu_seconds() -> float:
    """CPU time of this process's finished children (grade processes, their zygotes and workers)."""
    t = os.times()
    return t.children_user + t.children_system


ENDLESS_DOT = """
def distributed_dot(x, y):
    i = 0
    while i < len(x):  # the mistake of issue 13: i never steps
        pass
    return 0.0
"""


def endless_loop(devices: str, timeout_s: float, seed: int) -> dict:
    """The solutions with an endless loop in dot, against its budget: one limit per layout of dot plus
    the wall time of grading the other tasks alone (measured here, same devices and limit)."""
    from grader.course import load_course

    exercise = load_course(str(ROOT / "course.yaml")).exercise("exercise7")
    wanted = {int(d) for d in devices.split(",")}
    layouts = len(wanted & set(exercise.task("dot").devices))
    others = ",".join(t.id for t in exercise.tasks if t.id != "dot")
    extra = ["--devices", devices, "--timeout", f"{timeout_s:g}"]
    with tempfile.TemporaryDirectory(prefix="bench-loop-") as tmp:
        submission = Path(tmp) / "loop"
        shutil.copytree(ROOT / "solutions" / "exercise7", submission / "exercise7",
                        ignore=shutil.ignore_patterns("__pycache__"))
        (submission / "exercise7" / "dot.py").write_text(ENDLESS_DOT)
        others_wall_s, _ = grade_report(ROOT / "solutions", [*extra, "--task", others], seed)
        wall_s, report = grade_report(submission, extra, seed)
    dot_cases = sum(len(t["cases"]) for t in report["tasks"] if t["id"] == "dot")
    budget = layouts * timeout_s + others_wall_s
    return {"devices": devices, "timeout_s": timeout_s, "layouts": layouts, "wall_s": wall_s,
            "others_wall_s": others_wall_s, "budget_s": budget, "dot_cases": dot_cases,
            "without_budget_s": dot_cases * timeout_s + others_wall_s,
            "command": " ".join(["grade", "exercise7", "--submission", "LOOP", *extra])}


def loop_rows(loop: dict) -> list[tuple[str, str, str]]:
    ok = loop["wall_s"] <= loop["budget_s"]
    return [(f"endless loop in dot ({loop['command']}): wall", f"{loop['wall_s']:.1f} s",
             f"<= {loop['budget_s']:.1f} s  {'met' if ok else 'MISSED'}"),
            (f"  budget: {loop['layouts']} layouts x {loop['timeout_s']:g} s limit + other tasks",
             f"{loop['layouts'] * loop['timeout_s']:g} s + {loop['others_wall_s']:.1f} s", ""),
            (f"  one limit per case instead ({loop['dot_cases']} cases of dot)", f"{loop['without_budget_s']:.1f} s", "")]


def batch(copies: int, seed: int, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        folders = []
        for i in range(copies):
            folder = Path(tmp) / f"student{i:02d}"
            shutil.copytree(ROOT / "solutions" / "exercise7", folder / "exercise7",
                            ignore=shutil.ignore_patterns("__pycache__"))
            folders.append(folder)
        out = {"copies": copies, "command": " ".join(["grade", "batch", "COPIES", "--exercise", "exercise7", *extra])}
        for jobs in (1, 2):
            began, cpu = time.perf_counter(), cpu_seconds()
            runs = grade_batch(folders, jobs, seed, extra, Path(tmp) / f"jobs{jobs}.sqlite")
            wall, cpu = time.perf_counter() - began, cpu_seconds() - cpu
            floor = sum(r["report_worker_s"] for r in runs)
            out[f"jobs{jobs}"] = {"wall_s": wall, "floor_s": floor, "ratio": wall / floor, "cpu_s": cpu,
                                  "cores_busy": cpu / wall,
                                  "per_submission_s": wall / copies, "per_minute": 60 * copies / wall,
                                  "grader_rss_mb": max(r["report_grader_rss_mb"] for r in runs),
                                  "worker_rss_mb": max(r["report_worker_rss_mb"] for r in runs), "runs": runs}
        out["speedup"] = out["jobs2"]["per_minute"] / out["jobs1"]["per_minute"]
        return out


PEER_ARGS = ["--task", "dot", "--devices", "4"]
PEER = [sys.executable, "-m", "pytest", "-q", "-c", os.devnull, "-p", "no:cacheprovider", "-p", "no:xdist",
        str(ROOT / "bench" / "peer_dot.py")]
PLAIN = [sys.executable, str(ROOT / "bench" / "plain_dot.py")]  # the checks' work alone, in one process
OTTER_TESTS = ROOT / "bench" / "otter_dot" / "tests"  # the same checks as an otter-grader test file


def otter_setup(otter: str, folder: Path) -> list[str]:
    """The ``otter run`` command that grades the reference dot.py with bench/otter_dot's tests (its
    autograder.zip made by ``otter generate`` in ``folder``, untimed), or SystemExit if otter fails."""
    shutil.copytree(OTTER_TESTS, folder / "tests")
    shutil.copy(ROOT / "solutions" / "exercise7" / "dot.py", folder / "dot.py")
    (folder / "out").mkdir()
    made = subprocess.run([otter, "generate", "--no-config", "--no-requirements", "--no-environment", "-t", "tests",
                           "-o", "autograder.zip"], cwd=folder, capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit(f"otter generate failed:\n{made.stdout}\n{made.stderr}")
    return [otter, "run", "--no-logo", "-a", str(folder / "autograder.zip"), "-o", str(folder / "out"),
            str(folder / "dot.py")]


def _otter_score(folder: Path) -> float:
    results = json.loads((folder / "out" / "results.json").read_text())
    return sum(t.get("score") or 0 for t in results["tests"])


# The compile caches (grader.workers.compile_cache) in the states a grading meets them: off; the shared
# one filled only by the clean workers of earlier runs; the shared one filled by ``grade check`` from the
# reference solutions first (what the autograder image carries, and CI or a batch after its check); and
# a student's own runs of their exercises (no --submission: the local limits, and the student's own
# cache beside the shared one their clean workers fill), again with the same code and after an edit of
# the task's function every round (a constant changed: its own programs compile anew).
CACHE_STATES = ("off", "clean workers only", "after grade check", "a student's own runs",
                "a student's own runs, after an edit")
OWN_STATES = CACHE_STATES[3:]
EDITED = "lax.psum(jnp.dot(a, b)"  # in the solution's dot.py: the product an edit changes


def own_course(folder: Path) -> Path:
    """A copy of the course whose exercise 7 is solved (the solutions as the student's exercises), with
    the reference figures this checkout has, graded as a student grades their own exercises."""
    folder.mkdir()
    for name in ("course.yaml", "tests", "solutions", ".grade"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif (ROOT / name).exists():
            shutil.copy(ROOT / name, folder / name)
    shutil.copytree(ROOT / "solutions" / "exercise7", folder / "exercises" / "exercise7",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def own_run(course: Path, seed: int, env: dict[str, str], edit: int | None = None) -> dict:
    """One ``grade exercise7 --task dot --devices 4`` of ``course``'s own exercises; with ``edit``, its dot.py
    first edited so (the product plus an empty sum times the round's number) that its programs are new."""
    if edit is not None:
        dot = course / "exercises" / "exercise7" / "dot.py"
        source = (ROOT / "solutions" / "exercise7" / "dot.py").read_text()
        if EDITED not in source:
            raise SystemExit(f"bench: the solution's dot.py no longer holds {EDITED!r}, which the edit changes")
        dot.write_text(source.replace(EDITED, f"lax.psum(jnp.dot(a, b) + a[:0].sum() * {edit + 1}"))
    args = [*GRADE, "exercise7", "--course", str(course), "--format", "json", "--seed", str(seed), *PEER_ARGS]
    wall, proc = timed(args, env)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return floor_figures(wall, json.loads(proc.stdout))


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _timed_cpu(args: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall and CPU time (of the process and every descendant it waited for) of one command."""
    cpu = cpu_seconds()
    wall, proc = timed(args, env)
    return wall, cpu_seconds() - cpu, proc


def peer(repeat: int, seed: int, otter: str | None = None) -> dict:
    """``grade exercise7 --task dot --devices 4`` in each cache state and its in-process peer, interleaved
    round by round: the median wall of each, and the first cold run of each state apart from the others.
    In the same rounds: one plain process doing only the checks' work (bench/plain_dot.py; wall and CPU,
    against grade with the cache off), and with ``otter`` (an ``otter`` command of a separate venv that
    has otter-grader) the same checks graded by ``otter run``."""
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        otter_run = otter_setup(otter, Path(tmp) / "otter") if otter else None
        folders = {"off": "off", "clean workers only": os.path.join(tmp, "clean"),
                   "after grade check": os.path.join(tmp, "check")}
        check = [*GRADE, "check", "exercise7", "--devices", "4"]
        if timed(check, {"GRADE_COMPILE_CACHE": folders["after grade check"]})[1].returncode not in (0, 1):
            raise SystemExit(f"{' '.join(check)} failed")  # exit 1: unsound at --devices 4 (multihost), expected
        courses = {state: own_course(Path(tmp) / f"course{i}") for i, state in enumerate(OWN_STATES)}
        own_env = {state: {"GRADE_COMPILE_CACHE": os.path.join(tmp, f"shared{i}"),
                           "GRADE_OWN_COMPILE_CACHE": os.path.join(tmp, f"own{i}")} for i, state in enumerate(OWN_STATES)}
        grades: dict[str, list[dict]] = {state: [] for state in CACHE_STATES}
        pytests, loads, plain, otters = [], [], [], []
        for round_ in range(repeat):
            loads.append(os.getloadavg()[0])
            for state in CACHE_STATES:
                cpu = cpu_seconds()
                if state in OWN_STATES:
                    run = own_run(courses[state], seed, own_env[state], round_ if state == OWN_STATES[1] else None)
                else:
                    run = grade_once(ROOT / "solutions", PEER_ARGS, seed, {"GRADE_COMPILE_CACHE": folders[state]})
                grades[state].append({**run, "cpu_s": cpu_seconds() - cpu})
            for args, runs in ((PEER, pytests), (PLAIN, plain), *(((otter_run, otters),) if otter else ())):
                wall, cpu, proc = _timed_cpu(args, {"PEER_DEVICES": "4", "JAX_NUM_CPU_DEVICES": "4"})
                if proc.returncode != 0:
                    raise SystemExit(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
                runs.append((wall, cpu))
            if otter and _otter_score(Path(tmp) / "otter") != 6:
                raise SystemExit(f"otter-grader did not give the reference dot.py 6 of 6: {otter_run}")
    peers = [wall for wall, _ in pytests]
    peer_s = _median(peers)
    states = {}
    for state, runs in grades.items():
        walls = [r["wall_s"] for r in runs]
        states[state] = {"grade_s": _median(walls), "ratio": _median(walls) / peer_s, "first_s": walls[0],
                         "later_s": _median(walls[1:]) if len(walls) > 1 else walls[0],
                         "floor_s": _median([r["report_worker_s"] for r in runs]), "runs": walls,
                         "ratios": [w / p for w, p in zip(walls, peers)]}
    def against(runs: list[tuple[float, float]], what: str = "wall_s") -> dict[str, float]:
        """The median over rounds of grade's figure (in each cache state) over the other's, round by round."""
        i = 0 if what == "wall_s" else 1
        return {state: _median([g[what] / r[i] for g, r in zip(grades[state], runs)]) for state in CACHE_STATES}

    out = {"command": " ".join(["grade", "exercise7", "--submission", "solutions", *PEER_ARGS]),
           "own_command": " ".join(["grade", "exercise7", *PEER_ARGS]) + " (the solutions as the student's exercises)",
           "peer": " ".join(["python", "-m", "pytest", "bench/peer_dot.py"]), "peer_s": peer_s,
           "peer_runs": peers, "states": states, "load_averages": loads,
           "grade_s": states["after grade check"]["grade_s"], "ratio": states["after grade check"]["ratio"],
           "grade_cpu_s": {state: _median([g["cpu_s"] for g in runs]) for state, runs in grades.items()},
           "plain": {"command": "python bench/plain_dot.py", "runs": plain, "wall_s": _median([w for w, _ in plain]),
                     "cpu_s": _median([c for _, c in plain]), "ratios": against(plain),
                     "cpu_ratios": against(plain, "cpu_s")}}
    if otter:
        out["otter"] = {"command": " ".join(otter_run), "runs": otters, "wall_s": _median([w for w, _ in otters]),
                        "cpu_s": _median([c for _, c in otters]), "ratios": against(otters),
                        "cpu_ratios": against(otters, "cpu_s")}
    return out


def _command(p: dict, state: str) -> str:
    return p.get("own_command", p["command"]) if state in OWN_STATES else p["command"]


def peer_rows(p: dict) -> list[tuple[str, str, str]]:
    rows = []
    for state, s in p["states"].items():
        rows += [(f"{_command(p, state)}, cache {state}: wall / in-process pytest",
                  f"{s['ratio']:.2f}  ({s['grade_s']:.2f} s / {p['peer_s']:.2f} s; floor {s['floor_s']:.2f} s)",
                  verdict("peer_ratio", s["ratio"])),
                 (f"  per round: {', '.join(f'{r:.2f}' for r in s['ratios'])}",
                  f"first {s['first_s']:.2f} s, later {s['later_s']:.2f} s", "")]
    loads = ", ".join(f"{v:.1f}" for v in p["load_averages"])
    rows.append((f"  the in-process pytest: {p['peer']}", f"{p['peer_s']:.2f} s", ""))
    for key, what, target in (("plain", "one plain process doing only the checks' work", "plain_wall_ratio"),
                              ("otter", "otter-grader (otter run, the same checks)", "otter_ratio")):
        if key in p:
            o = p[key]
            rows += [(f"{_command(p, state)}, cache {state}: wall / {what}",
                      f"{r:.2f}  (CPU {o['cpu_ratios'][state]:.2f})", verdict(target, r))
                     for state, r in o["ratios"].items()]
            rows.append((f"  {o['command']}", f"{o['wall_s']:.2f} s, CPU {o['cpu_s']:.2f} s", ""))
    return rows + [(f"  load average at each round: {loads}", "", "")]


def startup(repeat: int) -> dict:
    """Best of ``repeat``: the least the machine's load added."""
    return {name: min(timed([*GRADE, *args])[0] for _ in range(repeat))
            for name, args in (("help_s", ["--help"]), ("list_s", ["list"]))}


def verdict(name: str, value: float) -> str:
    target, at_most = TARGETS[name]
    ok = value <= target if at_most else value >= target
    return f"{'<=' if at_most else '>='} {target:g}  {'met' if ok else 'MISSED'}"


def ratio(mode: dict) -> str:
    return f"{mode['ratio']:.2f}  ({mode['wall_s']:.2f} s / {mode['floor_s']:.2f} s)"


def confinement_rows(s: dict) -> list[tuple[str, str, str]]:
    """Confined (the zygote on) against GRADE_SANDBOX=0, from the same run."""
    z, u = s["zygote"], s["unconfined"]
    cost = z["ratio"] / u["ratio"] - 1
    return [("  unconfined (GRADE_SANDBOX=0): wall / floor", ratio(u), ""),
            ("  confinement's cost on wall / floor", f"{cost:+.1%}", verdict("confinement_cost", cost))]


def table(result: dict) -> str:
    rows = [("figure", "value", "target")]
    for s in result["single"]:
        z, f = s["zygote"], s["fresh"]
        rows += [(f"{s['command']}: wall", f"{z['wall_s']:.2f} s", ""),
                 ("  floor (worker_s)", f"{z['floor_s']:.2f} s", ""),
                 ("  wall / floor", f"{z['ratio']:.2f}",
                  verdict("exercise_ratio", z["ratio"]) if "--task" not in s["command"] else ""),
                 ("  without zygote: wall / floor", ratio(f), ""),
                 *confinement_rows(s)]
        rows += [(f"    {k}", f"{v:.2f} s", "") for k, v in z["breakdown"].items()]
    b = result["batch"]
    for jobs in (1, 2):
        j = b[f"jobs{jobs}"]
        rows += [(f"batch of {b['copies']}, {jobs} job{'s' if jobs > 1 else ''}: wall", f"{j['wall_s']:.1f} s", ""),
                 ("  per submission / floor per submission",
                  f"{j['ratio']:.2f}  ({j['per_submission_s']:.2f} s / {j['floor_s'] / b['copies']:.2f} s)",
                  verdict("batch_jobs1_ratio", j["ratio"]) if jobs == 1 else ""),
                 ("  submissions per minute", f"{j['per_minute']:.1f}", ""),
                 ("  CPU per submission; cores kept busy",
                  f"{j['cpu_s'] / b['copies']:.2f} s; {j['cores_busy']:.2f} of {result['machine']['cpus']}", "")]
    ceiling = min(2, result["machine"]["cpus"]) / b["jobs1"]["cores_busy"]
    rows += [("batch speed-up, 2 jobs vs 1", f"{b['speedup']:.2f}", verdict("batch_speedup", b["speedup"])),
             ("  the most 2 jobs can give here: cores / cores 1 job keeps busy", f"{ceiling:.2f}", ""),
             ("peak RSS: grader / one worker",
              f"{b['jobs1']['grader_rss_mb']:.0f} MB / {b['jobs1']['worker_rss_mb']:.0f} MB", ""),
             ("grade --help", f"{result['startup']['help_s']:.3f} s", verdict("help_s", result["startup"]["help_s"])),
             ("grade list", f"{result['startup']['list_s']:.3f} s", "")]
    rows += loop_rows(result["endless_loop"])
    rows += peer_rows(result["peer"])
    m = result["machine"]
    return align(rows) + (f"\n\ncommit {result['commit']} · {m['cpus']} cores · load average "
                          f"{m['load_before'][0]:.1f} before, {m['load_after'][0]:.1f} after · ratios are from the "
                          "same runs, absolute times depend on load")


def footer(load_before) -> str:
    return (f"\n\ncommit {git_commit()} · {os.cpu_count()} cores · load average {load_before[0]:.1f} before, "
            f"{os.getloadavg()[0]:.1f} after")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output", default=str(ROOT / "bench" / "results" / "latest.json"), help="where to write JSON")
    p.add_argument("--copies", type=int, default=20, help="submissions in the batch")
    p.add_argument("--repeat", type=int, default=3, help="runs of each single grading (the median is reported)")
    p.add_argument("--task", default="dot", help="the task of the --task figure")
    p.add_argument("--batch-task", help="grade only this task in the batch (default: the whole exercise)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--endless-loop", action="store_true", help="measure only the endless-loop figure")
    p.add_argument("--confinement", action="store_true", help="measure only what confining the workers costs")
    p.add_argument("--peer", action="store_true", help="measure only grade --task dot against an in-process pytest")
    p.add_argument("--otter", help="with --peer: the otter command of a separate venv with otter-grader, to "
                                   "measure grade against it too (never a dependency of this project)")
    p.add_argument("--extra-run", action="store_true", help="measure only program mode's second run")
    p.add_argument("--memory", action="store_true", help="measure only the peak PSS of grade exercise7's process tree")
    p.add_argument("--loop-devices", default="1,2", help="device counts of the endless-loop figure")
    p.add_argument("--loop-timeout", type=float, default=5.0, help="per-call time limit of the endless-loop figure")
    a = p.parse_args(argv)
    load_before = os.getloadavg()
    try:
        if a.confinement:
            rows = [("figure", "value", "target")]
            for label, extra in (("exercise7", []), (f"exercise7 --task {a.task}", ["--task", a.task])):
                s = single(label, extra, a.repeat, a.seed, modes=("zygote", "unconfined"))
                rows += [(f"{s['command']}: wall / floor confined", ratio(s["zygote"]), ""), *confinement_rows(s)]
            print(align(rows) + footer(load_before))
            return
        if a.extra_run:
            import extra_run

            extra_run.main(["--repeat", str(max(a.repeat, 5))])
            return
        if a.memory:
            import memory

            memory.main(["--repeat", str(a.repeat)])
            return
        if a.peer:
            print(align([("figure", "value", "target"), *peer_rows(peer(max(a.repeat, 5), a.seed, a.otter))])
                  + footer(load_before))
            return
        if a.endless_loop:
            loop = endless_loop(a.loop_devices, a.loop_timeout, a.seed)
            print(align([("figure", "value", "target"), *loop_rows(loop)]) + footer(load_before))
            return
        result = {
            "commit": git_commit(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "single": [single("exercise7", [], a.repeat, a.seed),
                       single(f"exercise7 --task {a.task}", ["--task", a.task], a.repeat, a.seed)],
            "batch": batch(a.copies, a.seed, ["--task", a.batch_task] if a.batch_task else []),
            "startup": startup(5),
            "endless_loop": endless_loop(a.loop_devices, a.loop_timeout, a.seed),
            "peer": peer(max(a.repeat, 5), a.seed, a.otter),
        }
    except GradeFailed as exc:
        raise SystemExit(str(exc)) from None
    result["machine"] = {"cpus": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()}
    out = Path(a.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"raw figures: {out}")


if __name__ == "__main__":
    main()
