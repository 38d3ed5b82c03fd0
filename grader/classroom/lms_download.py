"""Submissions as an LMS hands them over: the file names of Canvas's and Moodle's bulk downloads.

Canvas's "Download Submissions" is a zip of loose files, every student's files side by side, each
named ``<sortable name>_<user id>_<submission id>_<file>``: the name lower-cased with its spaces and
punctuation taken out (``smithjohn``), ``LATE`` after it when the submission came after the due date
(``smithjohn_LATE_...``), and ``<file>`` the name the student uploaded, with ``-1``, ``-2`` ... before
its suffix when the student had uploaded a file of that name before (``dot-1.py``). Moodle's
"Download all submissions" names a folder per student (or, with folders turned off, prefixes each
file) ``<full name>_<participant id>_assignsubmission_file_`` (``onlinetext`` for text typed in).

:func:`parse` reads such a name; :mod:`.roster` groups the files by student and :mod:`.intake` puts
each student's files back under the names they were uploaded with. The ids are the LMS's own: a
roster from that LMS (:mod:`.classlist`) maps them to its students.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_CANVAS = re.compile(r"(?P<name>[^_]*)_(?P<late>late_)?(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)", re.I)
_MOODLE = re.compile(r"(?P<name>.+)_(?P<user>\d+)_assignsubmission_(?:file|onlinetext)_(?P<file>.*)")
_RESUBMITTED = re.compile(r"(?P<stem>.+)-\d+(?P<suffix>(?:\.[A-Za-z0-9]+)*)")


@dataclass(frozen=True)
class Named:
    """What an LMS download's name says: whose it is, which LMS, the file's own name ("" for a
    student's folder) and whether the LMS marked it late."""

    lms: str
    user: str
    file: str
    late: bool = False


def _uploaded_name(file: str) -> str:
    """``dot-1.py`` -> ``dot.py``: Canvas's mark of a file name the student had used before. A module's
    name cannot hold a ``-``, so no module of an exercise loses part of its own name."""
    m = _RESUBMITTED.fullmatch(file)
    return m.group("stem") + m.group("suffix") if m else file


def parse(name: str) -> Named | None:
    """What a file or folder name of a Canvas or Moodle download says, or None for any other name."""
    m = _MOODLE.fullmatch(name)
    if m:
        return Named("moodle", m.group("user"), m.group("file"))
    m = _CANVAS.fullmatch(name)
    if m:
        return Named("canvas", m.group("user"), _uploaded_name(m.group("file")), bool(m.group("late")))
    return None


def is_loose_file(path: str) -> bool:
    """A file (not a student's folder) of a Canvas or Moodle download."""
    named = parse(os.path.basename(path))
    return named is not None and bool(named.file) and os.path.isfile(path)
