"""``grade release``: what students get, and the autograder that grades what they hand in.

From the instructors' copy of the course (solutions, hidden tests), for one exercise:

- ``student/`` and ``student.zip``: the engine, the stubs, course.yaml trimmed to this exercise and
  to the visible tests (with ``release: {kind: student}``, so reports say hidden tests run at
  submission), public copies of the suites (:mod:`grader.authoring.public_suite`), a README, and the exact
  versions (requirements.txt, pyproject.toml, course.yaml's release block), the exercise as a
  notebook, ``EXERCISE.ipynb`` (:mod:`grader.authoring.student_notebook`), and the GitHub Actions
  workflow that makes the folder a GitHub Classroom template repository
  (``.github/workflows/classroom.yml``: grade on every push, points per task to the classroom).
- ``autograder/`` and ``autograder.zip`` in Gradescope's layout (setup.sh and run_autograder at the
  root, the rest lands in /autograder/source): the engine, the stubs (they name the modules a
  submission must have), the full suites and course.yaml.
- ``prairielearn/``: what a PrairieLearn course needs to grade the exercise as an externally graded
  question (PrairieLearn's docs/externalGrading.md): ``questions/EXERCISE/info.json`` (external
  grading on, the image, the grader's files and entrypoint), ``question.html`` (a file upload of the
  exercise's modules and the grader's results), ``serverFilesCourse/COURSE-EXERCISE/`` (the
  autograder's files and ``run.sh``, the entrypoint: ``grade autograde --platform prairielearn``,
  which grades ``/grade/student`` into ``/grade/results/results.json``), and the ``Dockerfile`` of
  the image with the pinned versions.

The student bundle may hold no solution code and no hidden test; the autograder no solution file.
Both are read back and scanned (:mod:`grader.authoring.release_scan`); if anything slipped in, what was
written is deleted and the release refuses, naming each file and what it contains. The suite's
conftest.py ships with the public tests as it is (it is their shared setup); other files of the
suite folder (probes, data) ship when a public test names them.
"""

from __future__ import annotations

import ast
import html
import json
import os
import platform
import re
import shutil
import stat
import uuid
import zipfile
from dataclasses import asdict, dataclass, field

import yaml

from grader.authoring import pins, release_scan, student_notebook
from grader.authoring.hidden_cases import hidden_cases
from grader.course import Course, Exercise, Release
from grader.authoring.public_suite import public_copy, references
from grader.submission import expected_modules
from grader.errors import GraderError, UsageError
from grader.grading import github_classroom, reference_figures

ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
STUDENT, AUTOGRADER, PRAIRIELEARN = "student", "autograder", "prairielearn"
PRAIRIELEARN_TIMEOUT_S = 600  # the most PrairieLearn allows a grading job
CLASSROOM_WORKFLOW = os.path.join(".github", "workflows", "classroom.yml")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed, so the same sources give the same zip


@dataclass
class Released:
    """Where the bundles went, and which tests each task shows students and keeps hidden."""

    out: str
    public_tests: dict[str, list[str]] = field(default_factory=dict)
    hidden_tests: dict[str, list[str]] = field(default_factory=dict)
    pins: dict[str, str] = field(default_factory=dict)
    requires_python: str = ""
    grader_version: str = ""
    files_scanned: int = 0
    hidden_cases: dict[str, int] = field(default_factory=dict)  # task id -> cases graded only at submission
    exercise: str = ""
    figures: int = 0  # reference figures the autograder carries (grader.grading.reference_figures)
    figures_checked: bool = False  # ... all of them: `grade check` passed since the solutions last changed

    @property
    def warnings(self) -> list[str]:
        """What the instructor should know before handing the bundle out."""
        found = []
        if not any(self.hidden_tests.values()):
            found.append("every test is visible, so the student bundle holds the whole grading suite and nothing is "
                         "graded only at submission; give tests a visibility of hidden, after_due_date or "
                         "after_published in course.yaml (tests: {test_name: {visibility: ...}})")
        if not self.figures_checked:
            found.append(f"no `grade check {self.exercise}` has passed since its solutions or probes last changed, so "
                         f"the autograder carries only the {self.figures} figures of the reference's programs measured "
                         "so far; a hidden test that compares a program with a figure it lacks stops the autograder "
                         f"with a course error. Run `grade check {self.exercise}`, then release again")
        return found

    def path(self, name: str) -> str:
        return os.path.join(self.out, name)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _write(path: str, text: str, executable: bool = False) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.chmod(path, 0o755 if executable else 0o644)


