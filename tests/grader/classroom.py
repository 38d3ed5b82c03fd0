"""Build a class of submissions for batch tests: folders, .zip and .tar.gz archives of given sources."""

from __future__ import annotations

import io
import sqlite3
import json
import tarfile
import textwrap
import zipfile
from html.parser import HTMLParser
from pathlib import Path

from conftest import ROOT

DOT = {
    "correct": (ROOT / "solutions/exercise7/dot.py").read_text(),
    # Right values, but no collective at all: the structure test fails at every device count.
    "partial": """
        import jax.numpy as jnp


        def distributed_dot(x, y):
            return jnp.dot(x, y)
        """,
    "broken": """
        def distributed_dot(x, y)
            return 0
        """,
    "crashing": """
        import os


        def distributed_dot(x, y):
            os._exit(7)
        """,
}


def source(kind: str) -> str:
    return textwrap.dedent(DOT[kind])


def folder(parent: Path, student: str, files: dict[str, str]) -> Path:
    """parent/student/ holding ``files`` ({relative path: text})."""
    for name, text in files.items():
        path = parent / student / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return parent / student


def zip_archive(path: Path, files: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def tar_archive(path: Path, files: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def notebook(path: Path, modules: dict[str, str]) -> Path:
    """A notebook at ``path`` with one code cell marked ``# grade: MODULE`` per module."""
    cells = [{"cell_type": "code", "id": name, "metadata": {}, "execution_count": None, "outputs": [],
              "source": f"# grade: {name}\n{text}"} for name, text in modules.items()]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def dot_files(kind: str, prefix: str = "") -> dict[str, str]:
    return {f"{prefix}exercise7/dot.py": source(kind)}


def graded_count(book: Path) -> int:
    """Results a running batch has committed to ``book`` so far (0 before it exists)."""
    if not book.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{book}?mode=ro", uri=True) as db:
            return db.execute("SELECT count(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def rows(gradebook: Path, table: str = "results") -> list[tuple]:
    """Rows of a gradebook table read with plain sqlite3 (student first), to check the engine's reading."""
    columns = {"results": "student, status, score, submission_hash, course_hash",
               "history": "student, submission_hash"}[table]
    with sqlite3.connect(gradebook) as db:
        return sorted(db.execute(f"SELECT {columns} FROM {table}"))


def toy_class(root: Path, students: dict[str, dict[str, str]]) -> tuple[Path, Path]:
    """The toy course under root/course and a class folder root/class with a folder per student
    ({student: {path: text}}); returns (course, class folder)."""
    from toycourse import make_course

    course = make_course(root / "course")
    for student, files in students.items():
        folder(root / "class", student, files)
    return course, root / "class"


def batch(subs: Path, course: Path, book: Path, *args: str):
    """Grade the class folder ``subs`` into ``book`` with the real CLI; asserts the batch worked."""
    from conftest import run_grade

    proc = run_grade("batch", str(subs), "--exercise", "ex1", "--course", str(course), "--gradebook", str(book),
                     *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


class Page(HTMLParser):
    """Elements by tag; the text inside each element with an id or class; table rows (lists of cell
    texts) under each element with an id."""

    def __init__(self):
        super().__init__()
        self.tags, self.stack, self.text, self.rows = [], [], {}, {}
        self.cells, self.in_cell = None, False

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag in self.VOID:  # no end tag follows
            return
        self.stack.append(attrs.get("id") or attrs.get("class"))
        if tag == "tr":
            self.cells = []
        elif tag == "td":
            self.cells.append("")
            self.in_cell = True

    def handle_endtag(self, tag):
        if tag in self.VOID:  # <br/>, or a stray </meta>: nothing was pushed for it
            return
        self.stack.pop()
        self.in_cell = self.in_cell and tag != "td"
        if tag == "tr" and self.cells:
            for key in filter(None, self.stack):
                self.rows.setdefault(key, []).append(self.cells)

    def handle_data(self, data):
        for key in filter(None, self.stack):
            self.text[key] = self.text.get(key, "") + data
        if self.in_cell:
            self.cells[-1] += data

    def count(self, tag, **attrs):
        return sum(t == tag and all(a.get(k) == v for k, v in attrs.items()) for t, a in self.tags)
