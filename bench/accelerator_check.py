"""One short check of grading on a real accelerator, ready for the rare minutes a GPU or TPU machine is at hand.

On a machine with NVIDIA GPUs it creates a fresh venv, installs the project with the ``cuda`` extra
(timed), then, under one time limit, grades through the CLI (``python -m grader``) and prints ONE
table: what JAX sees and what ``--backend auto`` chose; the reference solutions and the stubs graded
with ``--backend gpu`` (points per task, the cases not run here, the maximum scaled); the
multi-process layouts of task multihost; the solutions graded with ``--backend auto`` (every case
graded, each configuration on the GPUs when they can take it and on emulated CPU devices otherwise,
and which ran where); what grader.suite.hlo reads in a matmul and a psum compiled for the backend
(cuBLAS calls, asynchronous collectives); wall / floor of the exercise and of one task against the
same on emulated CPU devices; the GPU memory each worker held (sampled with nvidia-smi); and eight
processes with the workers' own GPU settings holding memory on one GPU at once. Every raw figure
also goes to JSON (``--output``).

``--backend tpu`` runs the same steps on a TPU VM (``--extra tpu``; where pip cannot reach PyPI,
``--no-install`` with the project's needs on PYTHONPATH, docs/backends.md): the device files stand in
for nvidia-smi, the hlo probe compiles for the TPU, and instead of the GPU's memory the processes
that hold the chip are sampled (from /proc/PID/fd) during the TPU and the mixed gradings: one
process at a time may open a chip, so at most one may ever hold it, and the pressure check, eight
processes on one device, is left out. On every backend two rows say what confines student code here
(grade check's survey) and whether ``--require-sandbox basic`` grades or refuses.

``--backend cpu --no-install`` runs the same steps on any machine with the current interpreter
(the rows that need a GPU say why they are skipped); tests/grader/test_accelerator_check.py runs it
that way so that it cannot rot. The exit code is 1 if any row is a PROBLEM or was left out by the time
limit (INCOMPLETE).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile
import re
import threading
import time
import traceback
from pathlib import Path

from measure import ROOT, GradeFailed, GradeTimedOut, align, floor_figures, git_commit, grade_report, timed

INSTALL_TIMEOUT_S = 1200.0
MIN_STEP_S = 10.0  # a step is not started with less time than this left
SAMPLE_INTERVAL_S = 0.5  # GPU memory a worker holds only grows (it keeps what it allocated), so this misses no peak
PRESSURE_MIB = 256  # what each process of the one-GPU pressure check allocates
PROBLEM = "PROBLEM"
INCOMPLETE = "INCOMPLETE"  # the verdict of a step the time limit left out
DEBUG = {"GRADE_DEBUG": "1"}  # an internal failure of grade leaves its traceback (kept in the JSON)

# What JAX itself says, asked independently of the grader's own device probe.
JAX_VIEW = """
import importlib.metadata as md, json, jax
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None
devices = jax.devices()
print(json.dumps({"default_backend": jax.default_backend(), "platform": devices[0].platform,
                  "device_kind": devices[0].device_kind, "count": len(devices),
                  "packages": {n: version(n) for n in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin",
                                                       "libtpu", "libtpu-nightly")}}))
"""

# The environment the grader gives a worker on one device of this backend: asked of the engine itself.
WORKER_SETTINGS = """
import json, sys
from grader.workers.backends import resolve
print(json.dumps(resolve(sys.argv[1]).worker_variables(1)))
"""

# What grader.suite.hlo reads in programs compiled here: a matmul every device does whole, and a psum.
HLO_READ = """
import json, sys
import jax
if sys.argv[1] == "cpu":
    jax.config.update("jax_num_cpu_devices", 2)
import jax.numpy as jnp
from jax import lax
from grader.suite import hlo
x, w = jnp.ones((64, 128), jnp.float32), jnp.ones((128, 32), jnp.float32)
matmul = jax.jit(lambda a, b: a @ b).lower(x, w).compile().as_text()
n = jax.local_device_count()
psum = jax.pmap(lambda a: lax.psum(a * 2, "i"), axis_name="i").lower(jnp.ones((n, 8))).compile().as_text()
forms = {f: matmul.count(f) + psum.count(f) for f in ("custom-call(", "__cublas$", "__cudnn$", "fusion(", "-start(",
                                                      "convolution(")}
print(json.dumps({"platform": jax.devices()[0].platform, "devices": n, "matmul_work": hlo.operations(matmul),
                  "all_reduces": hlo.count(psum, "all-reduce"), "all_reduce_bytes": hlo.bytes_moved(psum, "all-reduce"),
                  "forms": forms, "matmul_hlo": matmul, "psum_hlo": psum}))