def _fill(template: str, **values) -> str:
    """A template from grader/templates with each @NAME@ replaced by values[name]."""
    text = _read(os.path.join(TEMPLATES, template))
    for key, value in values.items():
        text = text.replace(f"@{key.upper()}@", str(value))
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise GraderError(f"template {template} has unfilled placeholders: {', '.join(sorted(set(left)))}")
    return text


def _course_yaml(course: Course, exercise: Exercise, release: Release) -> str:
    """course.yaml for a bundle: this exercise only, every default spelled out, rules it may see."""
    tasks = []
    for t in exercise.tasks:
        entry = {"id": t.id, "title": t.title, "points": t.points, "hint": t.hint,
                 "timeout_s": t.timeout_s, "files": list(t.files), "visibility": t.visibility}
        if t.processes:
            entry["processes"] = [layout.spec for layout in t.processes]
        else:
            entry["devices"] = list(t.devices)
        if t.extra_credit:
            entry["extra_credit"] = True
        if t.local_timeout_s:
            entry["local_timeout_s"] = t.local_timeout_s
        rules = {name: {"weight": r.weight, "visibility": r.visibility} | ({"all_counts": True} if r.all_counts else {})
                 for name, r in t.tests.items() if not release.public_only or r.visibility == "visible"}
        if rules:
            entry["tests"] = rules
        tasks.append(entry)
    data = {"course": course.name, "release": asdict(release),
            "defaults": {"memory_mb": course.memory_mb, "backend": course.backend},
            "exercises": {exercise.name: {"title": exercise.title, "tasks": tasks}}}
    return (f"# The rubric of {course.name} {exercise.name}, written by `grade release` for the {release.kind} "
            "bundle.\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None))


def _requirements(course: Course, released: Released) -> str:
    lines = [f"# The exact versions {course.name} was released with (grade release, CPython "
             f"{platform.python_version()}); Python {released.requires_python}."]
    return "\n".join(lines + [f"{name}=={version}" for name, version in released.pins.items()]) + "\n"


def _pyproject(dist, released: Released) -> str:
    """A pyproject.toml so ``pip install -e .`` in the student bundle gives the ``grade`` command."""
    scripts = [f'{ep.name} = "{ep.value}"' for ep in dist.entry_points if ep.group == "console_scripts"]
    deps = "".join(f'    "{name}=={version}",\n' for name, version in released.pins.items())
    return (f'[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
            f'[project]\nname = "{dist.metadata["Name"]}"\nversion = "{dist.version}"\n'
            f'requires-python = "{released.requires_python}"\ndependencies = [\n{deps}]\n\n'
            f'[project.scripts]\n' + "".join(s + "\n" for s in scripts) +
            '\n[tool.setuptools.packages.find]\ninclude = ["grader", "grader.*"]\n\n'
            '[tool.setuptools.package-data]\n"grader.authoring" = ["templates/*"]\n')


def _public_suite(course: Course, exercise: Exercise, dest: str, released: Released) -> None:
    """Public copies of the task suites, plus the suite's other files that the public tests use."""
    suite = os.path.join(course.root, exercise.suite)
    texts = []
    for task in exercise.tasks:
        released.public_tests[task.id], released.hidden_tests[task.id] = [], []
        for filename in task.files:
            path = os.path.join(suite, filename)
            if not os.path.isfile(path):
                continue
            copy = public_copy(_read(path), lambda name, task=task: task.rule(name).visibility == "visible")
            released.public_tests[task.id] += copy.kept
            released.hidden_tests[task.id] += copy.dropped
            if copy.text is not None:
                _write(os.path.join(dest, filename), copy.text)
                texts.append(copy.text)
    used = references([ast.parse(t) for t in texts])
    test_files = {f for t in exercise.tasks for f in t.files}
    for name in sorted(os.listdir(suite)):
        stem, ext = os.path.splitext(name)
        is_test = name.startswith("test") and ext == ".py"
        if name in test_files or is_test or name.startswith(".") or name == "__pycache__":
            continue
        if name == "conftest.py" or name in used or stem in used:
            src = os.path.join(suite, name)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(dest, name), ignore=_IGNORE)
            else:
                shutil.copyfile(src, os.path.join(dest, name))


