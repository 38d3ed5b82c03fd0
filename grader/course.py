"""course.yaml: the rubric, loaded into plain dataclasses and validated with line numbers.

The engine knows nothing about a particular exercise: everything it grades is named here. Errors
say which file, which line, which key and what was expected, because the person reading them is an
instructor fixing a typo the night before a deadline.
"""

from __future__ import annotations

import datetime
import difflib
import os
import zoneinfo
from dataclasses import dataclass, field, replace

import yaml

from grader.errors import UsageError
from grader.layout import Layout

COURSE_FILE = "course.yaml"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
BACKENDS = ("cpu", "gpu", "tpu", "auto")
RELEASE_KINDS = ("student", "autograder")


class CourseError(UsageError):
    """course.yaml is malformed; the message names file, line and key."""


@dataclass(frozen=True)
class TestRule:
    weight: float = 1.0
    visibility: str = "visible"
    # Its cases earn their points together or not at all: a claim about the program (a structural test: "a ring of
    # n - 1 ppermutes"), which a program that passes at some device counts and not at others does not make good.
    all_counts: bool = False


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    points: float
    hint: str
    devices: tuple[int, ...]
    timeout_s: float
    files: tuple[str, ...]
    extra_credit: bool = False
    # The limit of a student's own run (see Exercise.local); None: timeout_s. Not in repr, which the batch's
    # fingerprints hash (grader/classroom/fingerprint.py): the autograder's results do not depend on it.
    local_timeout_s: float | None = field(default=None, repr=False)
    visibility: str = "visible"
    tests: dict[str, TestRule] = field(default_factory=dict)
    processes: tuple[Layout, ...] = ()  # multi-process layouts; then ``devices`` is empty
    # Whether course.yaml gives the task device counts of its own (a task graded at fewer than the exercise's, as
    # one whose checks mean nothing on fewer devices): --devices then picks among them. Not in repr, as above.
    own_devices: bool = field(default=False, repr=False)

    def rule(self, test_name: str) -> TestRule:
        return self.tests.get(test_name, TestRule(visibility=self.visibility))


@dataclass(frozen=True)
class LatePolicy:
    """What a late submission loses: ``per_day`` percent of its score for each day or part of a day
    after the deadline, at most ``cap`` percent; nothing within ``grace_minutes`` of the deadline."""

    per_day: float
    cap: float = 100.0
    grace_minutes: float = 0.0


