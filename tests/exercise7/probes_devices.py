"""Worker-side probes for task devices: where the student's array lives can only be seen in the worker.

A probe is named after the student function it runs, so an error inside student code reads as that
function's error in the report.
"""

import jax
import numpy as np

from grader.sandbox import student_function


def put_on_device(x, index):
    """Run put_on_device(x, index); report the type, the ids of the devices the result lives on, the values."""
    out = student_function("devices.put_on_device")(x, index)
    if not isinstance(out, jax.Array):
        return {"type": type(out).__name__}
    return {"type": "jax.Array", "on": sorted(d.id for d in out.devices()),
            "wanted": jax.devices()[index].id, "value": np.asarray(out)}
