"""``grade batch`` end to end on a small class of exercise 7, resumable, with a gradebook."""

import csv
import io
import os
import shutil
import signal
import statistics
import subprocess
import time

import pytest

from classroom import dot_files, folder, graded_count, notebook, rows, source, tar_archive, zip_archive
from conftest import GRADE, ROOT, run_grade
from hangcourse import processes_under, wait_for
from grader.course import load_course
from grader.classroom.gradebook import Gradebook

SEED = "4242"
FAST = ("--exercise", "exercise7", "--task", "dot", "--devices", "1,2", "--seed", SEED)
DOT = load_course(str(ROOT / "course.yaml")).exercise("exercise7").task("dot").points
# test_dot_matches_numpy and test_dot_other_lengths have 10 cases (5 lengths x 2 device counts, weight 1),
# test_dot_uses_one_all_reduce 1 case of weight 2 (course.yaml; it runs from 2 devices on). "partial" passes only
# the former.
PARTIAL = round(DOT * 10 / (10 + 2), 4)
EXPECTED = {  # student: (status, score, what the task status or the refusal says)
    "alice": ("graded", DOT, "passed"),
    "bob": ("graded", PARTIAL, "partial"),
    "carol": ("graded", 0.0, "import error"),
    "dan": ("graded", 0.0, "crashed"),
    "erin": ("refused", 0.0, "archive entry '../escape.py' points outside the submission folder"),
    "fay": ("refused", 0.0, "archive is empty"),
    "gus": ("refused", 0.0, "2 submissions for this student id"),
    "hal": ("graded", DOT, "passed"),
    "ivy": ("graded", DOT, "passed"),
}


def make_class(parent):
    """One of each: correct, partly correct, broken, crashing, escaping, empty, duplicate id, nested, notebook."""
    folder(parent, "alice", dot_files("correct"))
    folder(parent, "bob", dot_files("partial"))
    zip_archive(parent / "carol.zip", dot_files("broken"))
    tar_archive(parent / "dan.tar.gz", dot_files("crashing", prefix="dan/"))
    zip_archive(parent / "erin.zip", {**dot_files("correct"), "../escape.py": "print('escaped')\n"})
    zip_archive(parent / "fay.zip", {})
    folder(parent, "gus", dot_files("correct"))
    zip_archive(parent / "gus.zip", dot_files("partial"))
    tar_archive(parent / "hal.tar.gz", dot_files("correct", prefix="hal/"))
    notebook(parent / "ivy.ipynb", {"dot": source("correct")})
    return parent


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    make_class(root / "submissions")
    book = root / "class.sqlite"
    proc = run_grade("batch", str(root / "submissions"), *FAST, "--jobs", "2", "--gradebook", str(book))
    return root, book, proc


def test_each_student_gets_the_expected_result(graded_class):
    root, book, proc = graded_class
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Gradebook(str(book), readonly=True) as gb:
        results = {r.student: r for r in gb.results()}
    assert sorted(results) == sorted(EXPECTED)
    for student, (status, score, says) in EXPECTED.items():
        r = results[student]
        assert (r.status, r.score, r.max_score) == (status, score, DOT), student
        if status == "graded":
            assert r.report["tasks"][0]["status"] == says, student
            assert r.report["seed"] == int(SEED)
        else:
            assert says in r.error, student
    assert not (root / "escape.py").exists() and not (root / "submissions" / "escape.py").exists()
    assert str(root / "submissions" / "gus") in results["gus"].error
    assert str(root / "submissions" / "gus.zip") in results["gus"].error


def test_summary_and_progress(graded_class):
    _, book, proc = graded_class
    graded = [score for status, score, _ in EXPECTED.values() if status == "graded"]
    assert "exercise7: 9 submissions, 6 graded, 3 refused, 0 failed" in proc.stdout
    assert f"mean {statistics.mean(graded):.2f}".rstrip("0").rstrip(".") + " /" in proc.stdout
    assert f"median {statistics.median(graded):.2f}".rstrip("0").rstrip(".") + " " in proc.stdout
    for student in ("erin", "fay", "gus"):
        assert f"    {student}  " in proc.stdout
    assert f"seed {SEED}" in proc.stderr and "2 jobs" in proc.stderr
    assert "[9/9 · 3 errors" in proc.stderr


