"""The one type for where a case runs: D devices in one process, or P processes x D devices each.

course.yaml writes a multi-process layout as ``PxD``; reports, exports and the worker pool all use
:class:`Layout`, and every output labels a case with :func:`label`, so a 2x2 case reads
"2 processes x 2 devices" everywhere. Counts and scores in words (:func:`plural`, :func:`number`)
are written here too, once for every output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SPEC = re.compile(r"([1-9][0-9]*)x([1-9][0-9]*)")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 device``, ``2 devices``; ``many`` for words whose plural is not word + s."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def number(x: float, places: int) -> str:
    """``x`` to at most ``places`` decimals, without trailing zeros: ``15``, ``2.5``, ``6.43``."""
    return f"{x:.{places}f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Layout:
    """``devices`` devices per process; ``processes`` set means a group joined by jax.distributed."""

    devices: int
    processes: int | None = None

    def __str__(self) -> str:
        devices = plural(self.devices, "device")
        return f"{plural(self.processes, 'process', 'processes')} x {devices}" if self.processes else devices

    @property
    def spec(self) -> str:
        """How course.yaml and --devices name it: ``2x2`` for a group, ``4`` for one process."""
        return f"{self.processes}x{self.devices}" if self.processes else str(self.devices)

    @property
    def sort_key(self) -> tuple[int, int]:
        return (self.processes or 0, self.devices)

    @classmethod
    def parse(cls, text) -> Layout | None:
        """``"2x4"`` -> 2 processes x 4 devices; None if ``text`` is not such a spec."""
        match = _SPEC.fullmatch(text) if isinstance(text, str) else None
        return cls(devices=int(match[2]), processes=int(match[1])) if match else None


def label(devices: int | None, processes: int | None = None) -> str:
    """The label of a case that ran at ``devices`` (per process), or "" for a case that ran nowhere."""
    return str(Layout(devices, processes)) if devices else ""


def summary(where) -> str:
    """Where several cases ran, from (devices, processes) pairs: "1, 2, 4 devices; 2 processes x 2 devices"."""
    where = {(d, p) for d, p in where if d}
    counts = sorted(d for d, p in where if not p)
    groups = sorted((Layout(d, p) for d, p in where if p), key=lambda lay: lay.sort_key)
    parts = [f"{', '.join(map(str, counts))} device{'' if counts == [1] else 's'}"] if counts else []
    return "; ".join(parts + [str(g) for g in groups])
