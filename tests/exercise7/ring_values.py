"""Worker-side half of the ring suites' value tests: what every device ends with (row i = device i).

The grader wraps the student's per-device function in jax.pmap with an axis name of its own and runs
it on x here. A probe is named after the student function it runs, so an error inside it reads as
that function's error ("ring_shift raised ..."); the structural tests use probes_ring.py instead.
"""

import jax
import numpy as np

from grader.sandbox import student_function

AXIS = "ring"  # not the chapter's 'batch' or 'i': the student's code must use the name it is given


_PMAPPED: dict = {}  # (name, kwargs) -> the pmapped function: a run on other inputs (a probe) compiles nothing new


def _run(name: str, x, **kwargs):
    key = (name, repr(sorted(kwargs.items())))
    if key not in _PMAPPED:
        fn = student_function(f"ring.{name}")
        _PMAPPED[key] = jax.pmap(lambda block: fn(block, AXIS, **kwargs), axis_name=AXIS)
    return np.asarray(_PMAPPED[key](x))


def ring_shift(x, shift=1):
    return _run("ring_shift", x, shift=shift)


def ring_allreduce(x):
    return _run("ring_allreduce", x)


def ring_allreduce_optimal(x):
    return _run("ring_allreduce_optimal", x)
