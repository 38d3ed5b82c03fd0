"""Safe unpacking of submitted ``.zip`` and ``.tar.gz`` archives into a scratch folder.

An archive is input from a stranger. Every entry is checked before it is written: a path that
would land outside the folder (absolute, or with ``..``), a link of any kind, a device or pipe, more
entries than a submission may hold, or more bytes than it may hold (counted while writing, so a
lying header does not help) refuses the whole archive with one sentence that says why, and what was
unpacked so far is removed. Nothing in an archive is ever followed or executed here.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import zipfile

from grader.submission import MAX_BYTES, MAX_FILES

ARCHIVE_SUFFIXES = {".zip": "zip", ".tar.gz": "tar", ".tgz": "tar"}
_CHUNK = 1 << 16
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
    """Counts entries and bytes against the submission limits."""

    def __init__(self):
        self.entries = self.bytes = 0

    def entry(self) -> None:
        self.entries += 1
        if self.entries > MAX_FILES:
            raise Refused(f"archive holds more than {MAX_FILES} entries; a submission is a few source files")

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


def _extract(entries, dest: str) -> None:
    budget = _Budget()
    for name, kind, open_entry in entries:
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
    try:
        with zipfile.ZipFile(path) if kind == "zip" else tarfile.open(path, "r:gz") as archive:
            _extract(_zip_entries(archive) if kind == "zip" else _tar_entries(archive), dest)
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
