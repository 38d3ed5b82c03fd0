"""A stub run as a script says how to grade it; the devices recipe it gives is true."""

from __future__ import annotations

import ast
import os
import shlex
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from grader.cli.stub import DEVICES_RECIPE, how_to_grade

STUBS = sorted((ROOT / "exercises").glob("*/*.py"))


@pytest.mark.parametrize("stub", STUBS, ids=[p.name for p in STUBS])
def test_every_stub_explains_itself_and_imports_the_grader_only_when_run(stub):
    tree = ast.parse(stub.read_text())
    assert DEVICES_RECIPE in ast.get_docstring(tree), f"{stub.name}: its docstring lacks the devices recipe"
    main = tree.body[-1]
    assert isinstance(main, ast.If) and ast.unparse(main.test) == "__name__ == '__main__'", stub.name
    assert "explain(__file__)" in ast.unparse(main)
    top_level = [n for n in tree.body[:-1] if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not any("grader" in ast.unparse(n) for n in top_level), f"{stub.name} must import without the grader"


def test_running_a_stub_names_the_grade_command_for_each_of_its_tasks():
    proc = subprocess.run([sys.executable, str(ROOT / "exercises" / "exercise7" / "ring.py")], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert "grade exercise7 --task ring --task ring_optimal" in lines[0]
    assert DEVICES_RECIPE in lines[1]


def test_the_command_a_stub_prints_runs_as_printed_without_an_activated_venv(tmp_path):
    """`.venv/bin/python exercises/exercise7/dot.py` run from another folder, with no venv on PATH: the
    command it prints names this venv's grade and the course, and runs from there."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, str(ROOT / "exercises" / "exercise7" / "dot.py")], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    command = proc.stdout.splitlines()[0].partition(" with: ")[2].partition("   (")[0]
    assert command == f"{os.path.dirname(sys.executable)}/grade exercise7 --task dot --course {ROOT}"
    shown = subprocess.run([*shlex.split(command), "--help"], capture_output=True, text=True, timeout=120, env=env,
                           cwd=tmp_path)
    assert shown.returncode == 0 and "Grade exercise7" in shown.stdout, shown.stderr


def test_a_stub_outside_any_course_falls_back_on_folder_and_file_names(tmp_path):
    folder = tmp_path / "week7"
    folder.mkdir()
    shutil.copy(ROOT / "exercises" / "exercise7" / "dot.py", folder / "dot.py")
    assert "grade week7 --task dot " in how_to_grade(str(folder / "dot.py"))


def test_the_devices_recipe_gives_that_many_devices():
    code = f"import jax; {DEVICES_RECIPE}; print(jax.device_count())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.stdout.strip() == "4", proc.stderr
