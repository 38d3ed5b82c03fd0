"""The workers of one grading run, by layout: started on first use, reused, replaced after a failure.

One worker per layout (e.g. 4 emulated CPU devices) serves every test of a run. A layout with
``processes`` gets a :class:`grader.workers.group.WorkerGroup`, which answers the same calls. On a
backend whose devices cannot be shared (TPU: one process at a time may open a chip), starting any worker
there (a layout's, a clean one, the reference's) first stops every other that holds them.

Program mode (:meth:`WorkerPool.program`) asks the student's worker for the program exported from the
shapes and dtypes of its inputs, and a *clean* worker of the same layout (forked from the same
zygote, started in a folder of its own, never importing student code) to compile it and run it on
each set of inputs. A clean worker whose program failed is replaced before the next case.

Given :class:`grader.workers.spares.Spares` (watch mode), the pool takes a layout's first worker,
student's or clean, from there when one is waiting, and starts one otherwise; a run that will need a
clean worker forks it early the same way (:meth:`WorkerPool.prestart_clean`).
"""

from __future__ import annotations

import time

from grader.errors import GraderError, StudentFailure
from grader.layout import Layout
from grader.workers.group import WorkerGroup
from grader.workers.launch import Launcher
from grader.workers.spares import Spares
from grader.workers.worker import STARTUP_TIMEOUT_S, Handle, RunSettings, Worker

ENVIRONMENT_KINDS = ("died", "memory")  # failures the machine can cause as well as the student's code
TRACE_S = 10.0  # one trace of the student's function for a message waits this long at most
TRACES_S = 60.0  # and a run spends this long at most on all of them


