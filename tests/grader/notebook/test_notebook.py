"""Notebooks as submissions: marked cells become modules; grading from the CLI, a folder and a live kernel."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, grade_json, task_scores

from grader.errors import UsageError
from grader.notebook import cells

MODULES = ("dot", "shard", "ring")


def solution(name: str) -> str:
    return f"# grade: {name}\n" + (ROOT / "solutions" / "exercise7" / f"{name}.py").read_text()


def write_notebook(path: Path, sources: list[str]) -> Path:
    notebook = {"cells": [{"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Exercise 7\n"]}]
                + [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [],
                    "source": source.splitlines(True)} for i, source in enumerate(sources)],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook))
    return path


@pytest.mark.parametrize("line, module", [("# grade: dot", "dot"), ("#grade:dot.py", "dot"), ("# GRADE: ring  ", "ring"),
                                          ("# grade dot", None), ("x = 1  # grade: dot", None)])
def test_the_marker_is_the_first_line(line, module):
    assert cells.module_of(f"\n{line}\nimport jax\n") == module


def test_two_cells_for_one_module_are_refused_naming_both():
    with pytest.raises(UsageError, match=r"code cells 1 and 3 of work.ipynb are both marked '# grade: dot'"):
        cells.modules(["# grade: dot\n", "x = 1\n", "# grade: dot\n"], MODULES, "work.ipynb")


def test_a_kernel_that_ran_a_cell_again_grades_the_latest_run():
    found = cells.modules(["# grade: dot\nv = 1\n", "# grade: dot\nv = 2\n"], MODULES, "this notebook", latest_wins=True)
    assert found == {"dot": "# grade: dot\nv = 2\n"}


@pytest.mark.parametrize("name", ["dott", "../dot", "dot/../../x"])
def test_a_marker_naming_no_module_lists_the_modules(name):
    with pytest.raises(UsageError, match=rf"marked '# grade: {re.escape(name)}', which is not a module.*dot, shard, ring"):
        cells.modules([f"# grade: {name}\n"], MODULES, "work.ipynb")


@pytest.mark.parametrize("text", ["not json", '{"cells": [{"cell_type": "code", "source": 3}]}', '{"worksheets": []}'])
def test_a_file_that_is_no_notebook_is_refused_in_one_sentence(tmp_path, text):
    path = tmp_path / "work.ipynb"
    path.write_text(text)
    with pytest.raises(UsageError, match=r"work.ipynb is not a notebook the grader can read \(nbformat 4 JSON\)"):
        cells.code_cells(str(path))


def test_a_notebook_with_no_marked_cell_says_how_to_mark_one():
    with pytest.raises(UsageError, match=r"no code cell of work.ipynb is marked.*'# grade: dot'"):
        cells.modules(["import jax\n"], MODULES, "work.ipynb")


def test_the_missing_modules_are_named():
    assert cells.missing_note({"dot": ""}, MODULES) == ("the notebook has no cell marked for shard, ring: those "
                                                         "tasks are graded as missing")


def test_a_solutions_notebook_scores_full_marks_and_a_broken_cell_costs_its_task_only(tmp_path):
    args = ("--task", "dot", "--task", "shard", "--devices", "1,2")
    good = write_notebook(tmp_path / "work.ipynb", [solution("dot"), "print('scratch')\n", solution("shard")])
    report = grade_json(good, *args)
    assert task_scores(report) == {"dot": 15, "shard": 10}
    assert report["submission"] == str(good)

    upload = tmp_path / "upload"  # Gradescope's submission folder holding only the notebook
    upload.mkdir()
    broken = "# grade: dot\ndef distributed_dot(x, y):\n    return x[0] * y[0] +\n"
    write_notebook(upload / "work.ipynb", [broken, solution("shard")])
    report = grade_json(upload, *args)
    assert task_scores(report) == {"dot": 0, "shard": 10}
    dot = next(t for t in report["tasks"] if t["id"] == "dot")
    assert dot["status"] == "import error" and "dot.py:3" in dot["reason"]


def test_a_duplicate_module_stops_the_cli_with_exit_2(tmp_path):
    from conftest import run_grade

    notebook = write_notebook(tmp_path / "work.ipynb", [solution("dot"), solution("dot")])
    proc = run_grade("exercise7", "--submission", str(notebook), "--task", "dot")
    assert proc.returncode == 2
    assert "code cells 1 and 2 of work.ipynb are both marked '# grade: dot'" in proc.stderr


def test_notebook_check_runs_in_a_real_kernel_and_shows_a_table(tmp_path):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    broken = "# grade: shard\ndef shard_batch(x, n_devices):\n    return x\n"
    check = "from grader import notebook\nnotebook.check('dot', 'shard', devices='2', seed=7)"  # no course=:
    path = write_notebook(tmp_path / "work.ipynb", [solution("dot"), broken, check])
    notebook = nbformat.read(str(path), as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",  # the kernel runs outside any course,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()  # found where the grader is
    shown = notebook.cells[-1].outputs[0]["data"]
    table = shown["text/html"]
    assert "<table>" in table and "<td style='text-align:left'>dot</td><td style='text-align:left'>15 / 15</td>" in table
    assert "<td style='text-align:left'>shard</td>" in table and "seed 7" in table
    assert "dot    15 / 15" in shown["text/plain"] and "shard  0 / 10" in shown["text/plain"]


def test_the_released_notebook_has_each_statement_and_stub_and_grades_once_filled_in(tmp_path):
    from grader.authoring import student_notebook
    from grader.course import find_course

    exercise = find_course(explicit=str(ROOT)).exercise("exercise7")
    notebook = json.loads(student_notebook.build(exercise, str(ROOT / "exercises" / "exercise7")))
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.from_dict(notebook))
    markdown = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown"]
    code = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    assert any(m.startswith("## dot.py\n\nTask dot: the chapter's checkpoint") for m in markdown)
    modules = [c.split("\n", 1)[0].removeprefix("# grade: ") for c in code[:-1]]
    tasks = [t.id for t in exercise.tasks]
    assert modules == sorted(modules, key=tasks.index), "the sections follow the course's order of tasks"
    assert modules[0] == tasks[0] != sorted(modules)[0]
    assert not any("__main__" in c or '"""' in c for c in code)
    dot = next(i for i, c in enumerate(code) if c.startswith("# grade: dot\n"))
    assert "raise NotImplementedError" in code[dot]
    code[dot] = solution("dot")
    report = grade_json(write_notebook(tmp_path / "work.ipynb", code), "--task", "dot", "--devices", "2")
    assert task_scores(report) == {"dot": 15}
