"""Worker-side half of the ring suites: wrap the student's per-device functions in jax.pmap.

A per-device function needs an axis name bound by pmap, so the wrapping must happen next to the
student's code, in the worker. Each probe returns the pmapped function. A structural test asks for
it with ``student.program``, which exports it and has a clean worker compile and run it, so the
values every device ended with and the compiled HLO come from one program; a test of values alone
runs it with ring_values.py.
"""

import jax

from grader.sandbox import student_function

AXIS = "ring"  # not the chapter's 'batch' or 'i': the student's code must use the name it is given


def _pmapped(target: str, **kwargs):
    fn = student_function(target)
    return jax.pmap(lambda x: fn(x, AXIS, **kwargs), axis_name=AXIS)


def ring_shift(**kwargs):
    return _pmapped("ring.ring_shift", **kwargs)


def ring_allreduce():
    return _pmapped("ring.ring_allreduce")


def ring_allreduce_optimal():
    return _pmapped("ring.ring_allreduce_optimal")