def _common(course: Course, exercise: Exercise, top: str, release: Release, released: Released) -> None:
    """What both bundles hold: the engine, the stubs, course.yaml and requirements.txt."""
    shutil.copytree(ENGINE_DIR, os.path.join(top, "grader"), ignore=_IGNORE)
    shutil.copytree(os.path.join(course.root, exercise.stubs), os.path.join(top, "exercises", exercise.name),
                    ignore=_IGNORE)
    _write(os.path.join(top, "course.yaml"), _course_yaml(course, exercise, release))
    _write(os.path.join(top, "requirements.txt"), _requirements(course, released))


def _readme(course: Course, exercise: Exercise, released: Released) -> str:
    rows = [f"| {t.id}: {t.title} | {t.points:g}{' (extra credit)' if t.extra_credit else ''} |"
            for t in exercise.tasks]
    files = ", ".join(f"`{m}.py`" for m in expected_modules(os.path.join(course.root, exercise.stubs)))
    loop = [(f".venv/bin/grade {exercise.name}", "every task, at every device count"),
            (f".venv/bin/grade {exercise.name} --task {exercise.tasks[0].id}", "one task"),
            (f".venv/bin/grade {exercise.name} --task {exercise.tasks[0].id} --watch", "regrade on every save"),
            (f".venv/bin/grade {exercise.name} --devices 1,2", "fewer device counts: faster while you work")]
    width = max(len(command) for command, _ in loop)
    loop_text = "\n".join(f"    {command:<{width}}   # {comment}" for command, comment in loop)
    return _fill("student_README.md", course=course.name, exercise=exercise.name, title=exercise.title,
                 tasks="\n".join(rows), loop=loop_text, files=files or "your modules",
                 python=released.requires_python.lstrip(">=") + " or newer", jax=released.pins["jax"],
                 jaxlib=released.pins["jaxlib"], grader=released.grader_version)


def _classroom_workflow(exercise: Exercise, released: Released) -> str:
    """The workflow that makes the student bundle a GitHub Classroom template repository: a runner per
    task and weight among the public tests (see grader.grading.github_classroom)."""
    names = github_classroom.release_runners(
        [(t.id, [t.rule(name).weight for name in released.public_tests[t.id]]) for t in exercise.tasks])
    variables = "\n".join(f'          {name.upper()}_RESULTS: "${{{{ steps.grade.outputs.{name} }}}}"' for name in names)
    return _fill("classroom.yml", exercise=exercise.name, runners=",".join(names), runner_variables=variables,
                 python=".".join(platform.python_version_tuple()[:2]))  # the pins installed on this Python


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "course"


def _prairielearn(course: Course, exercise: Exercise, autograder: str, released: Released) -> None:
    """The question and the grader's files a PrairieLearn course copies in (see the module's docstring)."""
    top = released.path(PRAIRIELEARN)
    bundle = f"{_slug(course.name)}-{_slug(exercise.name)}"
    files = os.path.join(top, "serverFilesCourse", bundle)
    shutil.copytree(autograder, files, ignore=shutil.ignore_patterns("setup.sh", "run_autograder"))
    _write(os.path.join(files, "run.sh"), _fill("prairielearn_run.sh", exercise=exercise.name), executable=True)
    image = f"{_slug(course.name)}-grader:{released.grader_version}"
    info = {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"pmap-course:{course.name}/{exercise.name}")),
            "title": exercise.title or exercise.name, "topic": course.name, "tags": ["autograded"], "type": "v3",
            "singleVariant": True, "gradingMethod": "External",
            "externalGradingOptions": {"enabled": True, "image": image, "serverFilesCourse": [f"{bundle}/"],
                                       "entrypoint": f"/grade/serverFilesCourse/{bundle}/run.sh",
                                       "timeout": PRAIRIELEARN_TIMEOUT_S}}
    question = os.path.join(top, "questions", exercise.name)
    _write(os.path.join(question, "info.json"), json.dumps(info, indent=2) + "\n")
    modules = expected_modules(os.path.join(course.root, exercise.stubs))
    _write(os.path.join(question, "question.html"),
           _fill("prairielearn_question.html", title=html.escape(exercise.title or exercise.name),
                 exercise=exercise.name, files=", ".join(f"{m}.py" for m in modules),
                 file_names=", ".join(f"{m}.py" for m in modules)))
    _write(os.path.join(top, "Dockerfile"), _fill("prairielearn_Dockerfile", exercise=exercise.name, image=image,
                                                  bundle=bundle, python=".".join(platform.python_version_tuple()[:2])))


