"""The check that grading runs against the JAX a course was released for.

A course is released for one JAX. Grading with another "major" JAX may change results (an API gone,
a different collective in the compiled program), so the grader refuses unless told to. JAX is still
0.x, and its minor releases are the ones that break APIs: for 0.x the series is (0, minor), so 0.10
and 0.11 differ while 0.10.2 and 0.10.3 do not; from 1.0 on it is the major number alone.

Versions are read from package metadata, never by importing JAX: the grader process stays JAX-free.
"""

from __future__ import annotations

import importlib.metadata as metadata

from packaging.version import InvalidVersion, Version

from grader.course import Course
from grader.errors import UsageError

ALLOW_FLAG = "--allow-jax-mismatch"


def installed(dist: str) -> str | None:
    """The installed version of a distribution, or None."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def series(version: str) -> tuple[int, ...]:
    """The part of a JAX version that may break APIs: (0, minor) for 0.x, (major,) from 1.0 on."""
    try:
        v = Version(version)
    except InvalidVersion:
        raise UsageError(f"'{version}' is not a version number") from None
    return (0, v.minor) if v.major == 0 else (v.major,)


def _series_text(version: str) -> str:
    return ".".join(map(str, series(version))) + (".x" if series(version)[0] == 0 else "")


def check_jax(course: Course, allow_mismatch: bool = False) -> list[str]:
    """Refuse (UsageError) a JAX of another series than the course was released for.

    Returns notes for the report: a different version of the same series, or a mismatch allowed
    by the flag. A course that was not released (the instructors' copy) is not checked.
    """
    if course.release is None:
        return []
    wanted, have = course.release.jax, installed("jax")
    if have is None:
        raise UsageError("JAX is not installed in this Python; install the versions this course was "
                         "released with: pip install -r requirements.txt")
    if have == wanted:
        return []
    if series(have) == series(wanted):
        return [f"this course was released with jax {wanted}; you have jax {have} (same series, fine)"]
    change = "minor version (as 0.10 -> 0.11) is a new series in JAX 0.x" if series(wanted)[0] == 0 \
        else "major version is a new series"
    message = (f"this course was released for jax {wanted} (series {_series_text(wanted)}), but this Python "
               f"has jax {have}; a new {change} and may change APIs and results. Install the pinned "
               f"versions (pip install -r requirements.txt), or pass {ALLOW_FLAG} to grade anyway")
    if not allow_mismatch:
        raise UsageError(message)
    return [f"graded with jax {have}, not the jax {wanted} this course was released for ({ALLOW_FLAG})"]
