"""Wrong values whose pattern names the mistake: "wrong at 7 of 8 entries" is where a student starts,
"4 times the answer on 4 devices: a psum where a pmean was meant" is where they stop.

:func:`recognise` compares a wrong result with the expected one (float64 NumPy, in the grader
process) and returns one sentence when the difference has a shape a multi-device mistake leaves:

* n times or 1/n times the answer (a psum for a pmean, or the reverse), or another constant factor;
* one device's contribution missing, or counted twice (``parts``: what each device adds);
* every device holding what its neighbour should (shifted by one device along the leading axis);
* devices that disagree where every device should hold the same global value;
* padding counted as real rows (``rows``: real and padded row counts of a mean);
* an epsilon-sized offset (close to the answer, but outside the tolerance).

It knows nothing of a task: the suite says what the device axis, the parts and the rows are.
"""

from __future__ import annotations

import numpy as np


def _close(a, b, rtol: float, atol: float) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _factor(got, expected, rtol, atol) -> float | None:
    """c with got == c * expected everywhere, if there is one (and expected is not all zeros)."""
    scale = np.abs(expected)
    if scale.max(initial=0) <= atol:
        return None
    i = np.unravel_index(np.argmax(scale), scale.shape)
    c = float(got[i] / expected[i])
    return c if _close(got, c * expected, rtol, atol) else None


def _factor_sentence(c: float, devices: int | None, rows: tuple[int, int] | None) -> str | None:
    def near(value):
        return abs(c - value) <= 1e-3 * max(1.0, abs(value))

    if devices and devices > 1 and near(devices):
        return (f"is {devices} times the answer on {devices} devices: the devices' values were added up where "
                "they should be averaged (lax.psum where lax.pmean was meant, or a sum not divided by the count)")
    if devices and devices > 1 and near(1 / devices):
        return (f"is 1/{devices} of the answer on {devices} devices: the devices' values were averaged where they "
                "should be added up (lax.pmean where lax.psum was meant, or divided by the device count once too "
                "often)")
    if rows and rows[0] != rows[1] and near(rows[0] / rows[1]):
        real, padded = rows
        return (f"is {real}/{padded} of the answer: the {padded - real} padding rows were counted as real rows "
                f"(zeros in a mean over {padded}); leave them out, with the mask, and divide by {real}")
    if abs(c - 1) <= 1e-2 or near(0.0):
        return None  # within 1% of the answer: an epsilon, not a factor
    return f"is {c:.4g} times the answer everywhere: a constant factor is wrong (a count, a learning rate, a scale)"


def _one_part(got, expected, parts, rtol, atol) -> str | None:
    for d, part in enumerate(parts):
        if not np.abs(part).max(initial=0) > atol:
            continue  # a device that adds nothing cannot be told missing
        if _close(got, expected - part, rtol, atol):
            return (f"leaves out device {d}'s contribution: the sum over the devices stops one short (a loop of "
                    "n - 1 where every device's part is needed, or a ring one step too short)")
        if _close(got, expected + part, rtol, atol):
            return (f"counts device {d}'s contribution twice (it adds its own part once more, or a ring goes one "
                    "step too far)")
    return None


def _one_part_per_device(got, expected, parts, rtol, atol) -> str | None:
    """Each device (row of the result) short of, or over by, one device's part, not the same one everywhere."""
    for sign, sentence in ((-1, "leaves out one device's contribution (device 0 misses device {k}'s): the sum "
                                "stops one short; a ring needs n - 1 steps to bring every other device's part"),
                           (1, "counts one device's contribution twice (device 0 adds device {k}'s once more): a "
                               "ring of n steps brings every device's own part back to it")):
        found = [next((k for k, part in enumerate(parts) if np.abs(part[j]).max(initial=0) > atol
                       and _close(got[j], expected[j] + sign * part[j], rtol, atol)), None) for j in range(len(got))]
        if None not in found:
            return "on every device " + sentence.format(k=found[0])
    return None


def _shifted(got, expected, rtol, atol) -> str | None:
    for shift, direction in ((1, "the one before it"), (-1, "the one after it")):
        if _close(got, np.roll(expected, shift, axis=0), rtol, atol):
            return (f"holds on every device what {direction} should hold: the result is shifted by one device "
                    "(a ring that turns the wrong way, or one shift too many or too few)")
    return None


def _disagree(got, expected, rtol, atol) -> str | None:
    if not all(_close(row, expected[0], rtol, atol) for row in expected[1:]):
        return None  # the devices are not meant to agree
    other = next((d for d in range(1, len(got)) if not _close(got[d], got[0], rtol, atol)), None)
    if other is None:
        return None
    return (f"differs between devices (device 0 and device {other} hold different values), but every device "
            "should hold the same global value: did each device use only its own data? Combine the devices' "
            "values with a collective (lax.psum / lax.pmean) first")


def _epsilon(got, expected, rtol, atol) -> str | None:
    worst = float(np.max(np.abs(got - expected)))
    if _close(got, expected, max(rtol, 1e-2), max(atol, 1e-3)):
        return (f"is close to the answer but off by up to {worst:.2g}, more than the tolerance: is a small "
                "epsilon added where the task says none (e.g. jnp.sqrt(var + 1e-5)), or a step done in lower "
                "precision?")
    return None


def recognise(got, expected, *, devices: int | None = None, parts=None, rows: tuple[int, int] | None = None,
              device_axis: bool = False, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """One sentence naming the mistake behind ``got`` (which is not ``expected``), or None.

    ``devices``: the case's device count (enables n times and 1/n). ``parts``: what each device
    contributes, ``parts.sum(axis=0) == expected``. ``rows``: (real, padded) row counts of a mean over
    padded data. ``device_axis``: axis 0 of the result is one row per device (enables shifted and
    disagreeing devices).
    """
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape or not np.isfinite(got).all() or _close(got, expected, rtol, atol):
        return None
    parts = None if parts is None else np.asarray(parts, np.float64)
    if parts is not None:
        said = _one_part(got, expected, parts, rtol, atol)
        if said:
            return said
    if device_axis and got.ndim and len(got) > 1:
        said = ((parts is not None and _one_part_per_device(got, expected, parts, rtol, atol))
                or _shifted(got, expected, rtol, atol) or _disagree(got, expected, rtol, atol))
        if said:
            return said
    c = _factor(got, expected, rtol, atol)
    if c is not None:
        said = _factor_sentence(c, devices, rows)
        if said:
            return said
    return _epsilon(got, expected, rtol, atol)
