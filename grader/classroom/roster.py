"""Which submissions a batch grades, under which student ids, and which shard each belongs to.

A path on the command line is a submission (a folder holding the exercise's modules or the
exercise folder, a ``.zip`` / ``.tar.gz`` archive, or a notebook, ``.ipynb``) or a class folder
holding submissions. The student id is the folder's name, or the file's name without its suffix. An id that turns up
twice is kept as one entry with both paths, so the batch can refuse it by name instead of silently
grading whichever came last.

A class folder may also be an LMS's bulk download (:mod:`.lms_download`): Canvas's loose files,
``<name>_<user id>_<attachment id>_<file>``, are one entry per user id holding that user's files, and
Moodle's ``<name>_<participant id>_assignsubmission_file_`` folders one entry each; a roster from that
LMS (or one with a ``canvas_id`` column) turns the LMS's id into the roster's student id. Anything
else in a class folder (``notes.txt``) is no submission: it is left out, and named as left out.

A student's id comes only from names the instructor or the LMS chose: a path's own name, a class
folder's entries, the LMS's part of a download's names (:func:`lms_download.parse`). A name inside a
submission never names a student. Two submissions under one id (``gus/`` and ``gus.zip``, or one
user's loose files in two downloads) are never merged: the entry counts both, and the batch refuses
it naming every path.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from grader.classroom import lms_download
from grader.classroom.classlist import ClassList
from grader.classroom.unpack import archive_kind, strip_suffix
from grader.errors import UsageError
from grader.notebook.cells import SUFFIX as NOTEBOOK


@dataclass(frozen=True)
class Entry:
    """One student's submission: ``paths`` as found (more than one submission is refused by the batch).
    The loose files of an LMS download are all of ``paths``, and ``files`` says what each is called in
    the submission: (path, name)."""

    student: str
    paths: tuple[str, ...]
    files: tuple[tuple[str, str], ...] = ()
    late: bool = False  # the LMS marked it late (Canvas's LATE)
    submissions: int = 1  # how many submissions were found under this id; more than one is refused


@dataclass
class Found:
    """A class: ``entries`` one per student id, sorted by id; ``left_out`` what class folders held that is
    no submission."""

    entries: list[Entry] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def _is_submission_folder(path: str, exercise: str) -> bool:
    return os.path.isdir(os.path.join(path, exercise)) or any(
        name.endswith(".py") and os.path.isfile(os.path.join(path, name)) and not lms_download.parse(name)
        for name in os.listdir(path))


def _student_id(path: str) -> str:
    name = os.path.basename(os.path.normpath(os.path.abspath(path)))
    named = lms_download.parse(name)
    return named.user if named else strip_suffix(name).removesuffix(NOTEBOOK)


def _expand(path: str, exercise: str) -> tuple[list[str], bool]:
    """(the submissions ``path`` is, whether it is a class folder holding them)."""
    if not os.path.exists(path):
        raise UsageError(f"{path} does not exist (expected a submission folder, a .zip or .tar.gz, or a "
                         "folder holding them)")
    if not os.path.isdir(path) or _is_submission_folder(path, exercise):
        return [path], False
    return [os.path.join(path, name) for name in sorted(os.listdir(path)) if not name.startswith(".")], True


def _lms_students(roster: ClassList | None) -> dict[str, str]:
    """LMS user id -> roster student id, for a roster that names both (a canvas_id column)."""
    return {s.get("canvas_id"): s.id for s in roster.students if s.get("canvas_id")} if roster else {}


def _loose_files(paths) -> tuple[tuple[str, str], ...]:
    return tuple((p, lms_download.parse(os.path.basename(p)).file) for p in paths)


def entry_of(student: str, paths: tuple[str, ...]) -> Entry:
    """The entry a gradebook result came from, read back from its ``source`` paths."""
    loose = bool(paths) and all(lms_download.is_loose_file(p) for p in paths)
    return Entry(student, paths, _loose_files(paths) if loose else ())


def _refuse_a_class_folder_among_its_siblings(expanded: list[tuple[str, list[str], bool]]) -> None:
    """``grade batch class/*`` names every student's folder; one of them holding no module but folders or
    archives would be read as a class folder, its entries naming students by names its owner chose.
    So a folder read as a class folder is an error when it comes with every other entry of its parent
    folder (a glob of the class) and some of them are submissions; not when it is given beside a few
    other paths (``submissions/ dan.zip``) or with other class folders (``week1/ week2/``)."""
    given: dict[str, set[str]] = {}
    submissions: set[str] = set()  # parents of paths that are submissions themselves
    for path, _, is_class in expanded:
        parent, name = os.path.split(os.path.abspath(path))
        given.setdefault(parent, set()).add(name)
        if not is_class:
            submissions.add(parent)
    for path, _, is_class in expanded:
        parent = os.path.dirname(os.path.abspath(path))
        everything = {name for name in os.listdir(parent) if not name.startswith(".")}
        if is_class and parent in submissions and given[parent] >= everything:
            raise UsageError(f"{path} holds no module of the exercise, so it would be read as a class folder (its "
                             "entries named as students), but it is given with every other entry of its folder, "
                             f"as a glob of a class gives them; give the class folder {parent} itself, or grade "
                             f"{path} on its own")


def _found(paths: list[str], exercise: str, found: Found) -> list[Entry]:
    """One entry per submission, under the id its own name gives: a path or a class folder's entry is
    one submission, and so are the loose files one LMS user has in one download folder."""
    plain: dict[str, Entry] = {}
    loose: dict[tuple[str, str], list[str]] = {}
    expanded = [(path, *_expand(path, exercise)) for path in paths]
    _refuse_a_class_folder_among_its_siblings(expanded)
    for path, subs, in_class_folder in expanded:
        for sub in subs:
            if in_class_folder and lms_download.is_loose_file(sub):
                loose.setdefault((_student_id(sub), os.path.abspath(path)), []).append(os.path.abspath(sub))
            elif in_class_folder and not kind(sub):
                found.left_out += [] if sub in found.left_out else [sub]  # a class folder given twice
            else:
                plain.setdefault(os.path.abspath(sub), Entry(_student_id(sub), (os.path.abspath(sub),)))
    entries = list(plain.values())
    for (user, _), files in loose.items():
        named = _loose_files(dict.fromkeys(files))
        late = any(lms_download.parse(os.path.basename(p)).late for p, _ in named)
        entries.append(Entry(user, tuple(p for p, _ in named), named, late))
    return entries


def discover(paths: list[str], exercise: str, roster: ClassList | None = None) -> Found:
    """The class found at ``paths``: one entry per student id, sorted by id, and what was left out."""
    found = Found()
    students = _lms_students(roster)
    entries: dict[str, Entry] = {}
    for entry in sorted(_found(paths, exercise, found), key=lambda e: (e.student, e.paths)):
        student = students.get(entry.student, entry.student)
        before = entries.get(student)
        entries[student] = Entry(student, entry.paths, entry.files, entry.late) if before is None else Entry(
            student, before.paths + entry.paths, before.files + entry.files, before.late or entry.late,
            before.submissions + 1)
    found.entries = sorted(entries.values(), key=lambda e: e.student)
    return found


def kind(path: str) -> str | None:
    """"folder", "zip", "tar" or "notebook" for something we can grade, None for anything else."""
    if os.path.isdir(path):
        return "folder"
    return "notebook" if path.endswith(NOTEBOOK) else archive_kind(path)


SLURM_ID, SLURM_COUNT, SLURM_MIN = "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"


def _env_int(env, name: str, why: str) -> int:
    value = env.get(name)
    if value is None:
        raise UsageError(f"--shard auto: {name} is not set ({why})")
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"--shard auto: {name} is {value!r}, expected a whole number") from None


def _auto_shard(text: str, env) -> str:
    """``auto`` -> K/N from a Slurm array job; ``auto:INDEX/COUNT`` -> from the variables named (K from 1)."""
    if text == "auto":
        why = "--shard auto reads a Slurm array job; elsewhere name the variables: --shard auto:INDEX_VAR/COUNT_VAR"
        index, count = _env_int(env, SLURM_ID, why), _env_int(env, SLURM_COUNT, why)
        first = _env_int(env, SLURM_MIN, why) if SLURM_MIN in env else 1
        return f"{index - first + 1}/{count}"  # --array=0-3 and --array=1-4 both give shards 1..4
    index_var, slash, count_var = text.removeprefix("auto:").partition("/")
    if not slash or not index_var or not count_var:
        raise UsageError(f"--shard takes K/N, auto, or auto:INDEX_VAR/COUNT_VAR, got {text!r}")
    why = "the variable --shard names"
    return f"{_env_int(env, index_var, why)}/{_env_int(env, count_var, why)}"


def parse_shard(text: str | None, env=None) -> tuple[int, int] | None:
    """``"2/5"`` -> (2, 5); ``auto`` and ``auto:INDEX_VAR/COUNT_VAR`` read K and N from ``env``."""
    if not text:
        return None
    shown = text
    if text.startswith("auto"):
        text = _auto_shard(text, os.environ if env is None else env)
        shown = f"{shown} (= {text})"
    try:
        k, n = (int(p) for p in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard takes K/N like 1/4, got {shown!r}") from None
    if not 1 <= k <= n:
        raise UsageError(f"--shard K/N needs 1 <= K <= N, got {shown!r}")
    return k, n


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    """Whether ``student`` belongs to shard K of N: by a hash of the id, so every machine agrees and a
    student's shard never depends on who else submitted."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(student.encode()).hexdigest()[:16], 16) % n == k - 1