class WorkerPool:
    def __init__(self, run: RunSettings, engine_path: str, use_zygote: bool = True, launcher: Launcher | None = None,
                 spares: Spares | None = None):
        """``launcher``: one that outlives this pool (watch mode keeps its zygote between runs); by default
        the pool starts its own and closes it with the pool. ``spares``: workers started before this run."""
        self.run = run
        self.backend = run.backend
        self._engine_path = engine_path
        self._owns_launcher = launcher is None
        self._launcher = launcher or Launcher(engine_path, use_zygote, STARTUP_TIMEOUT_S)
        self._workers: dict[Layout, Handle] = {}
        self._clean: dict[Layout, Worker] = {}
        self._reference: dict[Layout, Worker] = {}
        self._spares = spares
        self._own_spares = spares is None  # made by prestart_clean, killed with the pool if nobody took them
        self.student_output: dict[str, str] = {}
        self.worker_seconds = 0.0
        self._sound: set[Layout] = set()  # layouts whose workers ran the grader's own program (_rule_out_environment)
        self._trace_left_s = TRACES_S  # the student's traces a run may still spend (messages only)

    def worker(self, layout: Layout) -> Handle:
        if layout not in self._workers:
            run = self.run.for_layout(layout)
            if layout.processes:
                self._workers[layout] = WorkerGroup(layout, run, self._engine_path,
                                                    self._launcher if run.backend.emulated else None)
            else:
                self._workers[layout] = self._spare(layout, clean=False) or self._own(Worker(layout, run, self._launcher))
        return self._workers[layout]

    def _own(self, worker: Worker) -> Worker:
        """``worker``, made to stop every other of this pool's workers that holds its devices before each start,
        where two processes cannot hold them at once (Backend.exclusive)."""
        if self._exclusive(worker.layout):
            worker.before_start = lambda: self._make_room(worker)
        return worker

    def _exclusive(self, layout: Layout) -> bool:
        return self.run.for_layout(layout).backend.exclusive

    def _make_room(self, starting: Worker) -> None:
        for layout, w in [*self._workers.items(), *self._clean.items(), *self._reference.items()]:
            if w is not starting and w.alive and self._exclusive(w.layout):
                if self._workers.get(layout) is w:
                    self._retire(layout)  # what the student's code printed is kept
                else:
                    w.ask_to_exit()
                    w.stop()

    def prestart_clean(self, layout: Layout) -> None:
        """Fork ``layout``'s clean worker now, as a spare that warms up while the student's calls run, for a
        program test later in the run (no-op once it has one, or when the run has no folder for them)."""
        if layout in self._clean or not self.run.clean_home:
            return
        if self._spares is None:
            self._spares = Spares()
        self._spares.add(self.run, self._launcher, layout, clean=True)

    def _spare(self, layout: Layout, clean: bool) -> Worker | None:
        return self._spares.take(layout, self.run.for_layout(layout), clean) if self._spares is not None else None

    def layouts(self) -> tuple[list[Layout], list[Layout]]:
        """The layouts this run started workers for: (student's, clean ones')."""
        return list(self._workers), list(self._clean)

    def prestart(self, layouts) -> None:
        """Start (in the background) what workers for ``layouts`` will be forked from."""
        for layout in layouts:
            worker = self.worker(layout)
            if isinstance(worker, Worker):
                self._launcher.prepare(worker.environment(), self.run.code)

    def _every(self) -> tuple:
        """Every worker this pool started: the student's, the clean ones, the reference's."""
        return (*self._workers.values(), *self._clean.values(), *self._reference.values())

    @property
    def start_seconds(self) -> float:
        return sum(w.start_s for w in self._every())

    @property
    def sandbox_records(self) -> list[dict]:
        """What confined each worker process started so far (a group's: each member's; clean workers too)."""
        return [r for w in self._every() for r in w.sandbox_records]

    @property
    def peak_worker_rss_kb(self) -> int:
        return max((w.peak_rss_kb for w in self._every()), default=0)

    def request(self, layout: Layout, op: str, target: str, args, kwargs, what: str, timeout_s=None):
        try:
            value, elapsed = self.worker(layout).request(op, target, args, kwargs, what, timeout_s)
        except StudentFailure as failure:
            self._rule_out_environment(layout, failure)
            raise
        self.worker_seconds += elapsed
        return value

    def _rule_out_environment(self, layout: Layout, failure: StudentFailure) -> None:
        """A worker that died or ran out of memory may have been killed by the machine, not by the student's
        code: a JAX installation that needs more address space than ``memory_mb`` (the CUDA plugin loaded
        under --backend cpu), threads the system will not start. Once per layout, a fresh clean worker (in its
        own folder, beside none of the student's files) runs only the grader's own small program (a spare's warm-up, which any solution needs too); if that fails as
        well, the failure is the environment's: a GraderError (exit 3) with the cause, never a verdict."""
        if failure.kind not in ENVIRONMENT_KINDS or layout.processes or layout in self._sound:
            return
        canary = self._own(Worker(layout, self.run.for_layout(layout), self._launcher,
                                  clean_dir=self.run.clean_home or None, warm_up=True))
        try:
            canary.start()
        except GraderError as cause:
            raise GraderError(f"{failure.message}; a fresh worker for {layout} running only the grader's own small "
                              f"program fails too, so this is the environment, not the submission: {cause}") from None
        finally:
            canary.kill()
        self._sound.add(layout)

    def program(self, layout: Layout, target: str, specs, input_sets: list, kwargs, what: str,
                timeout_s=None, arrives=None, tolerance: tuple[float, float] | None = None, called: str = "") -> dict:
        """Export ``target`` from the shapes and dtypes ``specs`` in the student's worker, run the program on
        each of ``input_sets`` in a clean one, its inputs laid out as ``arrives`` says, its collectives measured
        to the case's ``tolerance`` (rtol, atol; see grader.sandbox.program_runner), a refusal naming it as
        ``called`` says: {"values": one per set, "hlo": its text, "manual": bool, ...}."""
        if layout.processes:
            raise GraderError(f"program mode runs one process; {target} is asked for on {layout}")
        blob = self.request(layout, "program", target, specs, kwargs, what, timeout_s)
        clean = self._clean_worker(layout)
        try:
            out, elapsed = clean.request("run_program", target, tuple(input_sets),
                                          {"program": blob, "arrives": arrives, "tolerance": tolerance,
                                           "called": called}, what,
                                          timeout_s)
        except StudentFailure as failure:
            clean.kill()  # whatever the program did to this process stays out of the next case
            self._rule_out_environment(layout, failure)
            raise
        self.worker_seconds += elapsed
        return out

    def reference_program(self, layout: Layout, target: str, specs, inputs: tuple, kwargs, what: str,
                          timeout_s=None, arrives=None) -> dict:
        """{"hlo": the compiled HLO, "held": the input shares (grader.sandbox.program_held), "outside" and "inside":
        the work written outside and inside per-device code (grader.sandbox.program_outside)} of the course's
        reference solution for ``target``, exported from the same shapes
        and compiled by ``layout``'s clean worker for the same inputs and layout as the student's program
        (:meth:`program`): what the student's program is compared with. A reference that fails is the
        course's fault: GraderError."""
        if not self.run.reference:
            raise GraderError(f"no reference solution here to compile {target} for {layout}")
        clean = self._clean_worker(layout)
        try:
            blob, _ = self._reference_worker(layout).request("program", target, specs, kwargs, what, timeout_s)
            out, _ = clean.request("run_program", target, (tuple(inputs),),
                                   {"program": blob, "arrives": arrives, "ablate": False}, what, timeout_s)
        except StudentFailure as failure:
            clean.kill()
            self._reference.pop(layout).kill()
            raise GraderError(f"the course's reference solution fails where the student's program was compared "
                              f"with it ({target} on {layout}): {failure.message}") from None
        return {"hlo": out["hlo"], "held": out["held"], "outside": out["outside"], "inside": out["inside"]}

    def _reference_worker(self, layout: Layout) -> Worker:
        if layout not in self._reference:
            self._reference[layout] = self._own(Worker(layout, self.run.for_layout(layout), self._launcher,
                                                       reference_dir=self.run.reference))
        return self._reference[layout]

    def traced_collectives(self, layout: Layout, target: str, specs, kwargs, what: str, timeout_s=None,
                           reference: bool = False) -> dict | None:
        """The collectives of ``target`` (the student's, or the ``reference``'s) traced on ``specs`` with
        shard_map's replication check off (grader.sandbox.traced_collectives), for the message of a failure;
        None where the trace fails. The student's list is the student's process's word: for a message only,
        so one trace waits TRACE_S at most, and a run spends TRACES_S at most on them: a function slow only
        when traced for a message cannot slow a run down by more."""
        if layout.processes or (reference and not self.run.reference):
            return None
        try:
            if reference:
                return self._reference_worker(layout).request("collectives", target, specs, kwargs, what,
                                                              timeout_s)[0]
            if self._trace_left_s <= 0:
                return None
            began = time.monotonic()
            try:
                return self.request(layout, "collectives", target, specs, kwargs, what,
                                    min(timeout_s or TRACE_S, TRACE_S, self._trace_left_s))
            finally:
                self._trace_left_s -= time.monotonic() - began
        except StudentFailure:
            return None

    def _clean_worker(self, layout: Layout) -> Worker:
        if layout not in self._clean:
            if not self.run.clean_home:  # else a clean worker would start in the student's scratch
                raise GraderError("program mode needs RunSettings.clean_home, a folder for clean workers")
            self._clean[layout] = (self._spare(layout, clean=True)
                                   or self._own(Worker(layout, self.run.for_layout(layout), self._launcher,
                                                       clean_dir=self.run.clean_home)))
        return self._clean[layout]

    def info(self) -> dict:
        """What the workers reported about JAX and their devices (from any one that started)."""
        for w in self._workers.values():
            if w.info:
                return {k: w.info[k] for k in ("jax_version", "platform", "device_kind")}
        return {}

    def _retire(self, layout: Layout) -> None:
        w = self._workers[layout]
        w.ask_to_exit()
        self._keep_output(layout, w.stop())

    def finish(self, layout: Layout) -> None:
        """End ``layout``'s worker and clean worker once the run has no more cases there (what the student's
        printed is kept for the report): a run then holds one layout's processes at a time, not every one."""
        ending = [w for w in (self._workers.get(layout), self._clean.get(layout), self._reference.get(layout))
                  if w is not None]
        for w in ending:
            w.ask_to_exit()
        if layout in self._workers:
            self._keep_output(layout, self._workers[layout].stop())
        for held in (self._clean, self._reference):
            if layout in held:
                held[layout].stop()

    def _keep_output(self, layout: Layout, text: str) -> None:
        if text.strip():
            self.student_output[str(layout)] = self.student_output.get(str(layout), "") + text

    def close(self) -> None:
        """Ask every worker to exit, give each a moment, then end whatever is left (and the zygotes)."""
        try:
            for w in self._every():
                w.ask_to_exit()
            for layout, w in self._workers.items():
                self._keep_output(layout, w.stop())
        finally:
            self.kill()

    def kill(self) -> None:
        """End every worker and zygote now, without waiting for a student call in flight (Ctrl-C)."""
        for layout, w in self._workers.items():
            self._keep_output(layout, w.stop(grace_s=0))
        for w in (*self._clean.values(), *self._reference.values()):
            w.stop(grace_s=0)  # what XLA printed while compiling is not the student's output
        if self._own_spares and self._spares is not None:
            self._spares.close()
        if self._owns_launcher:
            self._launcher.close()
