"""One grading run, in the grader's own process: the runner and its pytest plugin, the ``student``
fixture, scoring by the rubric, and the report in every format (text, JSON, Gradescope, JUnit).
:func:`grader.grading.pipeline.grade_submission` is the whole chain."""
