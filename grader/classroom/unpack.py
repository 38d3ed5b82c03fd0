"""Safe unpacking of submitted ``.zip`` and ``.tar.gz`` archives into a scratch folder.

An archive is input from a stranger. Every entry is checked before it is written: a path that
would land outside the folder (absolute, or with ``..``), a link of any kind, a device or pipe
refuses the whole archive with one sentence that says why, and what was unpacked so far is removed.
Nothing in an archive is ever followed or executed here.

Reading has a budget, so an archive built to be slow stops the batch's intake for no longer than a
submission's worth of work; each bound's refusal names it:

- size: the archive itself at most MAX_BYTES; what is written at most MAX_BYTES (counted while
  writing, so a lying header does not help); and at most READ_BYTES inflated in all, headers and
  the entries left out included (a ``.tar.gz`` can only reach an entry by inflating all before it, so
  12 GiB of padding in a left-out ``__MACOSX/`` entry is read no further than this bound);
- count: at most MAX_FILES entries;
- time: at most READ_S seconds of reading.
"""

from __future__ import annotations

import gzip
import io
import os
import posixpath
import shutil
import stat
import tarfile
import time
import zipfile

from grader.layout import plural
from grader.submission import MAX_BYTES, MAX_FILES

ARCHIVE_SUFFIXES = {".zip": "zip", ".tar.gz": "tar", ".tgz": "tar"}
_CHUNK = 1 << 16
READ_BYTES = 2 * MAX_BYTES  # inflated in all, headers and entries left out included
READ_S = 10.0
# Folders that archiving tools add beside the real content; they are not part of the submission.
_TOOL_FOLDERS = ("__MACOSX",)


class Refused(Exception):
    """The submission cannot be graded as sent; the message says why, for the instructor's summary."""


def archive_kind(path: str) -> str | None:
    """"zip" or "tar" for a file named like an archive we accept, else None."""
    name = path.lower()
    return next((kind for suffix, kind in ARCHIVE_SUFFIXES.items() if name.endswith(suffix)), None)


def strip_suffix(name: str) -> str:
    """``alice.tar.gz`` -> ``alice``: an archive's name without its archive suffix."""
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _safe_name(name: str) -> str | None:
    """The entry's path relative to the folder, or None for an entry to leave out; Refused if it escapes."""
    clean = posixpath.normpath(name.replace("\\", "/"))
    if name.startswith(("/", "\\")) or clean == ".." or clean.startswith("../") or ":" in clean.split("/")[0]:
        raise Refused(f"archive entry {name!r} points outside the submission folder; the archive was not unpacked")
    if clean in ("", ".") or clean.split("/")[0] in _TOOL_FOLDERS:
        return None
    return clean


class _Budget:
    """Counts entries, bytes written, bytes inflated and time against the intake's bounds."""

    def __init__(self):
        self.entries = self.bytes = self.inflated = 0
        self.started = time.monotonic()

    def clock(self) -> None:
        if time.monotonic() - self.started > READ_S:
            raise Refused(f"archive took more than {READ_S:g} s to read (the intake's time bound); a submission "
                          "is a few source files")

    def read(self, n: int) -> None:
        self.inflated += n
        if self.inflated > READ_BYTES:
            raise Refused(f"archive inflates to more than {READ_BYTES >> 20} MiB, entries left out included (the "
                          "intake's size bound); a submission is a few source files")

    def entry(self) -> None:
        self.entries += 1
        if self.entries > MAX_FILES:
            raise Refused(f"archive holds more than {plural(MAX_FILES, 'entry', 'entries')}; a submission is a few source files")

    def add(self, n: int) -> None:
        self.bytes += n
        if self.bytes > MAX_BYTES:
            raise Refused(f"archive unpacks to more than {MAX_BYTES >> 20} MiB; a submission is a few source files")