def test_a_rerun_skips_what_stands_and_regrades_what_changed(graded_class, tmp_path):
    root, book, _ = graded_class
    shutil.copytree(root / "submissions", tmp_path / "submissions")
    shutil.copy(book, tmp_path / "class.sqlite")
    args = ("batch", str(tmp_path / "submissions"), *FAST, "--gradebook", str(tmp_path / "class.sqlite"))
    history = rows(tmp_path / "class.sqlite", "history")

    again = run_grade(*args)
    assert again.returncode == 0, again.stderr
    assert "grading 0, 9 already graded" in again.stderr
    assert rows(tmp_path / "class.sqlite", "history") == history

    (tmp_path / "submissions/bob/exercise7/dot.py").write_text(source("correct"))
    changed = run_grade(*args)
    assert "grading 1, 8 already graded" in changed.stderr
    with Gradebook(str(tmp_path / "class.sqlite"), readonly=True) as gb:
        assert (gb.get("bob").status, gb.get("bob").score) == ("graded", DOT)
    assert len(rows(tmp_path / "class.sqlite", "history")) == len(history) + 1


def _graders_of(path) -> list[int]:
    """Processes still running with ``path`` on their command line (the batch's children)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(path).encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_killed_batch_resumes_and_grades_each_submission_once(tmp_path):
    for student in ("ana", "ben", "cy", "dee"):
        folder(tmp_path / "class", student, dot_files("correct"))
    book = tmp_path / "class.sqlite"
    args = ("batch", str(tmp_path / "class"), *FAST, "--jobs", "1", "--gradebook", str(book))
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}  # a killed batch cannot remove its scratch folders
    batch = subprocess.Popen([*GRADE, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while graded_count(book) < 1 and batch.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    batch.send_signal(signal.SIGKILL)
    batch.wait()
    done_before = graded_count(book)
    assert 1 <= done_before < 4, "the batch must be killed halfway"
    deadline = time.monotonic() + 10
    while _graders_of(tmp_path / "class") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _graders_of(tmp_path / "class"), "a killed batch leaves no grading running"
    wait_for(lambda: not processes_under(tmp_path / "tmp"), timeout=10, what="the killed batch's workers to end")
    assert list((tmp_path / "tmp").glob("grade-batch-*")), "a killed batch cannot remove its scratch"

    resumed = subprocess.run([*GRADE, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "removed the scratch of 1 batch that did not end cleanly" in resumed.stderr
    assert not list((tmp_path / "tmp").iterdir()), "the next batch removes it (its lock died with the killed batch)"
    assert f"grading {4 - done_before}, {done_before} already graded" in resumed.stderr
    assert [(s, st, sc) for s, st, sc, *_ in rows(book)] == [(s, "graded", DOT) for s in ("ana", "ben", "cy", "dee")]
    assert sorted(s for s, _ in rows(book, "history")) == ["ana", "ben", "cy", "dee"]


def test_a_grading_that_fails_is_listed_not_exported_as_a_grade_and_retried(tmp_path):
    folder(tmp_path / "class", "ann", dot_files("correct"))
    book = str(tmp_path / "class.sqlite")
    args = ("batch", str(tmp_path / "class"), *FAST, "--gradebook", book)
    overrun = run_grade(*args, "--submission-timeout", "1")
    assert overrun.returncode == 3, overrun.stderr
    assert "grading took longer than 1 s and was stopped" in overrun.stdout
    row = next(csv.DictReader(io.StringIO(run_grade("export", book, "--format", "csv").stdout)))
    assert (row["student"], row["total"], row["status"]) == ("ann", "", "failed"), "a failed grading has no total"

    retried = run_grade(*args)
    assert retried.returncode == 0, retried.stderr
    assert "grading 1, 0 already graded" in retried.stderr
    assert [(s, st, sc) for s, st, sc, *_ in rows(tmp_path / "class.sqlite")] == [("ann", "graded", DOT)]
    assert len(rows(tmp_path / "class.sqlite", "history")) == 2


def _refused_only_class(tmp_path):
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "zed.rar").write_text("not something we grade")
    return tmp_path / "class"


@pytest.mark.parametrize("differs, change", [("seed", {"--seed": "2"}), ("course_hash", {"--devices": "1"})])
def test_merge_refuses_gradebooks_of_different_gradings(tmp_path, differs, change):
    klass = _refused_only_class(tmp_path)
    same = {"--seed": "1", "--devices": "1,2"}
    for name, options in (("a", same), ("b", {**same, **change})):
        args = [x for pair in options.items() for x in pair]
        book = str(tmp_path / f"{name}.sqlite")
        graded = run_grade("batch", str(klass), "--exercise", "exercise7", *args, "--gradebook", book)
        assert graded.returncode == 0, graded.stderr
    proc = run_grade("merge", *(str(tmp_path / f"{n}.sqlite") for n in "ab"), "-o", str(tmp_path / "all.sqlite"))
    assert proc.returncode == 2
    assert f"their {differs} differs" in proc.stderr
    assert not (tmp_path / "all.sqlite").exists()


def test_a_gradebook_keeps_its_seed(tmp_path):
    klass = _refused_only_class(tmp_path)
    book = str(tmp_path / "g.sqlite")
    assert run_grade("batch", str(klass), "--exercise", "exercise7", "--seed", "5", "--gradebook", book).returncode == 0
    resumed = run_grade("batch", str(klass), "--exercise", "exercise7", "--gradebook", book)
    assert "seed 5" in resumed.stderr
    other = run_grade("batch", str(klass), "--exercise", "exercise7", "--seed", "6", "--gradebook", book)
    assert other.returncode == 2
    assert "was graded with seed 5" in other.stderr


FORGED = "\n[2\u22152 · 0 errors · ETA -] c_honest: 15 \u2215 15"  # U+2215 looks like "/" in a file name


def test_a_name_cannot_start_a_line_of_the_progress_log_or_the_summary(tmp_path):
    """Folder and file names are data: a newline, tab or escape in one is shown as an escape, so every
    progress line is one submission's, and no line of the summary is a name's."""
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / f"mallory{FORGED}.tar.gz").write_text("not gzip")  # refused without grading, as is eve's
    zip_archive(klass / f"eve\x1b[2J\t{FORGED}.zip", {})  # empty: refused without grading
    (klass / f"notes{FORGED}.txt").write_text("")
    proc = run_grade("batch", str(klass), "--exercise", "exercise7", "--task", "dot", "--devices", "1",
                     "--gradebook", str(tmp_path / "g.sqlite"))
    lines = (proc.stdout + proc.stderr).splitlines()
    assert not [line for line in lines if "c_honest" in line and not ("\\x0a" in line)], lines
    assert "\x1b" not in proc.stdout + proc.stderr
    assert any(line.startswith("left out 1 file") and "notes\\x0a[2\u22152" in line for line in lines), lines
    progress = [line for line in lines if line.startswith("[")]
    assert len(progress) == 2 and all("\\x0a[2\u22152" in line for line in progress), progress


def test_the_course_gitignore_ignores_the_gradebook_and_its_lock(tmp_path):
    """A batch leaves GRADEBOOK.lock beside the gradebook (grader/classroom/lock.py); neither belongs in git."""
    from fnmatch import fnmatch

    patterns = [p for p in (ROOT / ".gitignore").read_text().splitlines() if p and not p.startswith("#")]
    klass = _refused_only_class(tmp_path)
    book = tmp_path / "exercise7.sqlite"
    assert run_grade("batch", str(klass), "--exercise", "exercise7", "--gradebook", str(book)).returncode == 0
    made = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("exercise7.sqlite"))
    assert "exercise7.sqlite.lock" in made
    assert all(any(fnmatch(name, pattern) for pattern in patterns) for name in made), made
