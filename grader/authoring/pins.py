"""Version pins: the exact versions a release records (grading checks them: grader.grading.versions).

Versions are read from package metadata, never by importing JAX: the grader process stays JAX-free.
"""

from __future__ import annotations

import importlib.metadata as metadata
import platform

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from grader.errors import UsageError
from grader.grading.versions import installed


def grader_distribution() -> metadata.Distribution:
    """The installed distribution that provides the ``grader`` package (for its name and deps)."""
    names = metadata.packages_distributions().get("grader", [])
    if not names:
        raise UsageError("the grader is not installed as a package, so its dependencies are unknown; "
                         "run pip install -e . in the course before making a release")
    return metadata.distribution(names[0])


def _active(req: Requirement, extras: set[str]) -> bool:
    if req.marker is None:
        return True
    env = default_environment()
    return any(req.marker.evaluate(dict(env, extra=e)) for e in (extras or {""}))


def pinned(dist: metadata.Distribution) -> dict[str, str]:
    """Exact installed versions of ``dist``'s dependencies, transitively: {name: version}."""
    pins: dict[str, str] = {}
    todo = [r for r in map(Requirement, dist.requires or ()) if _active(r, set())]
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        if name in pins:
            continue
        version = installed(req.name)
        if version is None:
            raise UsageError(f"{req.name} (needed by {dist.metadata['Name']}) is not installed; install the "
                             "grader's dependencies before making a release")
        pins[name] = version
        todo += [r for r in map(Requirement, metadata.requires(req.name) or ()) if _active(r, set(req.extras))]
    return dict(sorted(pins.items()))


def requires_python(dists: list[str]) -> str:
    """The smallest ``>=3.N`` that satisfies every distribution's Requires-Python."""
    specs = [SpecifierSet(metadata.metadata(d).get("Requires-Python") or "") for d in dists]
    for minor in range(8, 30):
        if all(f"3.{minor}" in s for s in specs):
            return f">=3.{minor}"
    return f">={platform.python_version()}"
