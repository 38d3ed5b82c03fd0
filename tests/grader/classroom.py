"""Build a class of submissions for batch tests: folders, .zip and .tar.gz archives of given sources."""

from __future__ import annotations

import io
import sqlite3
import json
import tarfile
import textwrap
import zipfile
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


def rows(gradebook: Path, table: str = "results") -> list[tuple]:
    """Rows of a gradebook table read with plain sqlite3 (student first), to check the engine's reading."""
    columns = {"results": "student, status, score, submission_hash, course_hash",
               "history": "student, submission_hash"}[table]
    with sqlite3.connect(gradebook) as db:
        return sorted(db.execute(f"SELECT {columns} FROM {table}"))