def _write(stream, dest: str, rel: str, budget: _Budget) -> None:
    target = os.path.join(dest, *rel.split("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as out:
        while chunk := stream.read(_CHUNK):
            budget.clock()
            budget.add(len(chunk))
            out.write(chunk)


def _zip_entries(zf: zipfile.ZipFile):
    """(name, kind, open) of each entry; kind is file, dir, link or other."""
    for info in zf.infolist():
        kind = "link" if stat.S_ISLNK(info.external_attr >> 16) else "dir" if info.is_dir() else "file"
        yield info.filename, kind, lambda info=info: zf.open(info)


def _tar_entries(tf: tarfile.TarFile):
    """(name, kind, open) of each member, read one at a time so a flood of members stops early."""
    while (m := tf.next()) is not None:
        kind = "link" if m.issym() or m.islnk() else "dir" if m.isdir() else "file" if m.isfile() else "other"
        yield m.name, kind, lambda m=m: tf.extractfile(m)


class _Inflated(io.RawIOBase):
    """The inflated bytes of a ``.tar.gz``, read through the budget: whatever tarfile reads (headers,
    entries it skips, padding) is counted and timed before it gets it."""

    def __init__(self, stream, budget: _Budget):
        super().__init__()
        self.stream, self.budget = stream, budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self.budget.clock()
        n = self.stream.readinto(buffer)
        self.budget.read(n)
        return n


def _extract(entries, dest: str, budget: _Budget) -> None:
    for name, kind, open_entry in entries:
        budget.clock()
        budget.entry()
        rel = _safe_name(name)
        if kind == "link":
            raise Refused(f"archive entry {name!r} is a link; links are refused, send the file itself")
        if kind == "other":
            raise Refused(f"archive entry {name!r} is not a file or folder (a device or pipe)")
        if rel is None:
            continue
        if kind == "dir":
            os.makedirs(os.path.join(dest, *rel.split("/")), exist_ok=True)
            continue
        with open_entry() as stream:
            _write(stream, dest, rel, budget)


def unpack(path: str, dest: str) -> None:
    """Unpack the archive at ``path`` into the (new) folder ``dest``, or raise Refused."""
    kind = archive_kind(path)
    if os.path.getsize(path) > MAX_BYTES:
        raise Refused(f"archive is larger than {MAX_BYTES >> 20} MiB; a submission is a few source files")
    os.makedirs(dest)
    try:
        _unpack_into(path, kind, dest)
    except Refused:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def _unpack_into(path: str, kind: str, dest: str) -> None:
    budget = _Budget()
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as archive:
                _extract(_zip_entries(archive), dest, budget)
        else:  # read as a stream ("r|"): only forward, every inflated byte through the budget
            with gzip.open(path, "rb") as inflated, \
                    tarfile.open(fileobj=_Inflated(inflated, budget), mode="r|") as archive:
                _extract(_tar_entries(archive), dest, budget)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError, RuntimeError) as exc:
        what = ".zip" if kind == "zip" else ".tar.gz"
        raise Refused(f"not a readable {what} archive ({type(exc).__name__}: {exc})") from None
    if not any(files for _, _, files in os.walk(dest)):
        raise Refused("archive is empty: it holds no files")


def refuse_links(folder: str) -> None:
    """Refuse a submission folder that holds links: they may point anywhere on the grading machine."""
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            if os.path.islink(os.path.join(root, name)):
                rel = os.path.relpath(os.path.join(root, name), folder)
                raise Refused(f"{rel} is a link; links are refused, send the file itself")


def content_root(folder: str, exercise: str) -> str:
    """Step into a lone top-level folder (``alice/`` inside alice.zip) until the content shows."""
    while True:
        entries = [e for e in os.listdir(folder) if not e.startswith(".")]
        if len(entries) != 1 or entries[0] == exercise:
            return folder
        inner = os.path.join(folder, entries[0])
        if os.path.islink(inner) or not os.path.isdir(inner):
            return folder
        folder = inner
