"""``grade batch``: grade a class, each submission in a child process of its own, resumably.

Every submission is graded by ``python -m grader EXERCISE --submission DIR --format json`` in a
separate process (which in turn keeps the student's code in its workers), so a submission that
breaks anything breaks only its own grading. Up to ``jobs`` children run at once; each result is
committed to the gradebook the moment its child ends, and only this process writes there (a second
batch on the same gradebook is refused: :mod:`grader.classroom.lock`). A rerun
skips every submission whose result still stands (same submission hash, same course hash), so a
batch killed at any point is finished by running the same command again. All children use the
batch's seed: the whole class is graded on the same inputs, and any result can be reproduced.
Copies of the students' code live only in the batch's scratch (:mod:`grader.classroom.scratch`),
which a killed batch's successor removes.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field

from grader.classroom import fingerprint, intake, regrade, roster, unpack
from grader.classroom.deadlines import Deadlines, priced
from grader.classroom.scratch import BatchScratch
from grader.course import Course, Exercise
from grader.errors import EXIT_USAGE
from grader.grading import confinement
from grader.layout import plural
from grader.classroom.gradebook import FAILED, GRADED, REFUSED, Gradebook, Result
from grader.classroom.progress import Progress

POLL_S = 0.05
STOP_GRACE_S = 10.0  # how long an interrupted batch waits for its gradings to kill their workers and clean up
ENGINE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Settings:
    """What every submission of one batch is graded with."""

    course: Course
    exercise: Exercise
    seed: int
    devices: tuple[int, ...] | None
    course_hash: str
    jobs: int
    timeout_s: float
    backend: str
    deadlines: Deadlines | None = None  # prices late submissions; None when the exercise has no due date
    fingerprints: dict[str, str] = field(default_factory=dict)  # task id -> fingerprint (see fingerprint.py)
    require_sandbox: str = "none"  # checked on each child's recorded sandbox (see Batch._result)


@dataclass
class Planned:
    """A submission to grade; ``refusal`` says why it cannot be graded as sent (else empty). ``tasks``
    are the only tasks to grade, joined into the ``previous`` report (empty: grade them all)."""

    entry: roster.Entry
    submission_hash: str
    refusal: str = ""
    tasks: tuple[str, ...] = ()
    previous: dict | None = None


@dataclass
class Job:
    """A submission being graded by a child process."""

    planned: Planned
    scratch: str
    proc: subprocess.Popen
    started: float
    max_rss_kb: int = 0
    timed_out: bool = False


def _plan_one(entry: roster.Entry) -> Planned:
    if entry.submissions > 1:
        digest = fingerprint.combined_hash(fingerprint.submission_hash(p) for p in entry.paths)
        return Planned(entry, digest, f"{plural(entry.submissions, 'submission')} for this student id "
                                      f"({', '.join(entry.paths)}); keep one and run the batch again")
    if entry.files:  # an LMS download's loose files of one user: one submission
        digest = fingerprint.combined_hash(f"{name} {fingerprint.submission_hash(p)}" for p, name in entry.files)
        return Planned(entry, digest, intake.refusal(entry.files))
    path = entry.paths[0]
    refusal = "" if roster.kind(path) else (f"{os.path.basename(path)} is not a folder, a .zip or a .tar.gz archive, "
                                            "or a notebook")
    return Planned(entry, fingerprint.submission_hash(path), refusal)


def plan(entries: list[roster.Entry], gradebook: Gradebook, course_hash: str, again: bool | set[str],
         fingerprints: dict[str, str]) -> tuple[list[Planned], list[str]]:
    """(submissions to grade, students whose gradebook result still stands). ``again`` is True to grade
    everyone in full, or the task ids to grade again for everyone."""
    todo, kept = [], []
    for entry in entries:
        planned = _plan_one(entry)
        previous = gradebook.get(entry.student)
        tasks = None if again is True else regrade.stale(previous, planned.submission_hash, course_hash,
                                                         fingerprints, again or set())
        if tasks == []:
            kept.append(entry.student)
            continue
        if tasks:
            planned.tasks, planned.previous = tuple(tasks), previous.report
        todo.append(planned)
    return todo, kept


def _die_with_parent() -> None:
    """In the child before exec (Linux): take SIGKILL when the batch dies, so a killed batch leaves
    no grading running behind it."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    line = lines[-1] if lines else ""
    return line.removeprefix("error: ").removeprefix("grader error: ")


