"""The worker side: everything that runs inside the student's processes.

The worker loop (:mod:`.worker`), the fork-server half of the zygote (:mod:`.forkserver`) and the
code that imports and calls student modules (:mod:`.student_code`). Nothing here imports the
grader-side packages (workers, grading, suite, classroom, authoring, cli), and the grader process
never imports this package: the two sides meet only on the pipe (:mod:`grader.protocol`).

Probe modules of a hidden suite run here, next to the student's code, and get student functions
with ``from grader.sandbox import student_function``.
"""

from grader.sandbox.student_code import student_function

__all__ = ["student_function"]