"""
MATMUL_WORK = 2 * 64 * 32 * 128  # the multiply-adds of x (64 x 128) @ w (128 x 32), two operations each

# What a worker could be confined by here, as grade check says it, and the strictest level that meets.
SANDBOX_HERE = """
import json
from grader.grading import confinement as c
record = c.survey(c.switched_off())
meets = next(level for level in reversed(c.LEVELS) if not c.shortfall(level, record))
print(json.dumps({"meets": meets, **record}))
"""

# One process of the pressure check: allocate, report JAX's memory figures, hold until told to exit.
PRESSURE = """
import json, sys
import jax, jax.numpy as jnp
x = jax.jit(lambda: jnp.ones({n}, jnp.float32) * 2)()
x.block_until_ready()
stats = jax.devices()[0].memory_stats() or {{}}
print(json.dumps({{"platform": x.devices().pop().platform, "peak_bytes": stats.get("peak_bytes_in_use"),
                  "limit_bytes": stats.get("bytes_limit")}}), flush=True)
sys.stdin.readline()
"""


class Budget:
    """The overall time limit of the checks; each step gets what is left."""

    def __init__(self, seconds: float):
        self.seconds, self.deadline = seconds, time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def spent(self) -> tuple[str, str] | None:
        """The result and verdict of a step skipped for want of time, or None if there is time for it."""
        if self.left() < MIN_STEP_S:
            return f"skipped: the time limit ({self.seconds:.0f} s) was reached", INCOMPLETE
        return None


def mib(n_bytes: float | None) -> str:
    return "?" if n_bytes is None else f"{n_bytes / 2**20:.0f} MiB"


def last_line(text: str) -> str:
    """The last non-empty line: where grade puts its error and Python the exception of a traceback."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


# ---- nvidia-smi -----------------------------------------------------------------------------------

