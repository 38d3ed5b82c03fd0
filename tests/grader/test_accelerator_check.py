"""bench/accelerator_check.py: it runs end to end on CPU, and its GPU verdicts judge reports rightly.

No GPU is needed: the script runs with ``--backend cpu --no-install`` on a small subset, with
``--backend gpu`` on this GPU-less machine (every GPU row must then be a PROBLEM with the grader's
own reason), and its verdict and nvidia-smi logic is fed reports and samples shaped like a
one-GPU machine's.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT
from fake_machine import grade_on_a_machine_with

sys.path.insert(0, str(ROOT / "bench"))
import accelerator_check as ac  # noqa: E402 - bench/ is not a package
import measure  # noqa: E402

SCRIPT = ROOT / "bench" / "accelerator_check.py"


def run_check(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "accelerator.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--no-install", "--output", str(out), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    return proc, json.loads(out.read_text())


def rows(raw: dict) -> dict[str, tuple[str, str]]:
    return {check: (result, verdict) for check, result, verdict in raw["rows"]}


def test_the_cpu_run_grades_the_subset_and_skips_each_gpu_row_with_a_reason(tmp_path):
    proc, raw = run_check(tmp_path, "--backend", "cpu", "--task", "dot", "--task", "multihost", "--devices", "1,2",
                          "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = rows(raw)
    assert table["--backend auto chose"][1] == "ok" and raw["runs"]["auto"]["report"]["backend"] == "cpu"
    assert table["JAX sees"][1] == "" and raw["jax"]["default_backend"] == "cpu"
    solutions, stubs = raw["runs"]["solutions_cpu"]["report"], raw["runs"]["stubs_cpu"]["report"]
    assert {t["id"]: t["score"] for t in solutions["tasks"]} == {"dot": 15, "multihost": 5}
    assert {t["id"]: t["score"] for t in stubs["tasks"]} == {"dot": 0, "multihost": 0}
    assert {c["devices"] for t in solutions["tasks"] for c in t["cases"]} == {1, 2}
    multihost = next(t for t in solutions["tasks"] if t["id"] == "multihost")
    for processes, devices in ((2, 2), (4, 1)):
        cases = sum(c["processes"] == processes for c in multihost["cases"])
        assert cases > 0
        label = f"multihost: {processes} processes x {devices} device{'s' if devices > 1 else ''} each"
        assert table[label] == (f"passed ({cases} cases)", "ok")
    assert table["peak GPU memory per worker process"][0] == "skipped: the backend is cpu"
    assert table["grade --submission solutions --backend auto"] == ("20 / 15; every case graded", "ok")
    assert table["  ran on emulated CPU devices"] == ("devices: 1, 2, 2x2, 4x1", "")
    assert table["hlo reads programs compiled here"][1] == "ok"
    assert raw["hlo"]["matmul_work"] == ac.MATMUL_WORK and raw["hlo"]["all_reduces"] == 1
    assert table["install"][0] == f"skipped: --no-install, using {sys.executable}"
    pressure = raw["pressure"]
    assert pressure["settings"] == {} and [r["platform"] for r in pressure["reports"]] == ["cpu", "cpu"]
    for label in ("wall / floor, the exercise (dot, multihost)", "wall / floor, one task (--task dot)"):
        assert table[label][0].startswith("cpu ") and "nothing to compare" in table[label][1]
    assert raw["runs"]["task_cpu"]["figures"]["report_worker_s"] > 0
    printed = [line.split("  ") for line in proc.stdout.splitlines()]
    assert ["grade --submission solutions --backend cpu", "20 / 15"] in [[p for p in line if p] for line in printed]


def test_asking_for_a_gpu_that_is_not_there_makes_every_gpu_row_a_problem_with_the_reason(tmp_path):
    proc, raw = run_check(tmp_path, "--backend", "gpu", "--task", "dot", "--devices", "1", "--workers", "1")
    assert proc.returncode == 1
    table = rows(raw)
    for label in ("grade --submission solutions --backend gpu", "grade --submission exercises (the stubs) --backend gpu",
                  "grade --task dot --backend gpu", "1 process with the workers' settings on one device"):
        result, verdict = table[label]
        assert verdict == ac.PROBLEM and "JAX sees no GPU" in result, label
    assert table["JAX sees"][1] == ac.PROBLEM and "default backend cpu" in table["JAX sees"][0]
    assert table["hlo reads programs compiled here"][1] == ac.PROBLEM  # no CUDA to compile for
    assert table["grade --submission solutions --backend auto"] == (
        "10.7143 / 10.7143; every case graded (1 left out by --devices)", "ok")  # dot's structural test: 2+ devices
    assert table["grade --submission solutions --backend cpu"] == ("10.7143 / 10.7143", "ok")
    assert table["wall / floor, one task (--task dot)"][0].startswith("cpu ")


def test_a_time_limit_leaves_steps_out_and_says_so(tmp_path):
    proc, raw = run_check(tmp_path, "--backend", "cpu", "--time-limit", "0")
    assert proc.returncode == 1
    left_out = [(check, result) for check, result, verdict in raw["rows"] if verdict == ac.INCOMPLETE]
    assert {check for check, _ in left_out} >= {"JAX sees", "grade --submission solutions --backend cpu"}
    assert all(result == "skipped: the time limit (0 s) was reached" for _, result in left_out)
    assert raw["runs"] == {}


def test_a_failed_install_is_a_problem_with_pips_reason_and_nothing_is_graded(tmp_path):
    out = tmp_path / "accelerator.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--venv", str(tmp_path / "venv"), "--pip-args=--no-such-option",
                           "--output", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    raw = json.loads(out.read_text())
    assert raw["rows"] == [["pip install -e '.[cuda]' into a fresh venv",
                            "failed: pip exited 2: no such option: --no-such-option", ac.PROBLEM]]
    assert (tmp_path / "venv" / "bin" / "python").exists() and raw["runs"] == {}


def test_a_crash_of_the_check_itself_still_prints_the_table_and_writes_the_json(tmp_path, monkeypatch, capsys):
    def crash(check):
        raise KeyError("platform")

    monkeypatch.setattr(ac, "see", crash)
    out = tmp_path / "accelerator.json"
    assert ac.main(["--backend", "cpu", "--no-install", "--output", str(out)]) == 1
    raw = json.loads(out.read_text())
    assert raw["rows"][-1] == ["the check itself", "crashed: KeyError: 'platform' (traceback in the JSON)", ac.PROBLEM]
    assert "in crash" in raw["crash"] and "the check itself" in capsys.readouterr().out


def test_a_process_past_its_time_limit_is_interrupted_then_killed(monkeypatch):
    began = ac.time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):  # SIGINT: Python stops sleeping at once
        measure.timed([sys.executable, "-c", "import time; time.sleep(60)"], timeout_s=0.5)
    monkeypatch.setattr(measure, "INTERRUPT_GRACE_S", 0.5)
    deaf = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('deaf', flush=True); time.sleep(60)"
    with pytest.raises(subprocess.TimeoutExpired):  # SIGINT ignored: SIGKILL after the grace
        measure.timed([sys.executable, "-c", deaf], timeout_s=1.0)
    assert ac.time.monotonic() - began < 10


def test_a_grade_run_stopped_by_the_time_limit_is_incomplete_not_a_problem(monkeypatch):
    def too_slow(*args, **kwargs):
        raise measure.GradeTimedOut("grade exercise7 ran past its time limit of 12 s")

    monkeypatch.setattr(ac, "grade_report", too_slow)
    check = ac.Check(ac.argparse.Namespace(task=[], devices=None, seed=1), sys.executable, ac.Budget(60))
    assert check.run("solutions_gpu", "solutions", "solutions", []) is None
    assert check.rows[-1] == ("solutions", "failed: grade exercise7 ran past its time limit of 12 s", ac.INCOMPLETE)


def test_pressure_processes_stopped_by_the_time_limit_are_incomplete():
    result = {"settings": {}, "mib_each": 256, "reports": [None, None], "errors": ["", ""], "sample": None}
    assert ac.pressure_text({**result, "out_of_time": True})[1] == ac.INCOMPLETE
    assert ac.pressure_text({**result, "errors": ["RESOURCE_EXHAUSTED: out of memory"] * 2, "out_of_time": False}) == (
        "0 of 2 ran: RESOURCE_EXHAUSTED: out of memory", ac.PROBLEM)


def _case(name, devices, outcome, processes=None, message=""):
    return {"name": name, "devices": devices, "processes": processes, "outcome": outcome,
            "kind": "not_run" if outcome == "skipped" else ("" if outcome == "passed" else "wrong"),
            "message": message}


def _report(cases, here=1, score=None):
    """A one-task report as grade writes it on a machine with ``here`` real devices."""
    run = [c for c in cases if c["kind"] != "not_run"]
    scaled = 10.0 * len(run) / len(cases)
    total = scaled if score is None else score
    return {"devices_here": here, "score": total, "max_score": scaled, "full_max_score": 10.0,
            "tasks": [{"id": "dot", "score": total, "max_score": scaled, "points": 10.0,
                       "not_run": len(cases) - len(run), "cases": cases}]}


ONE_GPU = [_case("t[1dev]", 1, "passed"),
           _case("t[2dev]", 2, "skipped", message="not run here (needs 2 devices, this machine has 1)"),
           _case("t[2x1]", 1, "skipped", processes=2, message="not run here (needs 2 devices, this machine has 1)")]


def test_a_real_report_from_a_machine_with_two_devices_is_ok():
    report = grade_on_a_machine_with(2)["report"]
    assert ac.case_problems(report) == []
    head, dot = ac.score_rows("solutions", report, expect_full=True)
    assert head[1].endswith(f", maximum scaled from {report['full_max_score']:g}")
    assert dot[1].endswith("not run here at 4 devices (this machine has 2)") and dot[2] == "ok"


def test_a_one_gpu_run_that_leaves_out_what_does_not_fit_is_ok():
    report = _report(ONE_GPU)
    assert ac.case_problems(report) == []
    head, task = ac.score_rows("solutions", report, expect_full=True)
    assert head[1] == "3.33333 / 3.33333, maximum scaled from 10"
    assert task == ("  dot", "3.33333 / 3.33333 of 10; 1 cases run, 2 not run here at 2 devices (this machine has 1)",
                    "ok")
    assert ac.layout_rows(report) == [("multihost: 2 processes x 1 GPU each",
                                       "not run here (needs 2 devices, this machine has 1)", "ok")]


def test_a_structural_case_left_out_at_one_device_is_not_a_problem():
    """On a TPU with one chip, `--devices 1` leaves out dot's structural test (XLA drops a one-device all-reduce
    there: nothing to measure); the check does not count it against the solutions."""
    left_out = _case("t[1dev]", 1, "skipped", message="left out by --devices 1: it is graded at device counts 2, 4 or 8")
    assert ac.case_problems(_report([ONE_GPU[0], left_out])) == []
    assert ac.case_problems(_report([ONE_GPU[0], {**left_out, "message": "not run here (no reason)"}])) != []


@pytest.mark.parametrize("wrong, why", [
    (_case("t[2dev]", 2, "passed"), "needs 2 devices of 1 but was passed"),  # ran on GPUs it does not have
    (_case("t[1dev]", 1, "failed", message="wrong value\nexpected 3"), "failed (expected 3)"),
    (_case("t[2dev]", 2, "skipped", message="not run here (needs 8 devices, this machine has 1)"), "needs 2 devices of 1"),
])
def test_a_reference_case_that_did_not_do_what_the_machine_allows_is_a_problem(wrong, why):
    report = _report([ONE_GPU[0], wrong], score=0.0)
    problems = ac.case_problems(report)
    assert len(problems) == 1 and why in problems[0]
    assert ac.score_rows("solutions", report, expect_full=True)[-1][2] == ac.PROBLEM


def test_a_mixed_run_on_one_gpu_that_graded_everything_where_it_belongs_is_ok():
    report = grade_on_a_machine_with(1, gpus=True)["report"]
    assert ac.auto_rows("auto", report) == [
        ("auto", f"{report['score']:g} / {report['max_score']:g}; every case graded", "ok"),
        ("  ran on fake GPU, 1 on this machine", "devices: 1", ""),
        ("  ran on emulated CPU devices", "devices: 2, 4", "")]


def _auto_report(ran_on, cases):
    report = _report(cases)
    return {**report, "backend": "gpu", "ran_on": ran_on}


def test_a_mixed_run_that_left_cases_out_or_put_them_in_the_wrong_place_is_a_problem():
    gpu = {"devices": 1, "processes": None, "backend": "gpu", "where": "NVIDIA H200, 1 on this machine"}
    misplaced = {"devices": 2, "processes": None, "backend": "gpu", "where": "NVIDIA H200, 1 on this machine"}
    both_passed = [_case("t[1]", 1, "passed"), _case("t[2]", 2, "passed")]
    rows_ = ac.auto_rows("auto", _auto_report([gpu, misplaced], both_passed))
    assert rows_[0][2] == "ok" and ("  2 devices", "ran on gpu, expected cpu", ac.PROBLEM) in rows_
    left_out = _auto_report([gpu], ONE_GPU)
    assert ac.auto_rows("auto", left_out)[0] == ("auto", "3.33333 / 3.33333; 2 cases not run here", ac.PROBLEM)


def test_hlo_that_misses_a_devices_whole_matmul_or_the_psum_is_a_problem():
    good = {"platform": "gpu", "devices": 2, "matmul_work": ac.MATMUL_WORK, "all_reduces": 1, "all_reduce_bytes": 32,
            "forms": {"custom-call(": 1, "__cublas$": 1, "-start(": 1}}
    text, verdict = ac.hlo_text(good)
    assert verdict == "ok" and "forms seen: 1 custom-call, 1 __cublas$, 1 -start" in text
    assert ac.hlo_text({**good, "matmul_work": 64 * 32})[1] == ac.PROBLEM  # the gemm not counted: only its result
    assert ac.hlo_text({**good, "all_reduces": 2})[1] == ac.PROBLEM  # an async pair counted twice
    assert ac.hlo_text({**good, "devices": 1, "all_reduces": 0, "all_reduce_bytes": 0})[1] == "ok"


def test_stubs_that_score_anything_are_a_problem():
    assert ac.score_rows("stubs", _report(ONE_GPU, score=0.0), expect_full=False)[1][2] == "ok"
    assert ac.score_rows("stubs", _report(ONE_GPU, score=1.0), expect_full=False)[1][2] == ac.PROBLEM


def test_nvidia_smi_samples_give_the_peak_per_process_and_the_busiest_gpu():
    known = [{"index": 0, "uuid": "GPU-a", "name": "H200", "total_mib": 143771.0},
             {"index": 1, "uuid": "GPU-b", "name": "H200", "total_mib": 143771.0}]
    samples = [{"gpus": {"GPU-a": 900.0, "GPU-b": 0.0}, "apps": [("11", "GPU-a", 450.0), ("12", "GPU-a", 450.0)]},
               {"gpus": {"GPU-a": 1300.0, "GPU-b": 500.0},
                "apps": [("11", "GPU-a", 700.0), ("12", "GPU-a", None), ("13", "GPU-a", 500.0), ("13", "GPU-b", 500.0)]}]
    summary = ac.summarise(samples, known)
    assert summary["per_process_peak_mib"] == {"11": 700.0, "12": 450.0, "13": 500.0}
    assert summary["per_gpu"][0] == {"most_processes": 3, "peak_used_mib": 1300.0, "total_mib": 143771.0}
    assert summary["per_gpu"][1]["most_processes"] == 1
    rows_ = ac.memory_rows(summary)
    assert rows_[0][1] == "700 MiB at most, 3 processes seen"
    assert rows_[1] == ("  GPU 0, the most shared", "3 processes at once, 1300 of 143771 MiB used at most", "")


def test_unreadable_nvidia_smi_figures_are_no_figure():
    assert ac.number("[N/A]") is None and ac.number("[Not Supported]") is None and ac.number("512") == 512.0


FAKE_SMI = """#!/bin/sh
# nvidia-smi as it answers on a one-H200 machine with one worker holding memory
case "$1" in
  --query-gpu=index,uuid,name,memory.total) echo "0, GPU-5f3c, NVIDIA H200, 143771" ;;
  --query-gpu=uuid,memory.used) echo "GPU-5f3c, 1024" ;;
  --query-compute-apps=pid,gpu_uuid,used_memory) echo "4242, GPU-5f3c, 612"; echo "4243, GPU-5f3c, [N/A]"
                                                  echo "No running processes found" ;;
  *) echo "unknown query $1" >&2; exit 2 ;;
