"""Content hashes that decide whether a gradebook result still stands.

A result is reused only while both hashes match: the submission's (its files, or the archive's
bytes) and the course's (course.yaml, every file of the exercise's hidden suite, the grader version
and the device counts graded). Change any of them and the submission is graded again.
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


def course_hash(course: Course, exercise: Exercise, devices: tuple[int, ...] | None, backend: str = "cpu") -> str:
    """sha256 of the rubric, the exercise's hidden suite, the grader version, the tasks, device counts and backend."""
    tasks = ",".join(t.id for t in exercise.tasks)
    h = hashlib.sha256(f"grader {__version__}\ndevices {devices or 'course'}\ntasks {tasks}\nbackend {backend}\n"
                       .encode())
    with open(course.path, "rb") as f:
        h.update(f.read())
    _update_tree(h, os.path.join(course.root, exercise.suite))
    return h.hexdigest()