@dataclass(frozen=True)
class Exercise:
    name: str
    title: str
    tasks: tuple[Task, ...]
    suite: str
    stubs: str
    solutions: str
    complete: bool = True  # False once cut down to some of its tasks (see only)
    due: datetime.datetime | None = None  # timezone-aware
    late: LatePolicy | None = None

    def task(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        close = difflib.get_close_matches(task_id, [t.id for t in self.tasks], n=1)
        guess = f" (did you mean {close[0]}?)" if close else ""
        raise UsageError(f"no task '{task_id}' in {self.name}{guess}; known: {', '.join(t.id for t in self.tasks)}")

    def only(self, task_ids) -> Exercise:
        """This exercise cut down to ``task_ids`` (all of it when empty): grading a subset of tasks.

        The graded tasks are chosen here, once; everything downstream (plugin, scoring, report)
        reads ``tasks`` and ``complete`` instead of filtering again.
        """
        if not task_ids:
            return self
        chosen = tuple(self.task(t) for t in dict.fromkeys(task_ids))
        return replace(self, tasks=chosen, complete=self.complete and {t.id for t in chosen} == self.task_ids)

    def local(self) -> Exercise:
        """This exercise with the per-call limits of a student's own run (``local_timeout_s``).

        A student grading their own exercises/ folder is waiting at the terminal: an endless loop
        should cost seconds, not the autograder's limit, which leaves room for a loaded grading machine.
        """
        return replace(self, tasks=tuple(replace(t, timeout_s=t.local_timeout_s or t.timeout_s) for t in self.tasks))

    @property
    def task_ids(self) -> set[str]:
        return {t.id for t in self.tasks}

    @property
    def timeout_s(self) -> float:
        """The longest per-call time limit of the (selected) tasks."""
        return max(t.timeout_s for t in self.tasks)

    def tasks_of_module(self, module: str) -> list[Task]:
        """The tasks a stub module holds, by the convention that names a module for its task (``ring.py``
        holds ring and ring_optimal)."""
        return [t for t in self.tasks if t.id == module or t.id.startswith(module + "_")]

    def in_task_order(self, modules) -> list[str]:
        """``modules`` in the order of the tasks they hold; modules that hold none last, by name."""
        first = {m: min((i for i, t in enumerate(self.tasks) if t in self.tasks_of_module(m)), default=len(self.tasks))
                 for m in modules}
        return sorted(modules, key=lambda m: (first[m], m))

    def task_for_file(self, filename: str) -> Task | None:
        for t in self.tasks:
            if filename in t.files:
                return t
        return None

    @property
    def max_points(self) -> float:
        return sum(t.points for t in self.tasks if not t.extra_credit)


@dataclass(frozen=True)
class Release:
    """What ``grade release`` records in a bundle's course.yaml: who it is for, and the exact versions
    it was made with (so grading can refuse a JAX that may behave differently)."""

    kind: str
    jax: str
    jaxlib: str
    grader: str
    python: str = ""
    hidden_cases: dict[str, int] = field(default_factory=dict)  # task id -> cases not in a student bundle

    @property
    def public_only(self) -> bool:
        """A student bundle holds only the visible tests; the rest run at submission."""
        return self.kind == "student"


@dataclass(frozen=True)
class Course:
    name: str
    root: str
    path: str
    exercises: dict[str, Exercise]
    memory_mb: int
    backend: str
    release: Release | None = None
    timezone: datetime.tzinfo = datetime.timezone.utc  # of deadlines written without an offset

    def exercise(self, name: str) -> Exercise:
        if name not in self.exercises:
            close = difflib.get_close_matches(name, list(self.exercises), n=1, cutoff=0.6)
            guess = f" (did you mean {close[0]}?)" if close else ""
            raise UsageError(f"no exercise '{name}'{guess}; known: {', '.join(self.exercises) or '(none)'}")
        return self.exercises[name]


class _Node(dict):
    """A mapping that remembers the line of each key (1-based) and of itself."""

    line: int = 0
    lines: dict


class _Loader(yaml.SafeLoader):
    """A SafeLoader whose mappings are _Node, so errors can name lines."""


def _construct_node(loader, node):
    mapping = _Node(loader.construct_mapping(node, deep=True))
    mapping.line = node.start_mark.line + 1
    mapping.lines = {loader.construct_object(k): k.start_mark.line + 1 for k, _ in node.value}
    return mapping


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """_Loader with libyaml's parser where PyYAML has it: reading course.yaml is on the way to the first
    student call (0.1 s in Python, 10 ms in C). A file it refuses is read again by _Loader, for PyYAML's
    own words on what is wrong."""


for _loader in (_Loader, _FastLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_node)


def _parse(text: str):
    try:
        return yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - raises again, in PyYAML's words

TIME_FORMAT = "a date and time such as 2026-03-01 23:59 or 2026-03-01T23:59+01:00, or a date (its end)"


def parse_time(value, tz: datetime.tzinfo) -> datetime.datetime | None:
    """A deadline or submission time as an aware datetime, or None if ``value`` is not one.

    Accepts ISO 8601 text and YAML's own dates and times; a time without an offset is in ``tz``;
    a date alone means the last second of that day (a deadline "on March 1st" includes March 1st).
    """
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.strip()) if "T" in value or ":" in value \
                else datetime.date.fromisoformat(value.strip())
        except ValueError:
            return None
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=tz)
    if isinstance(value, datetime.date):
        return datetime.datetime.combine(value, datetime.time(23, 59, 59), tz)
    return None