def smi(query: str, fields: str) -> list[list[str]]:
    """One nvidia-smi CSV query; rows of stripped fields (none if nvidia-smi is absent or fails).

    A line without one value per field (a message such as "No running processes found") is no row.
    """
    try:
        proc = subprocess.run(["nvidia-smi", f"--query-{query}={fields}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    rows = [[f.strip() for f in line.split(",")] for line in proc.stdout.splitlines()]
    return [row for row in rows if len(row) == fields.count(",") + 1]


def number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def gpus() -> list[dict]:
    """The GPUs the driver sees: index, uuid, name and memory in MiB."""
    return [{"index": int(i), "uuid": u, "name": n, "total_mib": number(t)}
            for i, u, n, t in smi("gpu", "index,uuid,name,memory.total")]


def sample() -> dict:
    """One look at GPU memory: used per GPU (by uuid) and per process (pid, uuid)."""
    return {"gpus": {u: number(used) for u, used in smi("gpu", "uuid,memory.used")},
            "apps": [(pid, u, number(used)) for pid, u, used in smi("compute-apps", "pid,gpu_uuid,used_memory")]}


def summarise(samples: list[dict], known: list[dict]) -> dict:
    """Peak memory per process and, per GPU, the most processes at once and the most memory used."""
    index = {g["uuid"]: g["index"] for g in known}
    per_process: dict[str, float] = {}
    per_gpu = {g["index"]: {"most_processes": 0, "peak_used_mib": 0.0, "total_mib": g["total_mib"]} for g in known}
    for s in samples:
        for pid, uuid, used in s["apps"]:
            if used is not None:
                per_process[pid] = max(per_process.get(pid, 0.0), used)
        for uuid, used in s["gpus"].items():
            gpu = per_gpu.get(index.get(uuid))
            if gpu is not None and used is not None:
                gpu["peak_used_mib"] = max(gpu["peak_used_mib"], used)
                gpu["most_processes"] = max(gpu["most_processes"], sum(1 for _, u, _ in s["apps"] if u == uuid))
    return {"per_process_peak_mib": per_process, "per_gpu": per_gpu, "samples": len(samples)}


# ---- the processes holding a TPU chip ------------------------------------------------------------

CHIP_FILES = re.compile(r"^/dev/(accel\d+|vfio/\d+)$|/libtpu_lockfile$")  # a chip's device file, libtpu's lock


def chip_holders() -> list[int]:
    """The processes with a TPU chip's device file, or libtpu's lockfile, open (those this user may look into)."""
    holders = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # it ended, or is not ours to read
            continue
        for fd in fds:
            try:
                if CHIP_FILES.search(os.readlink(f"/proc/{pid}/fd/{fd}")):
                    holders.append(int(pid))
                    break
            except OSError:
                continue
    return holders


def holders_row(run: str, samples: list[list[int]]) -> tuple[str, str, str]:
    """How many processes held the chip at once during a run: never more than one may."""
    label = f"  processes holding the TPU at once ({run}, /proc/PID/fd)"
    seen, most = {p for s in samples for p in s}, max(map(len, samples), default=0)
    if not seen:
        return label, f"none seen in {len(samples)} samples (libtpu kept no device file open?)", ""
    return label, f"at most {most} ({len(seen)} processes held it in turn; {len(samples)} samples)", \
        "ok" if most == 1 else PROBLEM


class MemorySampler:
    """Samples ``look`` (nvidia-smi's figures; on a TPU, :func:`chip_holders`) in a thread while a grade process
    runs."""

    def __init__(self, enabled: bool, look=sample):
        self.enabled, self.look, self.samples = enabled, look, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self.look())
            self._stop.wait(SAMPLE_INTERVAL_S)

    def __enter__(self):
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop.set()
            self._thread.join()


# ---- the steps ------------------------------------------------------------------------------------

def install(venv: Path, extra: str, pip_args: list[str]) -> dict:
    """A fresh venv with the project and ``extra`` installed; how long it took."""
    python = venv / "bin" / "python"
    steps = [[sys.executable, "-m", "venv", "--clear", str(venv)],
             [str(python), "-m", "pip", "install", "-q", "-e", f"{ROOT}[{extra}]", *pip_args]]
    record = {"venv": str(venv), "python": str(python), "commands": [" ".join(s) for s in steps], "seconds": 0.0}
    for step in steps:
        try:
            seconds, proc = timed(step, timeout_s=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {**record, "error": f"{step[2]} ran past {INSTALL_TIMEOUT_S:.0f} s"}
        record["seconds"] += seconds
        if proc.returncode != 0:
            reason = next((line.strip() for line in proc.stderr.splitlines() if line.strip().startswith("ERROR")),
                          last_line(proc.stderr))  # pip's own ERROR line says more than its closing note
            return {**record, "stderr": proc.stderr, "error": f"{step[2]} exited {proc.returncode}: {reason}"}
    return record


def ask_python(python: str, code: str, *args: str, env: dict | None = None,
               timeout_s: float = 120) -> tuple[dict, str]:
    """Run ``code`` with ``python`` in the repository root; the JSON it prints last, and its stderr."""
    try:
        _, proc = timed([python, "-c", code, *args], env, timeout_s)
    except subprocess.TimeoutExpired:
        raise GradeFailed(f"{python} -c ... ran past {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        raise GradeFailed(f"exit {proc.returncode}: {last_line(proc.stderr)}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def fits(case: dict, report: dict) -> bool:
    """Whether the machine's own devices take a case's (or a place's) configuration in the report's run: enough
    of them and, on a TPU, one process (Backend.refuses)."""
    here, need = report["devices_here"], case["devices"] * (case["processes"] or 1)
    return here is None or (need <= here and not (case["processes"] and report.get("backend") == "tpu"))


def left_out(case: dict) -> bool:
    """Whether --devices left the case out (a test marked for other device counts): the run's choice, not the
    machine's."""
    return case["kind"] == "not_run" and case["message"].startswith("left out by --devices")


def case_problems(report: dict) -> list[str]:
    """Cases of a reference run that did not do what this machine allows: pass, or be not run here. A case
    --devices left out (a structural test asked for at one device) is neither."""
    here = report["devices_here"]
    problems = []
    for t in report["tasks"]:
        for c in t["cases"]:
            need = c["devices"] * (c["processes"] or 1)
            if left_out(c):
                continue
            if fits(c, report) and c["outcome"] != "passed":
                problems.append(f"{c['name']}: {c['outcome']} ({last_line(c['message'])})")
            elif not fits(c, report) and (c["kind"] != "not_run" or (
                    need > here and f"needs {need} devices" not in c["message"])):
                problems.append(f"{c['name']}: needs {need} devices of {here} but was {c['outcome']}")
    return problems


def cases_run(tasks: list[dict]) -> int:
    return sum(1 for t in tasks for c in t["cases"] if c["kind"] != "not_run")


def not_run_counts(cases: list[dict]) -> str:
    counts = sorted({c["devices"] * (c["processes"] or 1) for c in cases if c["kind"] == "not_run"})
    return ", ".join(map(str, counts))


def score_rows(label: str, report: dict, expect_full: bool) -> list[tuple[str, str, str]]:
    """The headline and one row per task; the solutions must reach each (scaled) maximum, the stubs zero."""
    here = "" if report["devices_here"] is None else f" (this machine has {report['devices_here']})"
    scaled = f", maximum scaled from {report['full_max_score']:g}" if report["max_score"] != report["full_max_score"] else ""
    bad = case_problems(report) if expect_full else []
    rows = [(label, f"{report['score']:g} / {report['max_score']:g}{scaled}", "")]
    for t in report["tasks"]:
        text = f"{t['score']:g} / {t['max_score']:g}" + (f" of {t['points']:g}" if t["max_score"] != t["points"] else "")
        text += f"; {cases_run([t])} cases run" + (f", {t['not_run']} not run here at {not_run_counts(t['cases'])} devices{here}"
                                         if t["not_run"] else "")
        ok = t["score"] == t["max_score"] if expect_full else t["score"] == 0
        rows.append((f"  {t['id']}", text, "ok" if ok else PROBLEM))
    if bad:
        rows.append(("  cases that should have passed or been not run here", "; ".join(bad[:3]), PROBLEM))
    return rows


def layout_rows(report: dict) -> list[tuple[str, str, str]]:
    """Each multi-process layout of the run: what happened to its cases."""
    here = report["devices_here"]
    layouts: dict[tuple[int, int], list[dict]] = {}
    for t in report["tasks"]:
        for c in t["cases"]:
            if c["processes"]:
                layouts.setdefault((c["processes"], c["devices"]), []).append(c)
    rows = []
    for (processes, devices), cases in sorted(layouts.items()):
        outcomes = sorted({c["outcome"] for c in cases})
        if fits(cases[0], report):
            text, ok = f"{', '.join(outcomes)} ({len(cases)} cases)", outcomes == ["passed"]
        else:
            text, ok = last_line(cases[0]["message"]), all(c["kind"] == "not_run" for c in cases)
        unit = ("device" if here is None else "chip" if report.get("backend") == "tpu" else "GPU") + (
            "s" if devices > 1 else "")
        rows.append((f"multihost: {processes} processes x {devices} {unit} each", text, "ok" if ok else PROBLEM))
    return rows


def auto_rows(label: str, report: dict) -> list[tuple[str, str, str]]:
    """The mixed run: every case graded and passed, and each configuration ran where --backend auto sends it
    (on the machine's devices when they are enough, else on emulated CPU devices), one row per place."""
    here, chose = report["devices_here"], report["backend"]
    chosen = sum(left_out(c) for t in report["tasks"] for c in t["cases"])
    not_run = sum(t["not_run"] for t in report["tasks"]) - chosen
    full = not not_run and all(t["score"] == t["max_score"] and (chosen or t["max_score"] == t["points"])
                               for t in report["tasks"])
    text = f"{report['score']:g} / {report['max_score']:g}; " + (
        "every case graded" if not not_run else f"{not_run} cases not run here") + (
        f" ({chosen} left out by --devices)" if chosen else "")
    rows = [(label, text, "ok" if full else PROBLEM)]
    places: dict[str, list[str]] = {}
    for p in report["ran_on"]:
        layout = f"{p['processes']}x{p['devices']}" if p["processes"] else str(p["devices"])
        places.setdefault(p["where"], []).append(layout)
        expected = chose if here is not None and fits(p, report) else "cpu"
        if p["backend"] != expected:
            rows.append((f"  {layout} devices", f"ran on {p['backend']}, expected {expected}", PROBLEM))
    rows += [(f"  ran on {where}", f"devices: {', '.join(layouts)}", "") for where, layouts in places.items()]
    return rows


def hlo_text(result: dict) -> tuple[str, str]:
    """What hlo read in the programs compiled on the backend, and whether it is what the programs do."""
    forms = ", ".join(f"{n} {f.rstrip('(')}" for f, n in result["forms"].items() if n) or "no library calls"
    reduce_ok = (result["all_reduces"], result["all_reduce_bytes"]) == (1, 8 * 4) or result["devices"] == 1
    ok = result["matmul_work"] == MATMUL_WORK and reduce_ok
    text = (f"{result['platform']}: matmul work {result['matmul_work']} (expected {MATMUL_WORK}); psum over "
            f"{result['devices']} devices: {result['all_reduces']} all-reduce of {result['all_reduce_bytes']} bytes; "
            f"forms seen: {forms}")
    return text, "ok" if ok else PROBLEM


def ratio_text(name: str, run: dict | None) -> str:
    """``gpu 1.32 (17.1 s / 13.0 s, 60 cases)``: wall / floor of one run, or "" if the run did not happen.

    The case count says how much each backend ran: cases not run here leave a real backend's floor lower.
    """
    if not run or "figures" not in run:
        return ""
    wall, floor, cases = run["figures"]["wall_s"], run["figures"]["report_worker_s"], cases_run(run["report"]["tasks"])
    ratio = f"{wall / floor:.2f}" if floor else "floor 0"
    return f"{name} {ratio} ({wall:.1f} s / {floor:.1f} s, {cases} cases)"


def memory_rows(summary: dict) -> list[tuple[str, str, str]]:
    """What nvidia-smi saw during a grade run: the most one process held, and the most shared GPU."""
    per_process = summary["per_process_peak_mib"]
    busiest = max(summary["per_gpu"].items(), key=lambda kv: kv[1]["most_processes"], default=None)
    label = "peak GPU memory per worker process (nvidia-smi)"
    if per_process:
        rows = [(label, f"{max(per_process.values()):.0f} MiB at most, {len(per_process)} processes seen", "")]
    else:
        rows = [(label, "nvidia-smi listed no processes (in a container it may not see them)", "")]
    if busiest:
        index, gpu = busiest
        rows.append((f"  GPU {index}, the most shared", f"{gpu['most_processes']} processes at once, "
                     f"{gpu['peak_used_mib']:.0f} of {gpu['total_mib']:.0f} MiB used at most", ""))
    return rows


def reported(proc: subprocess.Popen) -> dict | None:
    """The JSON line a pressure process prints once it holds its memory; None if it exits first."""
    for line in proc.stdout:
        if line.startswith("{"):
            return json.loads(line)
    return None


def pressure(python: str, backend: str, count: int, budget: Budget) -> dict:
    """``count`` processes with the workers' one-device settings, each holding memory, all at once."""
    settings, _ = ask_python(python, WORKER_SETTINGS, backend)
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           "TF_CPP_MIN_LOG_LEVEL": "2", "JAX_PLATFORMS": "cpu", **settings}
    code = PRESSURE.format(n=PRESSURE_MIB << 18)
    procs = [subprocess.Popen([python, "-c", code], cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(count)]
    out_of_time = threading.Event()

    def stop_all() -> None:
        out_of_time.set()
        for p in procs:
            p.kill()

    killer = threading.Timer(max(budget.left(), 1.0), stop_all)
    killer.start()
    try:
        reports = [reported(p) for p in procs]
        together = sample() if backend == "gpu" else None
        for p in procs:
            p.stdin.close()
        errors = [last_line(p.stderr.read()) for p, r in zip(procs, reports) if r is None]
        for p in procs:
            p.wait()
    finally:
        killer.cancel()
    return {"settings": settings, "mib_each": PRESSURE_MIB, "reports": reports, "errors": errors, "sample": together,
            "out_of_time": out_of_time.is_set()}


def pressure_text(result: dict) -> tuple[str, str]:
    """The result and verdict of the pressure check, led by the memory settings the workers get."""
    shown = " ".join(f"{k}={v}" for k, v in result["settings"].items() if k.startswith("XLA_"))
    ran = [r for r in result["reports"] if r]
    if len(ran) < len(result["reports"]):
        if result["out_of_time"]:
            return f"{len(ran)} of {len(result['reports'])} ran before the time limit stopped them", INCOMPLETE
        return f"{len(ran)} of {len(result['reports'])} ran: {result['errors'][0]}", PROBLEM
    text = f"{shown or 'no memory settings'}: all ran at once, {result['mib_each']} MiB each"
    if ran[0]["peak_bytes"] is not None:
        text += f"; JAX peak {mib(max(r['peak_bytes'] for r in ran))}, limit {mib(ran[0]['limit_bytes'])} each"
    if result["sample"]:
        text += f"; GPU used {max(v or 0 for v in result['sample']['gpus'].values()):.0f} MiB in all"
    return text, "ok"


# ---- the check ------------------------------------------------------------------------------------

class Check:
    """The table being built, the raw record behind it, and the grade runs both come from."""

    def __init__(self, a: argparse.Namespace, python: str, budget: Budget):
        self.a, self.python, self.budget = a, python, budget
        self.grade = [python, "-m", "grader"]
        self.rows: list[tuple[str, str, str]] = [("check", "result", "verdict")]
        self.raw: dict = {"runs": {}}
        self.tasks = [f"--task={t}" for t in a.task]
        self.devices = ["--devices", a.devices] if a.devices else []

    def add(self, *rows: tuple[str, str, str]) -> None:
        self.rows.extend(rows)

    def run(self, name: str, label: str, submission: str, extra: list[str], sampler: MemorySampler | None = None):
        """One grade run, recorded under ``name``; its report, or None after adding a row saying why not."""
        skipped = self.budget.spent()
        if skipped:
            self.add((label, *skipped))
            return None
        try:
            with sampler or MemorySampler(False):
                wall, report = grade_report(ROOT / submission, extra, self.a.seed, DEBUG, grade=self.grade,
                                            timeout_s=self.budget.left())
        except GradeFailed as exc:
            self.raw["runs"][name] = {"extra": extra, "error": str(exc)}
            verdict = INCOMPLETE if isinstance(exc, GradeTimedOut) else PROBLEM
            self.add((label, f"failed: {last_line(str(exc))}", verdict))
            return None
        self.raw["runs"][name] = {"extra": extra, "figures": floor_figures(wall, report), "report": report}
        return report



def see(check: Check) -> None:
    """Rows: what the driver and JAX see, and what --backend auto chose."""
    known = [] if check.a.backend == "tpu" else gpus()
    check.raw["nvidia_smi"] = known
    if check.a.backend == "tpu":
        files = sorted(glob.glob("/dev/accel[0-9]*") + glob.glob("/dev/vfio/[0-9]*"))
        kind = os.environ.get("TPU_ACCELERATOR_TYPE")
        check.add(("the TPU's device files", (", ".join(files) or "none found") + (
            f"; TPU_ACCELERATOR_TYPE={kind}" if kind else ""), ""))
    elif known:
        names = sorted({g["name"] for g in known})
        check.add(("driver (nvidia-smi) sees", f"{len(known)} x {', '.join(names)}, "
                   f"{known[0]['total_mib']:.0f} MiB each", ""))
    else:
        check.add(("driver (nvidia-smi) sees", "skipped: no nvidia-smi on this machine, or it found no GPU", ""))
    skipped = check.budget.spent()
    if skipped:
        check.add(("JAX sees", *skipped))
        return
    try:
        view, warnings = ask_python(check.python, JAX_VIEW, env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
                                    timeout_s=min(120, check.budget.left()))
    except GradeFailed as exc:
        check.add(("JAX sees", f"failed: {exc}", PROBLEM))
        return
    check.raw["jax"] = {**view, "stderr": warnings}
    packages = ", ".join(f"{k} {v}" for k, v in view["packages"].items() if v)
    text = (f"{view['count']} x {view['device_kind']} ({view['platform']}, default backend "
            f"{view['default_backend']}); {packages}")
    if check.a.backend != "cpu" and view["default_backend"] != check.a.backend:  # e.g. a jaxlib without CUDA
        check.add(("JAX sees", f"{text}; {last_line(warnings) or 'no ' + check.a.backend.upper()}", PROBLEM))
    else:
        check.add(("JAX sees", text, ""))
    fewest = (check.a.devices or "1").split(",")[0]
    report = check.run("auto", "--backend auto chose", "solutions",
                       ["--task=devices", "--devices", fewest, "--backend", "auto"])
    if report:
        expected = view["default_backend"] if view["default_backend"] in ("gpu", "tpu") else "cpu"
        here = "any count (emulated)" if report["devices_here"] is None else f"{report['devices_here']} here"
        check.add(("--backend auto chose", f"{report['backend']} ({report['platform']}, {report['device_kind']}, "
                   f"devices: {here})", "ok" if report["backend"] == expected else f"{PROBLEM}: expected {expected}"))


def grade_on_backend(check: Check, backend: str) -> None:
    """Rows: solutions and stubs on the backend, the multi-process layouts, GPU memory (on a TPU: the processes
    holding the chip), what confined the workers."""
    on_gpu = backend == "gpu"
    extra = [*check.tasks, *check.devices, "--backend", backend]
    sampler = chip_sampler(check) or MemorySampler(on_gpu and bool(check.raw["nvidia_smi"]))
    label = f"grade --submission solutions --backend {backend}"
    solutions = check.run(f"solutions_{backend}", label, "solutions", extra, sampler)
    if solutions:
        check.add(*score_rows(label, solutions, expect_full=True))
        check.add(*(layout_rows(solutions) or [("multihost layouts", "skipped: task multihost was not graded", "")]))
        held = solutions["sandbox"]
        check.add(("  what confined its workers (report)", f"{', '.join(held['held']) or 'nothing'}; not: "
                   f"{', '.join(held['missing']) or 'nothing'}", ""))
    label = f"grade --submission exercises (the stubs) --backend {backend}"
    stubs = check.run(f"stubs_{backend}", label, "exercises", extra)
    if stubs:
        check.add(*score_rows(label, stubs, expect_full=False))
    if solutions:
        check.add(("peak resident memory of one worker (report)", f"{solutions['timing']['worker_rss_mb']:.0f} MB", ""))
    if sampler.look is chip_holders:
        check.raw["tpu_holders"] = {"solutions": sampler.samples}
        check.add(holders_row(f"--backend {backend}", sampler.samples))
    elif sampler.enabled:
        check.raw["gpu_memory"] = summarise(sampler.samples, check.raw["nvidia_smi"])
        check.add(*memory_rows(check.raw["gpu_memory"]))
    else:
        reason = "the backend is cpu" if not on_gpu else "no nvidia-smi to sample"
        check.add(("peak GPU memory per worker process", f"skipped: {reason}", ""))


def grade_mixed(check: Check) -> None:
    """Rows: the solutions graded with --backend auto, each configuration on the accelerators or emulated."""
    label = "grade --submission solutions --backend auto"
    sampler = chip_sampler(check)
    report = check.run("solutions_auto", label, "solutions", [*check.tasks, *check.devices, "--backend", "auto"],
                       sampler)
    if report:
        check.add(*auto_rows(label, report))
    if sampler:  # the emulated workers run beside the one on the chip: none of them may open it
        check.raw.setdefault("tpu_holders", {})["auto"] = sampler.samples
        check.add(holders_row("--backend auto", sampler.samples))


def chip_sampler(check: Check) -> MemorySampler | None:
    """On a TPU, a sampler of the processes holding the chip; else None."""
    return MemorySampler(True, chip_holders) if check.a.backend == "tpu" else None


def sandbox_here(check: Check) -> None:
    """Rows: what a worker can be confined by on this machine, and what ``--require-sandbox basic`` (the default of
    grade batch and autograde, which grade other people's code) does here: grade, or refuse before any worker."""
    label = "sandbox on this machine (grade check's survey)"
    if check.budget.spent():
        check.add((label, *check.budget.spent()))
        return
    try:
        here, _ = ask_python(check.python, SANDBOX_HERE, timeout_s=min(60, check.budget.left()))
    except GradeFailed as exc:
        check.add((label, f"failed: {exc}", PROBLEM))
        return
    check.raw["sandbox_here"] = here
    check.add((label, f"meets --require-sandbox {here['meets']}; held: {', '.join(here['held']) or 'nothing'}; "
               f"not: {', '.join(here['missing']) or 'nothing'} (reasons in the JSON)", ""))
    args = [*check.grade, "exercise7", "--submission", str(ROOT / "exercises"), "--task", "devices", "--devices", "1",
            "--backend", "cpu", "--require-sandbox", "basic", "--format", "json"]
    try:
        _, proc = timed(args, timeout_s=min(120, check.budget.left()))
    except subprocess.TimeoutExpired:
        check.add(("  grade --require-sandbox basic", "ran past its time limit", INCOMPLETE))
        return
    refused = proc.returncode == 2 and "--require-sandbox basic" in proc.stderr
    text = f"refused before any worker started: {last_line(proc.stderr)[:150]}" if refused else (
        "graded" if proc.returncode == 0 else f"exit {proc.returncode}: {last_line(proc.stderr)}")
    expected = here["meets"] == "none"
    check.add(("  grade --require-sandbox basic", text, "ok" if refused == expected and proc.returncode in (0, 2)
               else PROBLEM))


def read_hlo(check: Check, backend: str) -> None:
    """Row: what grader.suite.hlo reads in a matmul and a psum compiled on the backend."""
    label = "hlo reads programs compiled here"
    skipped = check.budget.spent()
    if skipped:
        check.add((label, *skipped))
        return
    env = {"JAX_PLATFORMS": {"gpu": "cuda", "tpu": "tpu"}.get(backend, "cpu"), "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
           "JAX_TRACEBACK_FILTERING": "off"}  # else the last line of a failure is JAX's note about filtering
    try:
        result, _ = ask_python(check.python, HLO_READ, backend, env=env, timeout_s=min(300, check.budget.left()))
    except GradeFailed as exc:
        check.add((label, f"failed: {exc}", PROBLEM))
        return
    check.raw["hlo"] = result
    check.add((label, *hlo_text(result)))


def timings(check: Check, backend: str) -> None:
    """Rows: wall / floor of the exercise and of one task, on the backend and on emulated CPU devices.

    The exercise on the backend is the solutions run above; on the cpu backend nothing is run twice.
    """
    task = check.a.timing_task
    compared = [backend] if backend == "cpu" else [backend, "cpu"]
    for b in compared:
        check.run(f"task_{b}", f"grade --task {task} --backend {b}", "solutions",
                  [f"--task={task}", *check.devices, "--backend", b])
    if backend != "cpu":
        label = "grade --submission solutions --backend cpu"
        report = check.run("solutions_cpu", label, "solutions", [*check.tasks, *check.devices, "--backend", "cpu"])
        if report:
            bad = case_problems(report)
            check.add((label, f"{report['score']:g} / {report['max_score']:g}" + (f"; {bad[0]}" if bad else ""),
                       PROBLEM if bad else "ok"))
    note = "the backend is cpu: nothing to compare" if backend == "cpu" else ""
    for label, run in ((f"the exercise ({', '.join(check.a.task) or 'every task'})", "solutions"),
                       (f"one task (--task {task})", "task")):
        parts = [ratio_text(b, check.raw["runs"].get(f"{run}_{b}")) for b in compared]
        check.add((f"wall / floor, {label}",
                   " · ".join(p for p in parts if p) or "no figures: its runs failed or were skipped (rows above)", note))


def check_pressure(check: Check, backend: str) -> None:
    """Row: many processes with the workers' one-device settings holding memory on one device at once."""
    n = check.a.workers
    label = f"{n} process{'es' if n != 1 else ''} with the workers' settings on one device"
    if backend == "tpu":
        check.add((label, "skipped: one process at a time may open a TPU chip (libtpu's lockfile); the rows of "
                   "processes holding the TPU check that the workers take turns", ""))
        return
    skipped = check.budget.spent()
    if skipped:
        check.add((label, *skipped))
        return
    try:
        check.raw["pressure"] = pressure(check.python, backend, check.a.workers, check.budget)
    except GradeFailed as exc:
        check.add((label, f"failed: {exc}", PROBLEM))
        return
    check.add((label, *pressure_text(check.raw["pressure"])))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("gpu", "tpu", "cpu"), default="gpu", help="where the checked grading runs")
    p.add_argument("--no-install", action="store_true", help="use the current interpreter instead of a fresh venv")
    p.add_argument("--venv", help="where to create the fresh venv (default: a new temporary folder, kept)")
    p.add_argument("--extra", choices=("cuda", "cuda13", "tpu"),
                   help="the extra to install (default: tpu for --backend tpu, else cuda)")
    p.add_argument("--pip-args", default="", help="more pip install arguments, e.g. --pip-args='--no-index --find-links DIR'")
    p.add_argument("--task", action="append", default=[], help="grade only this task (repeatable; default: all)")
    p.add_argument("--devices", help="device counts passed to every grade run, e.g. 1,2 (default: course.yaml)")
    p.add_argument("--timing-task", default="dot", help="the task of the one-task wall / floor figure")
    p.add_argument("--workers", type=int, default=8, help="processes in the one-device memory pressure check")
    p.add_argument("--time-limit", type=float, default=420.0, help="seconds for all checks after the install")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--output", default=str(ROOT / "bench" / "results" / "accelerator.json"), help="where to write JSON")
    a = p.parse_args(argv)
    a.extra = a.extra or ("tpu" if a.backend == "tpu" else "cuda")
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if a.no_install:
        setup = {"python": sys.executable}
        install_row = ("install", f"skipped: --no-install, using {sys.executable}", "")
    else:
        venv = Path(a.venv or tempfile.mkdtemp(prefix="accelerator-check-venv-"))
        setup = install(venv, a.extra, shlex.split(a.pip_args))
        install_row = (f"pip install -e '.[{a.extra}]' into a fresh venv",
                       f"failed: {setup['error']}" if "error" in setup else f"{setup['seconds']:.0f} s ({venv})",
                       PROBLEM if "error" in setup else "")
    check = Check(a, setup["python"], Budget(a.time_limit))
    check.add(install_row)
    check.raw.update(setup=setup, arguments=vars(a), started=started, commit=git_commit())
    if "error" not in setup:
        try:
            see(check)
            sandbox_here(check)
            grade_on_backend(check, a.backend)
            grade_mixed(check)
            read_hlo(check, a.backend)
            check_pressure(check, a.backend)
            timings(check, a.backend)
        except Exception as exc:  # noqa: BLE001 - the table so far and the JSON must still come out
            check.raw["crash"] = traceback.format_exc()
            check.add(("the check itself", f"crashed: {type(exc).__name__}: {exc} (traceback in the JSON)", PROBLEM))
    check.raw["rows"] = check.rows[1:]
    check.raw["machine"] = {"cpus": os.cpu_count(), "load_after": os.getloadavg(),
                            "seconds": a.time_limit - check.budget.left()}
    out = Path(a.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(check.raw, indent=2) + "\n")
    print(align(check.rows))
    graded = ", ".join(a.task) or "every task"
    command = " ".join(["python -m grader exercise7 --seed", str(a.seed), *check.devices])
    print(f"\ngrade runs: {command} and each row's options; "
          f"solutions and stubs: {graded} · commit {check.raw['commit']} · {os.cpu_count()} cores · the checks took "
          f"{check.raw['machine']['seconds']:.0f} s of {a.time_limit:.0f} · raw figures: {out}")
    return 1 if any(r[2].startswith((PROBLEM, INCOMPLETE)) for r in check.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
