"""The outcome of one test case: what a report, a score and a gradebook are made of.

Apart from the pytest plugin that produces cases, so that what reads them (scoring, reports, the
gradebook) does not import pytest: a grading run imports it only while its zygote imports JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.layout import label


@dataclass
class Case:
    """The outcome of one test at one device count."""

    nodeid: str
    test: str
    task: str
    devices: int | None
    outcome: str  # passed | failed | skipped
    kind: str = ""
    message: str = ""
    where: str | None = None
    error: str = ""  # the exception's own full text (JAX's, Python's) when the failure was one; for instructors
    duration_s: float = 0.0
    processes: int | None = None  # set for a multi-process layout; devices is then per process
    feedback: list[dict] = field(default_factory=list)  # what the test attached (grader.suite.feedback)
    cut_short: bool = False  # not run: an earlier case of its task timed out at the same layout (see budget)
    # how much its message measured: 2 a difference, 1 a factor that two mesh axes share (which one is not
    # told), 0 only where values differ (grader.suite.checks.Unexplained); a report leads with the most
    told: int = 2

    @property
    def label(self) -> str:
        """Where it ran, as every output names it ("4 devices", "2 processes x 2 devices")."""
        return label(self.devices, self.processes)
