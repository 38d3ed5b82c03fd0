"""The `grade` command end to end: listing, options, reports, exit codes and usage errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from conftest import GRADE, ROOT, grade_json, run_grade, task
from toycourse import make_course


def test_list_shows_exercises_tasks_and_points():
    proc = run_grade("list")
    assert proc.returncode == 0, proc.stderr
    assert "exercise7: Parallelization with jax.pmap" in proc.stdout
    assert any(line.split()[:3] == ["dot", "15", "pts"] or line.split()[:3] == ["dot", "20", "pts"]
               for line in proc.stdout.splitlines())


def test_a_reader_that_stops_reading_is_not_a_grader_error():
    """`grade list | head -1`: head may exit before grade has written everything. Here the pipe's read
    end is closed before grade starts, so every write finds no reader, every time."""
    read, write = os.pipe()
    os.close(read)
    proc = subprocess.run(GRADE + ["list"], cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


def test_unknown_exercise_is_a_usage_error_naming_the_nearest():
    proc = run_grade("exercise9")
    assert proc.returncode == 2
    assert "no exercise 'exercise9' (did you mean exercise" in proc.stderr and "; known: exercise7" in proc.stderr
    proc = run_grade("exercse7")
    assert proc.returncode == 2 and "no exercise 'exercse7' (did you mean exercise7?); known:" in proc.stderr
    proc = run_grade("release", "exrecise7", "--out", "unused")
    assert proc.returncode == 2 and "(did you mean exercise7?)" in proc.stderr
    proc = run_grade("zzz")
    assert proc.returncode == 2 and "did you mean" not in proc.stderr


def test_a_near_miss_of_a_command_is_named_and_help_of_no_exercise_is_an_error(tmp_path):
    proc = run_grade("batc", "submissions", "--exercise", "exercise7")
    assert proc.returncode == 2 and "no command or exercise 'batc': did you mean `grade batch`?" in proc.stderr
    proc = run_grade("chek", cwd=tmp_path)  # outside any course: still the command it resembles
    assert proc.returncode == 2 and "no command 'chek': did you mean `grade check`?" in proc.stderr
    proc = run_grade("exercise9", "--help")
    assert proc.returncode == 2 and "no exercise 'exercise9'" in proc.stderr and "known: exercise7" in proc.stderr
    assert proc.stdout == ""
    proc = run_grade("ex1", "--help", "--course", str(make_course(tmp_path / "toy")), cwd=tmp_path)
    assert proc.returncode == 0 and "Grade ex1" in proc.stdout


def test_unknown_task_and_missing_submission_are_usage_errors(tmp_path):
    proc = run_grade("exercise7", "--task", "nope")
    assert proc.returncode == 2 and "no task 'nope' in exercise7; known:" in proc.stderr
    proc = run_grade("exercise7", "--submission", str(tmp_path / "absent"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    proc = run_grade("exercise7", "--devices", "two")
    assert proc.returncode == 2 and "--devices takes device counts" in proc.stderr


def test_malformed_course_is_a_usage_error_naming_file_and_line(tmp_path):
    (tmp_path / "course.yaml").write_text("course: broken\nexercises:\n  ex:\n    title: t\n    tasks: 3\n")
    proc = run_grade("ex", "--course", str(tmp_path))
    assert proc.returncode == 2
    assert "course.yaml:5: exercises.ex.tasks: expected a non-empty list of tasks, got 3" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_stubs_are_not_started_and_text_report_says_so():
    proc = run_grade("exercise7", "--task", "dot", "--devices", "2", "--seed", "5")
    assert proc.returncode == 0, proc.stderr
    assert "not started" in proc.stdout
    assert "distributed_dot() still raises NotImplementedError (dot.py:" in proc.stdout
    assert "hint:" in proc.stdout and "seed 5" in proc.stdout and "reproduce: grade exercise7 --seed 5" in proc.stdout
    assert "reproduce: grade exercise7 --seed 5 --task dot --devices 2\n" in proc.stdout  # the same tasks, devices


def test_fail_under_output_and_exit_codes(tmp_path):
    out = tmp_path / "r.json"
    proc = run_grade("exercise7", "--task", "dot", "--devices", "1", "--fail-under", "50", "--format", "json",
                     "--output", str(out))
    assert proc.returncode == 1
    assert proc.stdout == "" and "report written to" in proc.stderr
    assert re.search(r"exercise7: 0 / [\d.]+ \(0%\), seed", proc.stderr)
    assert json.loads(out.read_text())["score"] == 0
    proc = run_grade("exercise7", "--task", "ring_optimal", "--devices", "4", "--output", str(out))
    assert "exercise7: 0 extra credit, seed" in proc.stderr  # no maximum to take a share of (a TPU run said "0 / 0")
    proc = run_grade("exercise7", "--task", "dot", "--devices", "1", "--fail-under", "100", "--submission", "solutions")
    assert proc.returncode == 0, proc.stderr


def test_devices_override_and_flat_submission_folder(tmp_path):
    flat = tmp_path / "flat"
    shutil.copytree(ROOT / "solutions" / "exercise7", flat)
    report = grade_json(flat, "--task", "dot", "--devices", "3,2")
    dot = task(report, "dot")
    assert dot["score"] == dot["max_score"]
    assert sorted({c["devices"] for c in dot["cases"]}) == [2, 3]
    assert report["jax_version"].startswith("0.")


def test_a_test_marked_for_other_device_counts_is_left_out_not_run_at_the_count_asked():
    """dot's structural test runs at 2, 4 and 8 devices (one device splits nothing: there is no structure to
    measure, and an accelerator's compiler drops a one-device all-reduce); --devices 1 leaves it out, said so,
    and the maximum is scaled to the cases run."""
    dot = task(grade_json(ROOT / "solutions", "--task", "dot", "--devices", "1"), "dot")
    left_out = [c for c in dot["cases"] if c["outcome"] == "skipped"]
    assert [(c["name"], c["message"]) for c in left_out] == [
        ("test_dot_uses_one_all_reduce[1dev]", "left out by --devices 1: it is graded at device counts 2, 4 or 8")]
    assert dot["score"] == dot["max_score"] < dot["points"]


def test_same_seed_same_inputs(make_submission):
    wrong = make_submission({"dot": """
        import jax.numpy as jnp

        def distributed_dot(x, y):
            return jnp.dot(x, y) + 1.0
        """})
    first = grade_json(wrong, "--task", "dot", "--devices", "2", seed=99)
    second = grade_json(wrong, "--task", "dot", "--devices", "2", seed=99)
    other = grade_json(wrong, "--task", "dot", "--devices", "2", seed=100)
    messages = [[c["message"] for c in task(r, "dot")["cases"]] for r in (first, second, other)]
    assert messages[0] == messages[1]
    assert messages[0] != messages[2]
    assert first["seed"] == 99


def test_worker_that_cannot_start_is_a_grader_error_not_a_student_verdict(tmp_path):
    shutil.copytree(ROOT / "tests" / "exercise7", tmp_path / "tests" / "exercise7")
    shutil.copytree(ROOT / "solutions" / "exercise7", tmp_path / "exercises" / "exercise7")
    # 8 MB: too little for a worker to start at all (with a memory cgroup, a worker forked from the zygote is
    # charged only what it touches after the fork, so a limit of tens of MB still starts one)
    course = (ROOT / "course.yaml").read_text().replace("memory_mb: 4096", "memory_mb: 8")
    assert "memory_mb: 8 " in course
    (tmp_path / "course.yaml").write_text(course)
    proc = run_grade("exercise7", "--course", str(tmp_path), "--task", "dot", "--devices", "1")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "grader error: start-up exceeded the 8 MB memory limit (1 device)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_task_takes_a_comma_list_and_the_reproduce_line_repeats_the_options_given(tmp_path):
    root = make_course(tmp_path / "course")
    proc = run_grade("ex1", "--course", str(root), "--task", "add,scale", "--seed", "5", "--backend", "cpu",
                     "--timeout", "7")
    assert proc.returncode == 0, proc.stderr
    assert "add " in proc.stdout and "scale " in proc.stdout
    assert f"reproduce: grade ex1 --seed 5 --backend cpu --timeout 7 --course {root}\n" in proc.stdout
    one = run_grade("ex1", "--course", str(root), "--task", "add", "--devices", "1", "--seed", "5",
                    "--submission", str(root / "solutions"))
    assert f"reproduce: grade ex1 --seed 5 --task add --devices 1 --submission {root / 'solutions'} --course {root}\n" \
        in one.stdout


def test_a_task_given_as_an_exercise_gets_the_command_that_grades_it():
    proc = run_grade("dot")
    assert proc.returncode == 2
    assert "did you mean `grade exercise7 --task dot`?" in proc.stderr
    batch = run_grade("batch", "nowhere", "--exercise", "ring")
    assert batch.returncode == 2
    assert "did you mean `grade batch ... --exercise exercise7 --task ring`?" in batch.stderr


def test_no_message_counts_with_a_plural_by_hand():
    """Counts in messages go through layout.plural, so "1 devices" cannot be written (issue 13)."""
    by_hand = re.compile(r"(?<![/{])\{(?!kind\})[^{}]*\} (devices|cases|tasks|submissions|students|gradebooks|jobs|processes|"
                         r"entries|problems|errors)\b")
    hedged = re.compile(r"\{[^{}]*\} [\w ]*\w\(s\)")  # "{n} test(s)": say it right instead
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in sorted((ROOT / "grader").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if by_hand.search(line) or hedged.search(line)]
    assert not found, "\n".join(found)
