"""The GitHub Actions workflow in docs/instructor.md, run command by command on a small class.

Every ``run:`` step of the documented workflow is executed here in order (check, each shard of the
matrix, merge and exports) in a copy of the course cut to task dot at 2 devices to keep it quick (the
merge's rule does not depend on the device counts); only ``pip install`` is skipped, since the tests run installed. Then the merged gradebook
must equal a gradebook of the same class graded in one go.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from classroom import dot_files, folder, rows, zip_archive
from conftest import ROOT, run_grade
from grader.classroom.gradebook import Gradebook

DOC = ROOT / "docs" / "instructor.md"


def workflow() -> dict:
    text = DOC.read_text()
    block = re.search(r"```yaml\n(name: grade-class\n.*?)```", text, re.S)
    assert block, "docs/instructor.md has no grade-class workflow"
    return yaml.safe_load(block.group(1))


def substitute(command: str, context: dict) -> str:
    def value(match):
        key = match.group(1).strip()
        assert key in context, f"the test does not know ${{{{ {key} }}}}; teach it or change the workflow"
        return str(context[key])

    return re.sub(r"\$\{\{(.*?)\}\}", value, command)


def run_steps(job: dict, context: dict, cwd: Path, env: dict) -> None:
    for step in job["steps"]:
        if "run" not in step or step["run"].startswith("pip install"):
            continue
        command = substitute(step["run"], context)
        proc = subprocess.run(["bash", "-e", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, f"{command}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def course_copy(dest: Path) -> Path:
    """The course cut to exercise 7's task dot at 2 devices, to stay quick (the engine is found as installed)."""
    for part in ("exercises/exercise7", "solutions/exercise7", "tests/exercise7"):
        shutil.copytree(ROOT / part, dest / part, ignore=shutil.ignore_patterns("__pycache__", "test_*.py"))
    shutil.copy(ROOT / "tests/exercise7/test_dot.py", dest / "tests/exercise7")
    rubric = yaml.safe_load((ROOT / "course.yaml").read_text())
    rubric["defaults"]["devices"] = [2]
    rubric["exercises"] = {"exercise7": rubric["exercises"]["exercise7"]}
    for exercise in rubric["exercises"].values():
        exercise["tasks"] = [t for t in exercise["tasks"] if t["id"] == "dot"]
        exercise.pop("devices", None)
        for task in exercise["tasks"]:
            task.pop("devices", None)
    (dest / "course.yaml").write_text(yaml.safe_dump(rubric, sort_keys=False))
    return dest


def test_the_documented_workflow_grades_shards_that_merge_into_the_whole_class(tmp_path):
    flow = workflow()
    course = course_copy(tmp_path / "repo")
    subs = course / "submissions"
    folder(subs, "ann", dot_files("correct"))
    folder(subs, "ben", dot_files("partial"))
    folder(subs, "cat", dot_files("broken"))
    zip_archive(subs / "dee.zip", {"../../dee.py": "x = 1\n"})
    env = {**os.environ, **{k: str(v) for k, v in flow["env"].items()},
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}

    run_steps(flow["jobs"]["check"], {}, course, env)
    shards = flow["jobs"]["grade"]["strategy"]["matrix"]["shard"]
    for shard in shards:
        run_steps(flow["jobs"]["grade"], {"matrix.shard": shard, "strategy.job-total": len(shards)}, course, env)
    run_steps(flow["jobs"]["merge"], {}, course, env)

    per_shard = [{r[0] for r in rows(course / f"shard-{k}.sqlite")} for k in shards]
    assert sum(map(len, per_shard)) == 4 and set().union(*per_shard) == {"ann", "ben", "cat", "dee"}

    whole = run_grade("batch", "submissions", "--exercise", "exercise7", "--seed", env["SEED"],
                      "--gradebook", "whole.sqlite", cwd=course)
    assert whole.returncode == 0, whole.stderr
    assert rows(course / "class.sqlite") == rows(course / "whole.sqlite")
    with Gradebook(str(course / "class.sqlite"), readonly=True) as merged, \
            Gradebook(str(course / "whole.sqlite"), readonly=True) as one_go:
        assert merged.identity() == one_go.identity()
        for a, b in zip(merged.results(), one_go.results()):
            cases = [[(c["name"], c["devices"], c["outcome"], c["message"]) for t in r.report["tasks"]
                      for c in t["cases"]] if r.report else None for r in (a, b)]
            assert cases[0] == cases[1], a.student
    assert (course / "grades.csv").read_text().count("\n") == 5
    assert sorted(os.listdir(course / "gradescope")) == ["ann", "ben", "cat", "dee"]
