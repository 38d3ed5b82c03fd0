"""One submission of a batch made ready to grade: the path ``grade --submission`` is given.

A notebook is graded as it is (grade reads its marked cells); a folder is checked for links and
stepped into while it holds one lone folder; an archive is unpacked with :mod:`.unpack`'s checks
into the grading's scratch. The loose files of an LMS download (:mod:`.lms_download`) are copied
into the scratch under the names the student uploaded them with, and are then a folder like any
other, or, when they are one archive or one notebook, that archive or notebook.
"""

from __future__ import annotations

import os
import shutil

from grader.classroom import roster, unpack
from grader.submission import MAX_BYTES


def refusal(files: tuple[tuple[str, str], ...]) -> str:
    """Why an LMS download's files cannot be one submission (two of them would have one name), or ""."""
    names: dict[str, list[str]] = {}
    for path, name in files:
        if name in (".", "..") or os.sep in name:
            return f"{os.path.basename(path)} names no file of its own ({name!r}); send it under a file's name"
        names.setdefault(name, []).append(os.path.basename(path))
    twice = next((name for name, paths in names.items() if len(paths) > 1), None)
    return (f"two files would be {twice} ({', '.join(sorted(names[twice]))}); keep one and run the batch again"
            if twice else "")


def _gather(files: tuple[tuple[str, str], ...], folder: str) -> str:
    """Copy the files into ``folder`` under their names; returns the folder, or the one archive or
    notebook the student uploaded."""
    for path, _ in files:
        if os.path.islink(path):
            raise unpack.Refused(f"{os.path.basename(path)} is a link; links are refused, send the file itself")
    if sum(os.path.getsize(path) for path, _ in files) > MAX_BYTES:
        raise unpack.Refused(f"the files sent add up to more than {MAX_BYTES >> 20} MiB; a submission is a few "
                             "source files")
    os.makedirs(folder)
    for path, name in files:
        shutil.copyfile(path, os.path.join(folder, name))
    only = [os.path.join(folder, name) for _, name in files]
    return only[0] if len(only) == 1 and roster.kind(only[0]) in ("zip", "tar", "notebook") else folder


def open_submission(entry: roster.Entry, scratch: str, exercise: str) -> str:
    """The folder (or notebook) to grade for ``entry``, made in ``scratch`` where it must be; Refused
    (from :mod:`.unpack`) with the reason when it cannot be graded as sent."""
    path = _gather(entry.files, os.path.join(scratch, "submitted")) if entry.files else entry.paths[0]
    kind = roster.kind(path)
    if kind == "notebook":
        return path
    if kind == "folder":
        unpack.refuse_links(path)
        return unpack.content_root(path, exercise)
    unpack.unpack(path, os.path.join(scratch, "unpacked"))
    return unpack.content_root(os.path.join(scratch, "unpacked"), exercise)
