"""Submissions as an LMS hands them over: the file names of Canvas's and Moodle's bulk downloads.

Whose a file is comes only from the part of its name the LMS wrote, never from the part the student
chose (the name of the file uploaded, which may itself look like another student's LMS name):

- Canvas's "Download Submissions" is a zip of loose files, every student's files side by side, each
  named ``<sortable name>[_LATE]_<user id>_<attachment id>_<file>`` (content_zipper.rb in canvas-lms:
  ``get_filename`` joins the name, ``LATE`` and the user id with ``_``, keeps only word characters and
  lower-cases them; ``sanitize_user_name`` takes ``_<digits>_`` out of the name first, "because we use
  /_\\d+_/ to infer the user/attachment ids"). So the name may keep an underscore (``o_neilpat``) but
  never holds ``_<digits>_``, and the user id is the first ``_<digits>_`` after it: nothing in
  ``<file>``, the name the student uploaded, can move it. With anonymous grading the name and user id
  are ``anon_<anonymous id>``, which is then the student's id. ``<file>`` gets ``-1``, ``-2`` ...
  before its suffix when the student had uploaded a file of that name before (``dot-1.py``).
- Moodle's "Download all submissions" names a folder per student (or, with folders turned off,
  prefixes each file) ``<full name>_<participant id>_assignsubmission_file_`` (``onlinetext`` for text
  typed in); Moodle replaces every ``_`` of the full name by a space (``download_submissions`` in
  mod/assign/locallib.php), so the participant id is the number after the name's first ``_``.

:func:`parse` reads such a name; :mod:`.roster` groups the files by student and :mod:`.intake` puts
each student's files back under the names they were uploaded with. The ids are the LMS's own: a
roster from that LMS (:mod:`.classlist`) maps them to its students.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

# Each pattern matches from the start and takes the first place its ids fit (a lazy name), so the
# student's own file name, which comes last, never decides whose the file is.
_CANVAS_ANONYMOUS = re.compile(r"(?P<late>late_)?(?P<user>anon_[a-z0-9]+)_(?P<attachment>\d+)_(?P<file>.+)", re.I)
_CANVAS = re.compile(r"(?P<name>\w*?)_(?P<late>late_)?(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)", re.I)
_MOODLE = re.compile(r"(?P<name>[^_]*)_(?P<user>\d+)_assignsubmission_(?:file|onlinetext)_(?P<file>.*)")
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
    m = _CANVAS_ANONYMOUS.fullmatch(name) or _CANVAS.fullmatch(name)
    if m:
        return Named("canvas", m.group("user").lower(), _uploaded_name(m.group("file")), bool(m.group("late")))
    return None


def is_loose_file(path: str) -> bool:
    """A file (not a student's folder) of a Canvas or Moodle download."""
    named = parse(os.path.basename(path))
    return named is not None and bool(named.file) and os.path.isfile(path)