class _Checker:
    """Validation helpers that phrase every problem the same way: file:line: key: expected, got."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, where: str, line: int, expected: str, got=None) -> CourseError:
        got_text = "" if got is None else f", got {got!r}"
        return CourseError(f"{self.path}:{line}: {where}: expected {expected}{got_text}")

    def mapping(self, value, where: str, line: int, allowed: tuple[str, ...], required=()) -> _Node:
        if not isinstance(value, dict):
            raise self.fail(where, line, "a mapping", value)
        for key in value:
            if key not in allowed:
                raise self.fail(f"{where}.{key}", value.lines.get(key, line), f"one of the keys {', '.join(allowed)}")
        for key in required:
            if key not in value:
                raise self.fail(where, value.line or line, f"a key '{key}'")
        return value

    def get(self, node: _Node, key: str, where: str, kind: str, default=None):
        if key not in node:
            return default
        value, line, name = node[key], node.lines.get(key, node.line), f"{where}.{key}"
        if kind == "text":
            if not isinstance(value, str) or not value.strip():
                raise self.fail(name, line, "a non-empty string", value)
        elif kind == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise self.fail(name, line, "a number >= 0", value)
        elif kind == "positive":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise self.fail(name, line, "a number > 0", value)
        elif kind == "bool":
            if not isinstance(value, bool):
                raise self.fail(name, line, "true or false", value)
        elif kind == "devices":
            if not isinstance(value, list) or not value or not all(
                    isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in value):
                raise self.fail(name, line, "a non-empty list of device counts such as [1, 2, 4, 8]", value)
            value = tuple(sorted(set(value)))
        elif kind == "layouts":
            layouts = [Layout.parse(v) for v in value] if isinstance(value, list) else []
            if not layouts or None in layouts:
                raise self.fail(name, line, "a non-empty list of layouts PxD (processes x devices per process) "
                                "such as [2x2, 4x1]", value)
            value = tuple(sorted(set(layouts), key=lambda lay: lay.sort_key))
        elif kind == "visibility":
            if value not in VISIBILITIES:
                raise self.fail(name, line, f"one of {', '.join(VISIBILITIES)}", value)
        elif kind == "backend":
            if value not in BACKENDS:
                raise self.fail(name, line, f"one of {', '.join(BACKENDS)}", value)
        elif kind == "percent":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
                raise self.fail(name, line, "a percentage from 0 to 100", value)
        elif kind == "files":
            if not isinstance(value, list) or not value or not all(
                    isinstance(f, str) and f.startswith("test_") and f.endswith(".py") for f in value):
                raise self.fail(name, line, "a non-empty list of test file names like test_dot.py", value)
            value = tuple(value)
        return value


def _local_limit(ck: _Checker, node: _Node, where: str, timeout_s: float, inherited: float | None) -> float | None:
    """``local_timeout_s`` of ``node`` (else the one inherited), at most ``timeout_s``: a local run may only be
    stricter than the autograder, never let a hang run longer than it would there."""
    value = ck.get(node, "local_timeout_s", where, "positive", None)
    if value is not None and value > timeout_s:
        raise ck.fail(f"{where}.local_timeout_s", node.lines["local_timeout_s"],
                      f"a number > 0 and at most timeout_s ({timeout_s:g})", value)
    limit = value if value is not None else inherited
    return None if limit is None else float(min(limit, timeout_s))


def _load_task(ck: _Checker, node, where: str, line: int, defaults: dict) -> Task:
    node = ck.mapping(node, where, line, ("id", "title", "points", "hint", "devices", "processes", "timeout_s",
                                          "local_timeout_s", "files", "extra_credit", "visibility", "tests"),
                      ("id", "title", "points", "hint"))
    if "devices" in node and "processes" in node:
        raise ck.fail(f"{where}.processes", node.lines["processes"], "either devices or processes in one task, not both")
    task_id = ck.get(node, "id", where, "text")
    if not task_id.isidentifier():
        raise ck.fail(f"{where}.id", node.lines["id"], "an identifier (letters, digits, _)", task_id)
    visibility = ck.get(node, "visibility", where, "visibility", defaults["visibility"])
    tests = {}
    if "tests" in node:
        tests_node = ck.mapping(node["tests"], f"{where}.tests", node.lines["tests"], tuple(node["tests"] or ()))
        for name, rule in tests_node.items():
            rw = f"{where}.tests.{name}"
            rule = ck.mapping(rule if rule is not None else _Node(), rw, tests_node.lines[name],
                              ("weight", "visibility", "all_counts"))
            tests[name] = TestRule(float(ck.get(rule, "weight", rw, "number", 1.0)),
                                   ck.get(rule, "visibility", rw, "visibility", visibility),
                                   ck.get(rule, "all_counts", rw, "bool", False))
    timeout_s = float(ck.get(node, "timeout_s", where, "positive", defaults["timeout_s"]))
    return Task(
        id=task_id,
        title=ck.get(node, "title", where, "text"),
        points=float(ck.get(node, "points", where, "number")),
        hint=ck.get(node, "hint", where, "text"),
        devices=() if "processes" in node else ck.get(node, "devices", where, "devices", defaults["devices"]),
        processes=ck.get(node, "processes", where, "layouts", ()),
        timeout_s=timeout_s,
        local_timeout_s=_local_limit(ck, node, where, timeout_s, defaults["local_timeout_s"]),
        files=ck.get(node, "files", where, "files", (f"test_{task_id}.py",)),
        extra_credit=ck.get(node, "extra_credit", where, "bool", False),
        visibility=visibility,
        tests=tests,
        own_devices="devices" in node,
    )


def _load_late(ck: _Checker, node, where: str, line: int) -> LatePolicy:
    node = ck.mapping(node, where, line, ("per_day", "cap", "grace_minutes"), ("per_day",))
    return LatePolicy(per_day=float(ck.get(node, "per_day", where, "percent")),
                      cap=float(ck.get(node, "cap", where, "percent", 100)),
                      grace_minutes=float(ck.get(node, "grace_minutes", where, "number", 0)))


def _load_due(ck: _Checker, node, where: str, tz: datetime.tzinfo) -> datetime.datetime | None:
    if "due" not in node:
        return None
    due = parse_time(node["due"], tz)
    if due is None:
        raise ck.fail(f"{where}.due", node.lines["due"], TIME_FORMAT, str(node["due"]))
    return due


def _load_timezone(ck: _Checker, node) -> datetime.tzinfo:
    name = ck.get(node, "timezone", "defaults", "text", "UTC")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ck.fail("defaults.timezone", node.lines["timezone"], "an IANA time zone such as Europe/Berlin or UTC",
                      name) from None


def _load_exercise(ck: _Checker, name: str, node, line: int, defaults: dict) -> Exercise:
    where = f"exercises.{name}"
    node = ck.mapping(node, where, line, ("title", "tasks", "devices", "timeout_s", "local_timeout_s", "suite", "stubs",
                                          "solutions", "due", "late"), ("title", "tasks"))
    timeout_s = ck.get(node, "timeout_s", where, "positive", defaults["timeout_s"])
    defaults = dict(defaults, devices=ck.get(node, "devices", where, "devices", defaults["devices"]), timeout_s=timeout_s,
                    local_timeout_s=_local_limit(ck, node, where, timeout_s, defaults["local_timeout_s"]))
    tasks_node = node["tasks"]
    if not isinstance(tasks_node, list) or not tasks_node:
        raise ck.fail(f"{where}.tasks", node.lines["tasks"], "a non-empty list of tasks", tasks_node)
    tasks, seen_ids, seen_files = [], set(), set()
    for i, t in enumerate(tasks_node):
        tw = f"{where}.tasks[{i}]"
        task = _load_task(ck, t, tw, getattr(t, "line", node.lines["tasks"]), defaults)
        if task.id in seen_ids:
            raise ck.fail(f"{tw}.id", t.lines["id"], "a task id not used before in this exercise", task.id)
        for f in task.files:
            if f in seen_files:
                raise ck.fail(f"{tw}.files", t.lines.get("files", t.line), "each test file in one task only", f)
            seen_files.add(f)
        seen_ids.add(task.id)
        tasks.append(task)
    return Exercise(
        name=name,
        title=ck.get(node, "title", where, "text"),
        tasks=tuple(tasks),
        suite=ck.get(node, "suite", where, "text", f"tests/{name}"),
        stubs=ck.get(node, "stubs", where, "text", f"exercises/{name}"),
        solutions=ck.get(node, "solutions", where, "text", f"solutions/{name}"),
        due=_load_due(ck, node, where, defaults["timezone"]),
        late=_load_late(ck, node["late"], f"{where}.late", node.lines["late"]) if "late" in node else defaults["late"],
    )


def _load_release(ck: _Checker, node, line: int) -> Release:
    node = ck.mapping(node, "release", line, ("kind", "jax", "jaxlib", "grader", "python", "hidden_cases"),
                      ("kind", "jax", "jaxlib", "grader"))
    kind = ck.get(node, "kind", "release", "text")
    if kind not in RELEASE_KINDS:
        raise ck.fail("release.kind", node.lines["kind"], f"one of {', '.join(RELEASE_KINDS)}", kind)
    hidden = node.get("hidden_cases", {})
    if not isinstance(hidden, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                               and v >= 0 for k, v in hidden.items()):
        raise ck.fail("release.hidden_cases", node.lines.get("hidden_cases", line),
                      "a mapping of task ids to case counts such as {dot: 12}", hidden)
    return Release(kind=kind, jax=ck.get(node, "jax", "release", "text"),
                   jaxlib=ck.get(node, "jaxlib", "release", "text"),
                   grader=ck.get(node, "grader", "release", "text"),
                   python=ck.get(node, "python", "release", "text", ""), hidden_cases=dict(hidden))


def load_course(path: str) -> Course:
    """Load and validate a course.yaml; raises CourseError naming what is wrong and where."""
    path = os.path.abspath(path)
    ck = _Checker(os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path)
    try:
        with open(path, encoding="utf-8") as f:
            data = _parse(f.read())
    except OSError as exc:
        raise CourseError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}" if mark else ""
        raise CourseError(f"{ck.path}{at}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    root = ck.mapping(data if data is not None else _Node(), "(top level)", 1,
                      ("course", "defaults", "exercises", "release"), ("course", "exercises"))
    dnode = ck.mapping(root.get("defaults", _Node()), "defaults", root.lines.get("defaults", 1),
                       ("devices", "timeout_s", "local_timeout_s", "memory_mb", "visibility", "backend", "timezone",
                        "late"))
    timeout_s = ck.get(dnode, "timeout_s", "defaults", "positive", 60)
    defaults = {
        "devices": ck.get(dnode, "devices", "defaults", "devices", (1, 2, 4, 8)),
        "timeout_s": timeout_s,
        "local_timeout_s": _local_limit(ck, dnode, "defaults", timeout_s, None),
        "visibility": ck.get(dnode, "visibility", "defaults", "visibility", "visible"),
        "timezone": _load_timezone(ck, dnode),
        "late": _load_late(ck, dnode["late"], "defaults.late", dnode.lines["late"]) if "late" in dnode else None,
    }
    memory_mb = ck.get(dnode, "memory_mb", "defaults", "positive", 4096)
    exercises_node = ck.mapping(root["exercises"], "exercises", root.lines["exercises"], tuple(root["exercises"] or ()))
    if not exercises_node:
        raise ck.fail("exercises", root.lines["exercises"], "at least one exercise")
    exercises = {name: _load_exercise(ck, name, node, exercises_node.lines[name], defaults)
                 for name, node in exercises_node.items()}
    return Course(name=ck.get(root, "course", "(top level)", "text"), root=os.path.dirname(path), path=path,
                  exercises=exercises, memory_mb=int(memory_mb),
                  backend=ck.get(dnode, "backend", "defaults", "backend", "cpu"),
                  release=_load_release(ck, root["release"], root.lines["release"]) if "release" in root else None,
                  timezone=defaults["timezone"])


def find_course(start: str | None = None, explicit: str | None = None) -> Course:
    """The course given by --course, else the first course.yaml walking up from ``start``."""
    if explicit:
        path = os.path.join(explicit, COURSE_FILE) if os.path.isdir(explicit) else explicit
        if not os.path.exists(path):
            raise UsageError(f"no course at {explicit} (looked for {path})")
        return load_course(path)
    here = os.path.abspath(start or os.getcwd())
    while True:
        candidate = os.path.join(here, COURSE_FILE)
        if os.path.isfile(candidate):
            return load_course(candidate)
        parent = os.path.dirname(here)
        if parent == here:
            raise UsageError(f"no {COURSE_FILE} found in {os.path.abspath(start or os.getcwd())} or any folder "
                             "above it; run grade inside the course, or pass --course PATH")
        here = parent