class Batch:
    """Runs the planned submissions through at most ``settings.jobs`` children at a time."""

    def __init__(self, settings: Settings, gradebook: Gradebook, progress: Progress):
        self.settings, self.gradebook, self.progress = settings, gradebook, progress

    def _base(self, planned: Planned, **fields) -> Result:
        """A result for ``planned``: no score unless ``fields`` give one."""
        values = dict(student=planned.entry.student, submission_hash=planned.submission_hash,
                      course_hash=self.settings.course_hash, score=0.0, max_score=self.settings.exercise.max_points,
                      error="", source=", ".join(planned.entry.paths), seed=self.settings.seed)
        return Result(**{**values, **fields})

    def _record(self, result: Result) -> None:
        self.gradebook.record(result)
        outcome = (f"{result.score:g} / {result.max_score:g}" if result.status == GRADED
                   else f"{result.status}: {result.error}")
        self.progress.advance(result.student, outcome, error=result.status != GRADED)

    def _command(self, folder: str, output: str, tasks: tuple[str, ...]) -> list[str]:
        s = self.settings
        cmd = [sys.executable, "-m", "grader", s.exercise.name, "--submission", folder, "--format", "json",
               "--output", output, "--course", s.course.path]  # the seed travels in GRADE_SEED (see _start)
        cmd += ["--task", ",".join(tasks), "--backend", s.backend]
        return cmd + (["--devices", ",".join(map(str, s.devices))] if s.devices else [])

    def _start(self, planned: Planned, batch_scratch: BatchScratch, index: int) -> Job | None:
        """Start grading ``planned``; records it at once (and returns None) if it is refused."""
        if planned.refusal:
            self._record(self._base(planned, status=REFUSED, error=planned.refusal))
            return None
        scratch, tmp = batch_scratch.job(index)
        try:
            folder = intake.open_submission(planned.entry, scratch, self.settings.exercise.name)
        except unpack.Refused as exc:
            shutil.rmtree(scratch, ignore_errors=True)
            self._record(self._base(planned, status=REFUSED, error=str(exc)))
            return None
        pythonpath = os.pathsep.join(p for p in (ENGINE_PARENT, os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=pythonpath, GRADE_SEED=str(self.settings.seed),  # not on a command line
                   TMPDIR=tmp)  # the grading's own scratch goes there: inside the batch's
        with open(os.path.join(scratch, "log.txt"), "wb") as log:
            tasks = planned.tasks or tuple(t.id for t in self.settings.exercise.tasks)
            proc = subprocess.Popen(self._command(folder, os.path.join(scratch, "report.json"), tasks), cwd=scratch,
                                    env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=_die_with_parent)
        return Job(planned, scratch, proc, time.monotonic())

    @staticmethod
    def _reaped(job: Job) -> bool:
        """Reap the child if it ended, keeping its exit code and peak memory."""
        if job.proc.returncode is not None:
            return True
        pid, status, usage = os.wait4(job.proc.pid, os.WNOHANG)
        if pid:
            job.proc.returncode = os.waitstatus_to_exitcode(status)
            job.max_rss_kb = usage.ru_maxrss
        return bool(pid)

    def _finished(self, job: Job) -> bool:
        """Reap the child if it ended; kill it if it overran."""
        if self._reaped(job):
            return True
        if time.monotonic() - job.started > self.settings.timeout_s:
            job.timed_out = True
            self._kill(job)
            return True
        return False

    @staticmethod
    def _kill(job: Job) -> None:
        if job.proc.returncode is not None:
            return
        try:
            os.killpg(job.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        job.proc.wait()

    def _stop(self, jobs: list[Job]) -> None:
        """End gradings still running: SIGTERM lets each kill its workers and remove its scratch (as
        Ctrl-C would); whichever has not exited within STOP_GRACE_S is killed."""
        for job in jobs:
            try:
                os.kill(job.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_GRACE_S
        for job in jobs:
            while not self._reaped(job) and time.monotonic() < deadline:
                time.sleep(POLL_S)
            self._kill(job)

    def _result(self, job: Job) -> Result:
        planned, code = job.planned, job.proc.returncode
        common = {"duration_s": round(time.monotonic() - job.started, 3), "max_rss_kb": job.max_rss_kb}
        reason = _last_line(os.path.join(job.scratch, "log.txt"))
        if code == 0 and not job.timed_out:
            try:
                with open(os.path.join(job.scratch, "report.json"), encoding="utf-8") as f:
                    report = json.load(f)
            except (OSError, ValueError) as exc:
                return self._base(planned, status=FAILED, error=f"the grader wrote no readable report ({exc})",
                                  **common)
            lacking = confinement.shortfall(self.settings.require_sandbox, report.get("sandbox", {}))
            if lacking:  # the machine, not the student: a rerun grades it again
                return self._base(planned, status=FAILED, error="its workers were not confined enough for "
                                  f"--require-sandbox {self.settings.require_sandbox}: missing "
                                  f"{confinement.reasons(lacking)}", **common)
            report = regrade.stamp(dict(report, submission=", ".join(planned.entry.paths)), self.settings.fingerprints)
            if planned.previous:
                report = regrade.join(planned.previous, report, list(self.settings.fingerprints))
            graded = self._base(planned, status=GRADED, score=report["score"], max_score=report["max_score"],
                                report=report, **common)
            deadlines = self.settings.deadlines
            lateness = deadlines.lateness(planned.entry.student, planned.entry.paths) if deadlines else None
            return priced(graded, lateness)
        if job.timed_out:
            return self._base(planned, status=FAILED, error=f"grading took longer than {self.settings.timeout_s:g} s "
                              "and was stopped", **common)
        if code == EXIT_USAGE:
            return self._base(planned, status=REFUSED, error=reason, **common)
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return self._base(planned, status=FAILED, error=f"the grader failed ({how}): {reason}", **common)

    def run(self, todo: list[Planned]) -> None:
        """Grade ``todo``; on any exit (Ctrl-C included) running children are stopped, results kept."""
        pending = deque(enumerate(todo))
        running: list[Job] = []
        scratch = BatchScratch()
        try:
            while pending or running:
                while pending and len(running) < self.settings.jobs:
                    index, planned = pending.popleft()
                    job = self._start(planned, scratch, index)
                    if job is not None:
                        running.append(job)
                time.sleep(POLL_S)
                for job in [j for j in running if self._finished(j)]:
                    running.remove(job)
                    self._record(self._result(job))
                    shutil.rmtree(job.scratch, ignore_errors=True)
        finally:
            self._stop(running)
            scratch.remove()