def _record(kind: str, released: Released) -> Release:
    hidden = {task: n for task, n in released.hidden_cases.items() if n} if kind == STUDENT else {}
    return Release(kind=kind, jax=released.pins["jax"], jaxlib=released.pins["jaxlib"],
                   grader=released.grader_version, python=platform.python_version(), hidden_cases=hidden)


def _zip(top: str, path: str, prefix: str = "") -> None:
    """Zip a folder with sorted entries, fixed times and the files' permission bits."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for root, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files):
                src = os.path.join(root, name)
                info = zipfile.ZipInfo(prefix + os.path.relpath(src, top).replace(os.sep, "/"), _ZIP_TIME)
                info.external_attr = (stat.S_IFREG | stat.S_IMODE(os.stat(src).st_mode)) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(src, "rb") as f:
                    zf.writestr(info, f.read())


def _clear(out: str) -> None:
    shutil.rmtree(os.path.join(out, PRAIRIELEARN), ignore_errors=True)
    for name in (STUDENT, AUTOGRADER):
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
        if os.path.exists(os.path.join(out, name + ".zip")):
            os.remove(os.path.join(out, name + ".zip"))


def release(course: Course, exercise: Exercise, out: str) -> Released:
    """Write both bundles for ``exercise`` under ``out``; raises UsageError if a scan finds a leak."""
    if not os.path.isdir(os.path.join(course.root, exercise.stubs)):
        raise UsageError(f"the stubs folder {exercise.stubs} of {exercise.name} does not exist")
    if not os.path.isdir(os.path.join(course.root, exercise.suite)):
        raise UsageError(f"the suite folder {exercise.suite} of {exercise.name} does not exist")
    dist = pins.grader_distribution()
    released = Released(out=os.path.abspath(out), pins=pins.pinned(dist), grader_version=dist.version)
    if not {"jax", "jaxlib"} <= set(released.pins):
        raise UsageError("the grader's dependencies do not include jax and jaxlib; nothing to pin")
    released.requires_python = pins.requires_python([dist.metadata["Name"], *released.pins])
    released.hidden_cases = hidden_cases(course, exercise)
    os.makedirs(out, exist_ok=True)
    _clear(out)
    student, autograder = released.path(STUDENT), released.path(AUTOGRADER)
    _common(course, exercise, student, _record(STUDENT, released), released)
    _public_suite(course, exercise, os.path.join(student, "tests", exercise.name), released)
    _write(os.path.join(student, "README.md"), _readme(course, exercise, released))
    _write(os.path.join(student, f"{exercise.name}.ipynb"),
           student_notebook.build(exercise, os.path.join(course.root, exercise.stubs)))
    _write(os.path.join(student, "pyproject.toml"), _pyproject(dist, released))
    _write(os.path.join(student, CLASSROOM_WORKFLOW), _classroom_workflow(exercise, released))
    _common(course, exercise, autograder, _record(AUTOGRADER, released), released)
    shutil.copytree(os.path.join(course.root, exercise.suite), os.path.join(autograder, "tests", exercise.name),
                    ignore=_IGNORE)
    released.exercise = exercise.name
    kept = reference_figures.kept_folder(course.root, exercise.name, os.path.join(course.root, exercise.solutions),
                                         os.path.join(course.root, exercise.suite))
    # both bundles: a structural test made visible runs where the student works too
    released.figures, released.figures_checked = reference_figures.carry(kept, exercise.name, [student, autograder])
    minor = released.requires_python.lstrip(">=").split(".")[1]
    _write(os.path.join(autograder, "setup.sh"), _fill("setup.sh", min_minor=minor), executable=True)
    _write(os.path.join(autograder, "run_autograder"), _fill("run_autograder", exercise=exercise.name),
           executable=True)
    rules = release_scan.forbidden(course, exercise, ENGINE_DIR)
    problems = [f"{STUDENT}/{p}" for p in release_scan.scan(student, rules)]
    problems += [f"{AUTOGRADER}/{p}" for p in release_scan.scan(autograder, rules.for_autograder())]
    if problems:
        _clear(out)
        raise UsageError(f"the release of {exercise.name} was not written: it would have handed out what it "
                         "must not:\n  " + "\n  ".join(problems))
    released.files_scanned = sum(len(files) for top in (student, autograder) for _, _, files in os.walk(top))
    _prairielearn(course, exercise, autograder, released)
    _zip(student, student + ".zip", prefix=f"{course.name}-{exercise.name}/")
    _zip(autograder, autograder + ".zip")
    return released
