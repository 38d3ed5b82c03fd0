"""Start a grading run's zygote before anything that does not need it.

Before the first student call the zygote must start Python and import JAX (about 0.4 s on a quiet
machine, a second under load), and the grader has little else to do meanwhile. So ``grade EXERCISE``
calls :func:`start` as soon as it has read the course, before it imports the grading pipeline
(NumPy, pytest's plugin, the report): those imports then overlap the zygote's instead of delaying it.
Nothing here imports NumPy (grader.workers.worker imports its protocol when it first talks to a worker).

The zygote's environment names the workspace's folders, the course's time limit (XLA's collective
time-outs) and its backend, so the course is read first; the runner, given this workspace, asks for
the same environment and finds the zygote already starting (grader.workers.launch.Launcher.prepare).
"""

from __future__ import annotations

from grader.course import Course, Exercise
from grader.grading.workspace import Workspace
from grader.layout import Layout
from grader.workers import timeline
from grader.workers.backends import Backend, resolve
from grader.workers.worker import Worker


def single_layouts(exercise: Exercise, devices, backend: Backend) -> list[Layout]:
    """One single-process layout per device count the run grades (``devices``, else the tasks') and ``backend``
    can run: a count this machine cannot take is reported "not run here", and no worker is started for it."""
    counts = set(devices) if devices else {n for t in exercise.tasks for n in t.devices}
    return [Layout(n) for n in sorted(counts) if backend.unavailable(n) is None]


def environments(space: Workspace, exercise: Exercise, devices, backend: Backend, timeout_s: float | None):
    """The environments of the workers a run of ``exercise`` in ``space`` starts first (one per layout)."""
    run = space.settings(backend=backend, memory_mb=0, timeout_s=timeout_s or exercise.timeout_s)
    return [Worker(layout, run.for_layout(layout), space.launcher).environment()
            for layout in single_layouts(exercise, devices, backend)]


def start(course: Course, exercise: Exercise, devices=None, backend: str | None = None,
          timeout_s: float | None = None, own_cache: str = "") -> Workspace:
    """A new workspace, its folders ready, whose zygote for this run's workers is already starting; the
    caller passes it to the grading (grader.grading.pipeline.grade_submission) and closes it after.
    ``own_cache``: the student's own compile cache, for a run of their own exercises (grader.grading.workspace)."""
    with timeline.timed("grader", "start the zygote first"):
        resolved = resolve(backend or course.backend)  # a backend this machine lacks is refused before any folder
        space = Workspace(own_cache=own_cache)
        try:
            space.make_ready()  # the engine's link must be there before the zygote imports from it
            for env in environments(space, exercise, devices, resolved, timeout_s):
                space.launcher.prepare(env, space.code)
        except BaseException:
            space.close()
            raise
    return space
