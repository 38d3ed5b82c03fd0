"""grade release: the student bundle holds no solution and no hidden test, and grades the public tests."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
import tomllib
import yaml
from conftest import ROOT
from release_helpers import (EXERCISE, bundle_files, copy_course, first_task_file, release, release_with_a_hidden_test,
                             suite_tests, unzip)

from grader.authoring import pins as release_pins, release_scan
from grader.grading import versions as pins
from grader.course import CourseError, Release, find_course, load_course
from grader.grading import pipeline
from grader.authoring.release import ENGINE_DIR


@pytest.fixture(scope="module")
def hidden_release(tmp_path_factory):
    """The course cut to its first task and dot (what the release does is the same for every task; the public
    suite, the scan and the bundles are checked on two), released after a `grade check`."""
    return release_with_a_hidden_test(tmp_path_factory.mktemp("hidden"), tasks=("dot",))


def _solution_code_lines(course: Path) -> dict[str, str]:
    """Lines of solution code (not imports, defs, blank or short) that neither a stub nor the engine has."""
    engine = "\n".join(p.read_text() for p in (ROOT / "grader").rglob("*.py"))
    stub_text = "\n".join(p.read_text() for p in (course / "exercises" / EXERCISE).glob("*.py"))
    lines = {}
    for sol in (course / "solutions" / EXERCISE).glob("*.py"):
        for line in sol.read_text().splitlines():
            line = line.strip()
            if (len(line) >= 20 and not line.startswith(("import", "from", "def", "#"))
                    and line not in stub_text and line not in engine):
                lines[line] = sol.name
    return lines


def _hidden_tests(course: Path) -> set[str]:
    exercise = find_course(explicit=str(course)).exercise(EXERCISE)
    return {name for t in exercise.tasks for f in t.files if (course / exercise.suite / f).exists()
            for name in suite_tests(course / exercise.suite / f) if t.rule(name).visibility != "visible"}


def test_the_course_release_holds_no_solution_and_no_hidden_test(tmp_path):
    course = copy_course(tmp_path / "course")
    proc = release(course, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    student = bundle_files(tmp_path / "out" / "student")
    solutions = {p.read_text().strip() for p in (course / "solutions" / EXERCISE).glob("*.py")}
    assert not any(path.startswith("solutions") for path in student)
    assert not any(text.strip() in solutions for text in student.values())
    for line, source in _solution_code_lines(course).items():
        holders = [p for p, text in student.items() if line in text]
        assert not holders, f"{holders} hold a line of solutions/{source}: {line}"
    for name in _hidden_tests(course):
        assert not any(name in text for text in student.values()), name


def test_a_hidden_test_is_left_out_of_the_student_bundle_only(hidden_release):
    out, hidden = hidden_release["out"], hidden_release["hidden"]
    student, autograder = bundle_files(out / "student"), bundle_files(out / "autograder")
    holders = [p for p, text in student.items() if hidden in text]
    assert not holders, f"the hidden test {hidden} is named in {holders}"
    public_suite = out / "student" / "tests" / EXERCISE / first_task_file(hidden_release["course"])[1].name
    assert suite_tests(public_suite) == hidden_release["public"]
    assert any(hidden in text for p, text in autograder.items() if p.startswith("tests/"))
    assert hidden in autograder["course.yaml"]
    assert "1 test (2 cases) left out, run at submission" in hidden_release["stdout"]
    assert hidden not in hidden_release["stdout"], "the release says counts and paths, not test names"
    assert len(hidden_release["stdout"]) < 1200, hidden_release["stdout"]


def test_the_zip_holds_the_student_folder(hidden_release):
    out = hidden_release["out"]
    with zipfile.ZipFile(out / "student.zip") as zf:
        names = {n.split("/", 1)[1] for n in zf.namelist()}
    assert names == set(bundle_files(out / "student"))


def test_the_student_bundle_is_scanned_clean(hidden_release):
    course = find_course(explicit=str(hidden_release["course"]))
    rules = release_scan.forbidden(course, course.exercise(EXERCISE), ENGINE_DIR)
    assert hidden_release["hidden"] in rules.hidden_tests
    assert rules.hidden_strings and rules.solution_lines
    assert release_scan.scan(str(hidden_release["out"] / "student"), rules) == []


def test_the_scan_catches_text_only_hidden_tests_have(hidden_release, tmp_path):
    course = find_course(explicit=str(hidden_release["course"]))
    rules = release_scan.forbidden(course, course.exercise(EXERCISE), ENGINE_DIR)
    secret = next(iter(rules.hidden_strings))
    (tmp_path / "notes.md").write_text(f"remember: {secret}\n")
    (tmp_path / "helper.py").write_text(next(iter(rules.solution_lines)) + "\n")
    label, solution = next(iter(rules.solution_files.items()))
    (tmp_path / "copy.py").write_text(solution)
    problems = release_scan.scan(str(tmp_path), rules)
    assert any(p.startswith("notes.md contains text only the hidden test") for p in problems), problems
    assert any(p.startswith("helper.py contains a line of the solution") for p in problems), problems
    assert f"copy.py is a copy of the solution {label}" in problems
    assert release_scan.scan(str(tmp_path), rules.for_autograder()) == [f"copy.py is a copy of the solution {label}"]


def _refused(course: Path, out: Path, *expected: str) -> None:
    proc = release(course, out)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert all(e in proc.stderr for e in expected), proc.stderr
    assert not any((out / name).exists() for name in ("student", "student.zip", "autograder", "autograder.zip"))


def test_a_solution_among_the_stubs_stops_the_release(tmp_path):
    course = copy_course(tmp_path / "course")
    solution = sorted((course / "solutions" / EXERCISE).glob("*.py"))[0]
    (course / "exercises" / EXERCISE / "reference.py").write_text(solution.read_text())
    _refused(course, tmp_path / "out", f"exercises/{EXERCISE}/reference.py is a copy of the solution")


def test_a_stub_with_solution_code_stops_the_release(tmp_path):
    course = copy_course(tmp_path / "course")
    line = next(iter(_solution_code_lines(course)))
    stub = sorted((course / "exercises" / EXERCISE).glob("*.py"))[0]
    stub.write_text(stub.read_text() + f"\n\ndef _started():\n    {line}\n")
    _refused(course, tmp_path / "out", f"{stub.name} contains a line of the solution")


def test_a_stub_naming_a_hidden_test_stops_the_release(tmp_path):
    task_id, suite_file = first_task_file(ROOT)
    hidden = suite_tests(suite_file)[-1]
    course = copy_course(tmp_path / "course", hidden={task_id: [hidden]})
    stub = sorted((course / "exercises" / EXERCISE).glob("*.py"))[0]
    stub.write_text(stub.read_text() + f"\n# the grader checks this with {hidden}\n")
    _refused(course, tmp_path / "out", f"names the hidden test {hidden}")


def test_releasing_twice_gives_the_same_zips(hidden_release, tmp_path):
    proc = release(hidden_release["course"], tmp_path / "again")
    assert proc.returncode == 0, proc.stderr
    for name in ("student.zip", "autograder.zip"):
        assert (tmp_path / "again" / name).read_bytes() == (hidden_release["out"] / name).read_bytes()


def test_the_autograder_zip_has_gradescopes_layout_and_pins(hidden_release):
    with zipfile.ZipFile(hidden_release["out"] / "autograder.zip") as zf:
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        requirements = zf.read("requirements.txt").decode()
        course = yaml.safe_load(zf.read("course.yaml"))
    for script in ("setup.sh", "run_autograder"):
        assert modes[script] & stat.S_IXUSR, f"{script} is not executable in the zip"
        check = subprocess.run(["bash", "-n", str(hidden_release["out"] / "autograder" / script)],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
    assert not any(n.startswith("solutions/") for n in modes)
    for dist in ("jax", "jaxlib"):
        assert f"{dist}=={pins.installed(dist)}" in requirements.splitlines()
    assert course["release"]["kind"] == "autograder" and course["release"]["jax"] == pins.installed("jax")


def test_the_python_the_project_asks_for_is_one_its_dependencies_run_on(hidden_release):
    """pyproject's requires-python, the README's "Python 3.N+" and the student bundle's pins agree:
    none promises a Python that a pinned dependency (JAX, NumPy, SciPy) does not install on."""
    dist = release_pins.grader_distribution()
    needed = release_pins.requires_python([dist.metadata["Name"], *release_pins.pinned(dist)])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert project == needed, f"pyproject.toml says {project}, but the pinned dependencies need {needed}"
    assert f"Python {needed.removeprefix('>=')}+" in (ROOT / "README.md").read_text()
    bundle = (hidden_release["out"] / "student" / "pyproject.toml").read_text()
    assert f'requires-python = "{needed}"' in bundle
    assert f"You need Python {needed.removeprefix('>=')} or newer" in \
        (hidden_release["out"] / "student" / "README.md").read_text()


def test_the_student_readme_commands_work_without_an_activated_venv(hidden_release):
    """A new student types the README's commands as they are: every one runs a program of the venv by
    its path (grade, pip, python, jupyter), except the one that makes the venv."""
    readme = (hidden_release["out"] / "student" / "README.md").read_text()
    commands = [line.strip().split("#")[0].strip() for line in readme.splitlines() if line.startswith("    ")]
    commands += re.findall(r"`((?:grade|python3?|pip|jupyter|\.venv/bin/\w+) [^`]+)`", readme)
    assert len(commands) > 8, commands
    allowed = (".venv/bin/", "python3 -m venv .venv", ". .venv/bin/activate", "python3 --version")
    bare = [c for c in commands if c and not c.startswith(allowed)]
    assert bare == [], "these need an activated venv"
    assert ".venv/bin/pip install jupyterlab" in readme, "the notebook route names the package it needs"


def _grade_in(bundle: Path, *args: str):
    env = {**os.environ, "PYTHONPATH": str(bundle)}
    return subprocess.run([sys.executable, "-m", "grader", EXERCISE, "--format", "json", "--seed", "5", *args],
                          cwd=bundle, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def student_bundle(hidden_release, tmp_path_factory):
    """student.zip unpacked, as a student gets it."""
    top = unzip(hidden_release["out"] / "student.zip", tmp_path_factory.mktemp("unzipped"))
    (bundle,) = top.iterdir()
    return bundle


def test_grade_in_the_student_bundle_runs_the_public_tests(hidden_release, student_bundle):
    proc = _grade_in(student_bundle)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    ran = {c["test"] for t in report["tasks"] for c in t["cases"]}
    assert ran & set(suite_tests(first_task_file(ROOT)[1])) == set(hidden_release["public"])
    assert report["score"] == 0
    wanted = (f"public tests only: 2 hidden cases (2 in {hidden_release['task']}) are not in this bundle; they are "
              "graded when you submit")  # the hidden test at the copy's 1 and 2 devices
    assert any(wanted in n for n in report["notes"]), report["notes"]


def test_the_student_bundle_records_how_many_cases_are_hidden(hidden_release, student_bundle):
    release_block = yaml.safe_load((student_bundle / "course.yaml").read_text())["release"]
    assert release_block["hidden_cases"] == {hidden_release["task"]: 2}  # one test, at the copy's 1 and 2 devices
    autograder = yaml.safe_load((hidden_release["out"] / "autograder" / "course.yaml").read_text())["release"]
    assert not autograder["hidden_cases"]  # the autograder holds every test: nothing is hidden from it
    assert "warning" not in hidden_release["stderr"]


def test_a_release_that_hides_nothing_is_warned_about(tmp_path):
    proc = release(copy_course(tmp_path / "course"), tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {EXERCISE}: every test is visible, so the student bundle holds the whole grading suite" \
        in proc.stderr
    assert "0 tests (0 cases) left out, run at submission" in proc.stdout


def test_the_solution_passes_the_public_tests(student_bundle, tmp_path):
    submission = tmp_path / EXERCISE
    submission.mkdir()
    for path in (ROOT / "solutions" / EXERCISE).glob("*.py"):
        (submission / path.name).write_text(path.read_text())
    proc = _grade_in(student_bundle, "--submission", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert all(t["score"] == t["max_score"] for t in report["tasks"]), [t["reason"] for t in report["tasks"]]


def _next_series(version: str) -> str:
    major, minor = (int(p) for p in version.split(".")[:2])
    return f"0.{minor + 1}.0" if major == 0 else f"{major + 1}.0.0"


def _released_for(bundle: Path, tmp_path: Path, jax_version: str) -> Path:
    """A copy of the bundle whose course.yaml says it was released for ``jax_version``."""
    copy = tmp_path / "bundle"
    copy.mkdir()
    for name in ("grader", "exercises", "tests"):
        os.symlink(bundle / name, copy / name)
    data = yaml.safe_load((bundle / "course.yaml").read_text())
    data["release"]["jax"] = jax_version
    (copy / "course.yaml").write_text(yaml.safe_dump(data))
    return copy


def test_grading_refuses_another_jax_series(student_bundle, tmp_path):
    other = _next_series(pins.installed("jax"))
    bundle = _released_for(student_bundle, tmp_path, other)
    proc = _grade_in(bundle)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"released for jax {other}" in proc.stderr and "--allow-jax-mismatch" in proc.stderr
    assert proc.stdout == ""
    proc = _grade_in(bundle, "--allow-jax-mismatch", "--devices", "1")
    assert proc.returncode == 0, proc.stderr
    assert any(f"not the jax {other}" in n for n in json.loads(proc.stdout)["notes"])


def test_another_patch_release_of_the_same_series_is_only_noted(student_bundle, tmp_path):
    installed = pins.installed("jax")
    same_series = ".".join(installed.split(".")[:2]) + ".999"
    proc = _grade_in(_released_for(student_bundle, tmp_path, same_series), "--devices", "1")
    assert proc.returncode == 0, proc.stderr
    assert any("same series" in n for n in json.loads(proc.stdout)["notes"])


@pytest.mark.parametrize("version, series", [("0.10.2", (0, 10)), ("0.11.0rc1", (0, 11)), ("0.4.35", (0, 4)),
                                             ("1.0.0", (1,)), ("1.7.3", (1,)), ("2.0", (2,))])
def test_a_jax_series_is_the_minor_for_0x_and_the_major_after(version, series):
    assert pins.series(version) == series


@pytest.mark.parametrize("block, complaint", [
    ("{kind: teacher, jax: 0.10.2, jaxlib: 0.10.2, grader: 0.1.0}", "release.kind: expected one of student, autograder"),
    ("{kind: student, jax: 0.10, jaxlib: 0.10.2, grader: 0.1.0}", "release.jax: expected a non-empty string"),
    ("{kind: student, jaxlib: 0.10.2, grader: 0.1.0}", "release: expected a key 'jax'"),
    ("{kind: student, jax: 0.10.2, jaxlib: 0.10.2, grader: 0.1.0, hidden_cases: {dot: many}}",
     "release.hidden_cases: expected a mapping of task ids to case counts"),
])
def test_a_malformed_release_block_is_named(tmp_path, block, complaint):
    course = copy_course(tmp_path / "course")
    (course / "course.yaml").write_text((course / "course.yaml").read_text() + f"release: {block}\n")
    with pytest.raises(CourseError, match=complaint):
        load_course(str(course / "course.yaml"))


def test_the_student_bundle_holds_the_exercise_as_a_notebook(hidden_release):
    notebook = json.loads((hidden_release["out"] / "student" / f"{EXERCISE}.ipynb").read_text())
    code = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    stubs = sorted(p.stem for p in (hidden_release["course"] / "exercises" / EXERCISE).glob("*.py"))
    assert sorted(source.splitlines()[0].removeprefix("# grade: ") for source in code[:-1]) == stubs
    assert "notebook.check()" in code[-1]
def test_the_public_only_note_counts_the_graded_tasks_hidden_cases():
    course = find_course(explicit=str(ROOT))
    exercise = course.exercise(EXERCISE)
    recorded = replace(course, release=Release("student", "0.10.2", "0.10.2", "0.1.0",
                                               hidden_cases={"devices": 8, "dot": 16}))
    assert pipeline.public_only_note(recorded, exercise.only(["dot", "ring"])).startswith(
        "public tests only: 16 hidden cases (16 in dot) are not in this bundle; they are graded when you submit")
    assert "24 hidden cases (8 in devices, 16 in dot)" in pipeline.public_only_note(recorded, exercise), \
        "the count of a task named devices does not read as a device count"
    assert pipeline.public_only_note(recorded, exercise.only(["ring"])) == pipeline.PUBLIC_ONLY_NOTE
