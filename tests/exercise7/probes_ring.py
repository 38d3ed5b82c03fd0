"""Worker-side half of the ring suites: wrap the student's per-device functions in jax.pmap.

A per-device function needs an axis name bound by pmap, so the wrapping must happen next to the
student's code, in the worker. Each probe compiles the pmapped function once, runs it, and returns
plain data: the values every device ended with and the compiled HLO text.
"""

import jax
import numpy as np

from grader.sandbox import student_function

AXIS = "ring"  # not the chapter's 'batch' or 'i': the student's code must use the name it is given


def _run(target: str, x, **kwargs) -> dict:
    fn = student_function(target)
    pmapped = jax.pmap(lambda block: fn(block, AXIS, **kwargs), axis_name=AXIS)
    compiled = jax.jit(pmapped).lower(x).compile()
    return {"values": np.asarray(compiled(x)), "hlo": compiled.as_text()}


def ring_shift(x, **kwargs) -> dict:
    return _run("ring.ring_shift", x, **kwargs)


def ring_allreduce(x) -> dict:
    return _run("ring.ring_allreduce", x)


def ring_allreduce_optimal(x) -> dict:
    return _run("ring.ring_allreduce_optimal", x)
