"""The Slurm array job in docs/instructor.md, run script by script on a small class.

Each array task of ``grade-array.sh`` runs with the variables Slurm sets for it (from the script's
``#SBATCH --array`` and ``--cpus-per-task``), then ``grade-merge.sh``; in a copy of the course cut to
task dot at 2 devices (test_workflow.course_copy). The shards must be disjoint, cover the
class, and merge into the grades each student earns.
"""

import csv
import os
import re
import subprocess
import sys

from classroom import dot_files, folder, rows
from conftest import ROOT
from test_workflow import course_copy

DOC = ROOT / "docs" / "instructor.md"


def script(name: str) -> str:
    block = re.search(rf"```bash\n(#!/bin/bash\n# {re.escape(name)}:.*?)```", DOC.read_text(), re.S)
    assert block, f"docs/instructor.md has no {name}"
    return block.group(1)


def sbatch(text: str, option: str) -> str:
    found = re.search(rf"^#SBATCH --{option}=(\S+)$", text, re.M)
    assert found, f"the script has no #SBATCH --{option}"
    return found.group(1)


def run(text: str, cwd, env) -> None:
    proc = subprocess.run(["bash", "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def test_the_documented_array_job_grades_shards_that_merge_into_the_class(tmp_path):
    array, merge = script("grade-array.sh"), script("grade-merge.sh")
    course = course_copy(tmp_path / "repo")
    subs = course / "submissions"
    folder(subs, "ann", dot_files("correct"))
    folder(subs, "ben", dot_files("partial"))
    folder(subs, "cat", dot_files("broken"))
    first, last = (int(x) for x in sbatch(array, "array").split("-"))
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
           "SLURM_ARRAY_JOB_ID": "777", "SLURM_ARRAY_TASK_COUNT": str(last - first + 1),
           "SLURM_ARRAY_TASK_MIN": str(first), "SLURM_ARRAY_TASK_MAX": str(last),
           "SLURM_CPUS_PER_TASK": sbatch(array, "cpus-per-task")}
    for task_id in range(first, last + 1):
        run(array, course, {**env, "SLURM_ARRAY_TASK_ID": str(task_id)})
    run(merge, course, env)

    shards = [{r[0] for r in rows(course / f"shard-{k}.sqlite")} for k in range(first, last + 1)]
    assert sum(map(len, shards)) == 3 and set().union(*shards) == {"ann", "ben", "cat"}
    with open(course / "grades.csv", newline="") as f:
        grades = {row["student"]: row for row in csv.DictReader(f)}
    dot = float(grades["ann"]["dot"])
    assert dot > float(grades["ben"]["dot"]) > 0.0 == float(grades["cat"]["dot"])
    assert {r[0]: r[1] for r in rows(course / "class.sqlite")} == {"ann": "graded", "ben": "graded", "cat": "graded"}
