"""The API hidden suites are written against (documented in docs/suites.md).

A test gets the ``student``, ``devices``, ``rng`` (and, for multi-process tasks, ``processes``)
fixtures from the grader's pytest plugin; it checks what the student's code returned with the
``expect_*`` checks, reads compiled programs with :mod:`grader.suite.hlo`, and may catch a
:class:`StudentFailure` to judge a failure itself. Everything here runs in the grader's process on
plain data; nothing here runs student code.
"""

from grader.errors import StudentFailure
from grader.protocol import PerProcess
from grader.suite import feedback, hlo, meshes
from grader.suite.checks import (Bypass, WrongProgram, as_array, expect_close, expect_raises, expect_sequence,
                                 expect_shape, explained)

__all__ = ["Bypass", "PerProcess", "StudentFailure", "WrongProgram", "as_array", "expect_close", "expect_raises",
           "expect_sequence", "expect_shape", "explained", "feedback", "hlo", "meshes"]
