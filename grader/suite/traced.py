"""The first difference between the collectives a student's function asks for and the reference's, read
from their traces where the program cannot be built (grader.sandbox.traced_collectives).

A shard_map whose out_specs JAX rejects leaves no compiled program to compare, and JAX's words name a
type, not a mistake. Traced again with JAX's check off, both functions say which collectives they ask
for over which mesh axes; the first difference (a collective over other axes, one combining otherwise,
one missing, one too many) is what the student's function does that the reference's does not. The
student's list comes from the student's process, so it is checked for form and used in a message only.
"""

from __future__ import annotations

from collections import Counter

from grader.suite.meshes import over_text

# The collectives a trace can name, as the code asks for them.
NAMES = ("psum", "pmean", "pmax", "pmin", "ppermute", "all_gather", "psum_scatter", "all_to_all")
# Reductions: one where the reference runs another over the same axes combines the devices' values otherwise.
_COMBINES = {"psum": "adds up", "pmean": "averages", "pmax": "takes the maximum", "pmin": "takes the minimum"}
_MOST = 64  # collectives read from one trace at most
_AXIS_CHARS = 40


def read(found) -> list[tuple[str, tuple[str, ...]]] | None:
    """A trace's list, [[name, [axis, ...]], ...], as (name, axes) pairs; None if it is not of that form."""
    if not isinstance(found, (list, tuple)) or len(found) > _MOST:
        return None
    pairs = []
    for item in found:
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and item[0] in NAMES
                and isinstance(item[1], (list, tuple)) and len(item[1]) <= 4
                and all(isinstance(a, str) and 0 < len(a) <= _AXIS_CHARS for a in item[1])):
            return None
        pairs.append((item[0], tuple(item[1])))
    return pairs


def _call(name: str, axes: tuple[str, ...]) -> str:
    return f"lax.{name} {over_text(axes)}"


def difference(mine, theirs) -> str | None:
    """How two traces' collectives differ, in words: a collective over other axes or combining otherwise
    where there is one, else the first one the reference runs more often and the first one the student's
    function runs more often; None where they ask for the same (or either list is not of the traces'
    form)."""
    mine, theirs = read(mine), read(theirs)
    if mine is None or theirs is None:
        return None
    have, want = Counter(mine), Counter(theirs)
    extra, missing = have - want, want - have
    for name, axes in missing:
        other = [n for n, a in extra if a == axes and n in _COMBINES and name in _COMBINES]
        if other:
            return (f"your function {_COMBINES[other[0]]} with {_call(other[0], axes)}; the reference's "
                    f"{_COMBINES[name]} (lax.{name})")
        elsewhere = [a for n, a in extra if n == name]
        if elsewhere:
            return f"your function's lax.{name} runs {over_text(elsewhere[0])}; the reference's runs {over_text(axes)}"
    said = []
    for name, axes in list(missing)[:1]:
        said.append(f"the reference's function runs {_call(name, axes)} {_times(want[name, axes])}, yours "
                    f"{_times(have[name, axes])}")
    for name, axes in list(extra)[:1]:
        said.append(f"your function runs {_call(name, axes)} {_times(have[name, axes])}, the reference's "
                    f"{_times(want[name, axes])}")
    return "; ".join(said) or None


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")
