"""Spare workers: started and warmed up between two grading runs, taken by the next run's pool.

Watch mode regrades on every save. A worker's first compile in a new process pays for setting up
XLA (a tenth of a second or so, for each device count and for each clean worker), and that is work
no student code is needed for. So once a run is over and all of its workers are gone, the next
run's workers are forked at once, each compiles one small collective program of the grader's own
(``WorkerSettings.warm_up``), and they wait, without having read a line of student code, for the
save that starts the next run. They are fresh processes in every sense that matters: none has run
student code, and each run still gets its own (a spare is taken once, or killed).

A single run forks spares too, for what it will need later: the pool of a run whose suite runs
programs forks each layout's clean worker once the student's first call at that layout is over
(:meth:`grader.workers.pool.WorkerPool.prestart_clean`), so it warms up on a core the student's
calls leave free.

A spare serves only a run with the same :class:`RunSettings` (the same folders, backend, limits);
anything else gets a worker started on demand, as without spares. Only single-process workers on a
backend whose devices can be shared have spares: a TPU chip opens in one process at a time, and a
multi-process group needs its coordinator's port when it starts.
"""

from __future__ import annotations

from grader.errors import GraderError
from grader.layout import Layout
from grader.workers.launch import Launcher
from grader.workers.worker import RunSettings, Worker


class Spares:
    def __init__(self):
        self._waiting: dict[tuple[Layout, bool], Worker] = {}

    def start(self, run: RunSettings, launcher: Launcher, layouts: list[Layout], clean: list[Layout]) -> None:
        """Fork a warmed-up worker for each of ``layouts`` and a clean one for each of ``clean``; no-op on an
        exclusive backend. Returns at once: the workers set up JAX in the background."""
        self.close()
        for layout, is_clean in [*((lt, False) for lt in layouts), *((lt, True) for lt in clean)]:
            self.add(run, launcher, layout, is_clean)

    def add(self, run: RunSettings, launcher: Launcher, layout: Layout, clean: bool) -> None:
        """Fork one more spare (none if one for ``layout`` and ``clean`` is waiting already, on an exclusive
        backend, or for a multi-process layout); returns at once."""
        run = run.for_layout(layout)
        if run.backend.exclusive or layout.processes or (layout, clean) in self._waiting:
            return
        worker = Worker(layout, run, launcher, clean_dir=run.clean_home if clean else None, warm_up=True)
        try:
            worker.spawn()
        except OSError:  # no process to be had now (e.g. too many): the run starts its own when it needs one
            worker.kill()
            return
        self._waiting[(layout, clean)] = worker

    def take(self, layout: Layout, run: RunSettings, clean: bool = False) -> Worker | None:
        """The spare for ``layout``, once it is ready, or None (none was started for this run's settings, or it
        could not start: the caller starts one as usual)."""
        worker = self._waiting.pop((layout, clean), None)
        if worker is None:
            return None
        if worker.run != run or not worker.alive:
            worker.kill()
            return None
        try:
            worker.await_ready()
        except GraderError:
            worker.kill()
            return None
        return worker

    def close(self) -> None:
        """Kill every spare nobody took."""
        for worker in self._waiting.values():
            worker.kill()
        self._waiting.clear()
