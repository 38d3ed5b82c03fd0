"""Content hashes that decide whether a gradebook result still stands.

A submission's hash covers its files (or the archive's bytes): change it and the submission is
graded again in full. Each task has a fingerprint of what its result depends on: the task's rubric
entry in course.yaml (points, devices, time limit, per-test rules), its test files, the suite's
shared files (probes, conftest, anything that belongs to no task), the grader version, the device
counts and backend, and the memory limit. Fix one test and only that task is graded again, for
everyone; a new deadline or title elsewhere in course.yaml regrades nothing. The course hash is
the fingerprints together: what shards must share to be merged.
"""

from __future__ import annotations

import hashlib
import os

from grader import __version__
from grader.course import Course, Exercise
from grader.submission import files


def _update_tree(h, folder: str) -> None:
    for rel, path in files(folder):
        h.update(rel.replace(os.sep, "/").encode() + b"\0")
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())


def submission_hash(path: str) -> str:
    """sha256 of a submission folder's files (names and contents), or of an archive's bytes."""
    h = hashlib.sha256()
    if os.path.isdir(path):
        _update_tree(h, path)
    else:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def combined_hash(hashes) -> str:
    """One hash for several submissions (a student id that arrived more than once)."""
    return hashlib.sha256("\n".join(sorted(hashes)).encode()).hexdigest()


def _file_hash(h, folder: str, rel: str) -> None:
    path = os.path.join(folder, rel)
    h.update(rel.encode() + b"\0")
    if os.path.isfile(path):
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())


def task_fingerprints(course: Course, exercise: Exercise, devices: tuple[int, ...] | None,
                      backend: str = "cpu") -> dict[str, str]:
    """{task id: sha256 of everything that task's result depends on} for the (selected) tasks."""
    suite = os.path.join(course.root, exercise.suite)
    task_files = {f for t in course.exercise(exercise.name).tasks for f in t.files}
    shared = hashlib.sha256()
    for rel, path in files(suite) if os.path.isdir(suite) else ():
        if rel not in task_files:
            _file_hash(shared, suite, rel.replace(os.sep, "/"))
    context = (f"grader {__version__}\ndevices {devices or 'course'}\nbackend {backend}\n"
               f"memory_mb {course.memory_mb}\nshared {shared.hexdigest()}\n")
    out = {}
    for task in exercise.tasks:
        h = hashlib.sha256((context + f"rubric {task!r}\n").encode())
        for rel in task.files:
            _file_hash(h, suite, rel)
        out[task.id] = h.hexdigest()
    return out


def course_hash(fingerprints: dict[str, str]) -> str:
    """One hash of the graded tasks' fingerprints: equal on every machine that grades the same thing."""
    return combined_hash(f"{task} {fp}" for task, fp in fingerprints.items())
