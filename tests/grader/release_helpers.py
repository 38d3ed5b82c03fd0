"""Helpers for the release tests: a course copy to change freely, a release of it, its bundles unpacked."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml
from conftest import ROOT, run_grade
from gradescope_schema import validate

EXERCISE = "exercise7"


def suite_tests(path: Path) -> list[str]:
    """The test function names of a suite file, in order."""
    tree = ast.parse(path.read_text())
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]


def copy_course(dest: Path, devices=(1, 2), hidden: dict[str, list[str]] | None = None,
                tasks: tuple[str, ...] | None = None) -> Path:
    """The course (course.yaml and each exercise's stubs, solutions and suite) copied to ``dest``,
    every task at ``devices``, the tests in ``hidden`` ({task: [test, ...]}) hidden and every other test
    visible, whatever course.yaml says; with ``tasks``, EXERCISE cut to those tasks (and its suite to
    their test files)."""
    data = yaml.safe_load((ROOT / "course.yaml").read_text())
    data.setdefault("defaults", {})["devices"] = list(devices)
    if tasks:
        data["exercises"][EXERCISE]["tasks"] = [t for t in data["exercises"][EXERCISE]["tasks"] if t["id"] in tasks]
    for name, exercise in data["exercises"].items():
        exercise.pop("devices", None)
        for key, default in (("stubs", "exercises"), ("solutions", "solutions"), ("suite", "tests")):
            folder = exercise.get(key, f"{default}/{name}")
            shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
        for task in exercise["tasks"]:
            task.pop("devices", None)
            for rule in (task.get("tests") or {}).values():
                rule.pop("visibility", None)
            for test in (hidden or {}).get(task["id"], []):
                task.setdefault("tests", {}).setdefault(test, {})["visibility"] = "hidden"
    (dest / "course.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    if tasks:
        kept = {f for t in data["exercises"][EXERCISE]["tasks"] for f in t.get("files", [f"test_{t['id']}.py"])}
        for path in (dest / "tests" / EXERCISE).glob("test_*.py"):
            if path.name not in kept:
                path.unlink()
    return dest


def checked(course: Path) -> Path:
    """``course`` after a `grade check` that passed: it then holds every figure of the reference's programs its
    suites compare with, which a release carries into its bundles (grader.grading.reference_figures)."""
    proc = run_grade("check", EXERCISE, "--course", str(course))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return course


def first_task_file(course: Path) -> tuple[str, Path]:
    """(task id, suite file) of the exercise's first task."""
    task = yaml.safe_load((course / "course.yaml").read_text())["exercises"][EXERCISE]["tasks"][0]
    return task["id"], course / "tests" / EXERCISE / task.get("files", [f"test_{task['id']}.py"])[0]


def release(course: Path, out: Path):
    return run_grade("release", EXERCISE, "--out", str(out), "--course", str(course))


def unzip(archive: Path, dest: Path) -> Path:
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(dest)
    return dest


def bundle_files(top: Path) -> dict[str, str]:
    """Every file under ``top`` (relative path -> text), caches left out."""
    return {str(p.relative_to(top)): p.read_text(errors="replace") for p in sorted(top.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def release_with_a_hidden_test(top: Path, tasks: tuple[str, ...] | None = None) -> dict:
    """A release (in ``top``/out), after a `grade check`, of a course copy (cut to ``tasks`` after the first,
    if given) in which the first task's last test is hidden."""
    task_id, suite_file = first_task_file(ROOT)
    tests = suite_tests(suite_file)
    course = checked(copy_course(top / "course", hidden={task_id: [tests[-1]]}, tasks=tasks and (task_id, *tasks)))
    proc = release(course, top / "out")
    assert proc.returncode == 0, proc.stderr
    return {"course": course, "out": top / "out", "hidden": tests[-1], "public": tests[:-1], "task": task_id,
            "stdout": proc.stdout, "stderr": proc.stderr}


def run_autograder(archive: Path, root: Path, files: dict[str, bytes]) -> dict:
    """Lay out ROOT like Gradescope, put ``files`` (path -> bytes) in the submission, run, read results."""
    unzip(archive, root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    for path, data in files.items():
        (root / "submission" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / path).write_bytes(data)
    (root / "submission").mkdir(exist_ok=True)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    proc = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert validate(results) == [], results
    return results