esac
"""


def test_the_nvidia_smi_queries_and_the_sampler_read_what_nvidia_smi_prints(tmp_path, monkeypatch):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{ac.os.environ['PATH']}")
    known = ac.gpus()
    assert known == [{"index": 0, "uuid": "GPU-5f3c", "name": "NVIDIA H200", "total_mib": 143771.0}]
    with ac.MemorySampler(True) as sampler:
        ac.time.sleep(3 * ac.SAMPLE_INTERVAL_S)
    assert len(sampler.samples) >= 2
    summary = ac.summarise(sampler.samples, known)
    assert summary["per_process_peak_mib"] == {"4242": 612.0}
    assert summary["per_gpu"][0] == {"most_processes": 2, "peak_used_mib": 1024.0, "total_mib": 143771.0}


def test_without_nvidia_smi_there_is_no_gpu_and_no_sample(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert ac.gpus() == [] and ac.sample() == {"gpus": {}, "apps": []}


def test_asking_for_a_tpu_that_is_not_there_is_a_problem_and_no_chip_holder_or_pressure_is_claimed(tmp_path):
    proc, raw = run_check(tmp_path, "--backend", "tpu", "--task", "dot", "--devices", "1")
    assert proc.returncode == 1
    table = rows(raw)
    for label in ("grade --submission solutions --backend tpu", "grade --task dot --backend tpu"):
        assert table[label][1] == ac.PROBLEM and "JAX sees no TPU" in table[label][0], label
    assert table["JAX sees"][1] == ac.PROBLEM and table["JAX sees"][0].endswith("no TPU")
    assert table["the TPU's device files"][0].startswith("none found")
    assert table["grade --submission solutions --backend auto"] == (
        "10.7143 / 10.7143; every case graded (1 left out by --devices)", "ok")  # dot's structural test: 2+ devices
    assert table["  processes holding the TPU at once (--backend auto, /proc/PID/fd)"][1] == ""  # none seen
    assert "skipped: one process at a time may open a TPU chip" in table[
        "8 processes with the workers' settings on one device"][0]
    assert "pressure" not in raw and raw["arguments"]["extra"] == "tpu"
    here = raw["sandbox_here"]
    assert table["sandbox on this machine (grade check's survey)"][0].startswith(f"meets --require-sandbox {here['meets']}")
    assert table["  grade --require-sandbox basic"][1] == "ok"


def test_the_processes_holding_a_chip_are_read_from_their_open_files(tmp_path):
    lock = tmp_path / "libtpu_lockfile"  # what libtpu keeps open beside the chip's /dev/vfio/N or /dev/accelN
    lock.write_text("")
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(lock)!r}); input()"], stdin=subprocess.PIPE)
    try:
        for _ in range(100):
            if holder.pid in ac.chip_holders():
                break
            ac.time.sleep(0.05)
        assert holder.pid in ac.chip_holders()
    finally:
        holder.communicate(b"\n")
    assert holder.pid not in ac.chip_holders()
    assert all(ac.CHIP_FILES.search(p) for p in ("/dev/vfio/3", "/dev/accel0"))
    assert not any(ac.CHIP_FILES.search(p) for p in ("/dev/vfio/vfio", "/dev/null", "/tmp/libtpu_lockfile.txt"))


def test_two_processes_holding_the_chip_at_once_are_a_problem():
    label = "  processes holding the TPU at once (--backend tpu, /proc/PID/fd)"
    assert ac.holders_row("--backend tpu", [[], [11], [12], []]) == (
        label, "at most 1 (2 processes held it in turn; 4 samples)", "ok")
    assert ac.holders_row("--backend tpu", [[11], [11, 12]])[2] == ac.PROBLEM
    assert ac.holders_row("--backend tpu", [[], []])[2] == ""  # none seen: nothing to judge


def test_on_a_tpu_multi_process_layouts_are_not_run_here_whatever_the_chip_count():
    two_by_two = _case("m[2x2]", 2, "skipped", processes=2, message="multi-process layouts run on the cpu and gpu backends")
    report = {**_report([ONE_GPU[0], two_by_two], here=8), "backend": "tpu"}
    assert ac.case_problems(report) == []
    assert ac.layout_rows(report) == [("multihost: 2 processes x 2 chips each",
                                       "multi-process layouts run on the cpu and gpu backends", "ok")]
    place = {"devices": 2, "processes": 2, "backend": "cpu", "where": "emulated CPU devices"}
    passed = [_case("t[1]", 1, "passed"), _case("m[2x2]", 2, "passed", processes=2)]
    assert ac.auto_rows("auto", {**_report(passed, here=8), "backend": "tpu", "ran_on": [place]})[1:] == [
        ("  ran on emulated CPU devices", "devices: 2x2", "")]
