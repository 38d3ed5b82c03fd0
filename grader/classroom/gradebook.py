"""The gradebook: one SQLite file (WAL) holding a class's results for one exercise.

Each result is committed the moment its submission finishes, so an interrupted batch loses nothing
already graded. ``results`` holds the current result per student, keyed by student id and stamped
with the submission's and the course's hashes (a rerun reuses a result only while both match);
``history`` keeps every result ever written, which is how a resumed batch can be shown to have
graded each submission once. ``meta`` says what the results are of: course, exercise, course hash,
seed, and the tasks with their points (so exports need no course at hand).

Statuses: ``graded`` (a score, whatever it is), ``refused`` (the submission cannot be graded as
sent: an unsafe or empty archive, a student id sent twice; the error says why), ``failed`` (the
grader could not finish it; a rerun tries again).
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import sqlite3
from dataclasses import asdict, dataclass, fields

from grader.errors import UsageError

SCHEMA_VERSION = 1
GRADED, REFUSED, FAILED = "graded", "refused", "failed"
_COLUMNS = """student TEXT NOT NULL, submission_hash TEXT NOT NULL, course_hash TEXT NOT NULL,
              status TEXT NOT NULL, score REAL NOT NULL, max_score REAL NOT NULL, error TEXT NOT NULL,
              source TEXT NOT NULL, seed INTEGER NOT NULL, graded_at TEXT NOT NULL,
              duration_s REAL NOT NULL, max_rss_kb INTEGER NOT NULL"""
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results ({_COLUMNS}, report TEXT, PRIMARY KEY (student));
CREATE TABLE IF NOT EXISTS history ({_COLUMNS}, PRIMARY KEY (student, graded_at, submission_hash));
"""
# What makes two gradebooks results of the same grading: merge refuses to mix them.
IDENTITY = ("course", "exercise", "course_hash", "seed")


@dataclass
class Result:
    student: str
    submission_hash: str
    course_hash: str
    status: str
    score: float
    max_score: float
    error: str
    source: str
    seed: int
    graded_at: str = ""
    duration_s: float = 0.0
    max_rss_kb: int = 0
    report: dict | None = None


_FIELDS = [f.name for f in fields(Result)]
_HISTORY_FIELDS = [f for f in _FIELDS if f != "report"]


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


class Gradebook:
    """An open gradebook file; ``readonly`` opens an existing one without changing it."""

    def __init__(self, path: str, readonly: bool = False):
        self.path = path
        if readonly and not os.path.isfile(path):
            raise UsageError(f"gradebook {path} does not exist")
        uri = pathlib.Path(path).absolute().as_uri() + ("?mode=ro" if readonly else "")
        self.db = sqlite3.connect(uri, uri=True, timeout=30)
        try:
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(_SCHEMA)
            self.meta = dict(self.db.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise UsageError(f"{path} is not a gradebook ({exc})") from None
        version = self.meta_value("schema_version")
        if version not in (None, SCHEMA_VERSION):
            self.db.close()
            raise UsageError(f"{path} is a version {version} gradebook; this grader reads version {SCHEMA_VERSION}")
        if not readonly and version is None:
            self.set_meta(schema_version=SCHEMA_VERSION)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.db.close()

    def set_meta(self, **values) -> None:
        encoded = {k: json.dumps(v) for k, v in values.items()}
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", encoded.items())
        self.meta.update(encoded)

    def meta_value(self, key: str):
        """A meta value (stored as JSON), or None."""
        raw = self.meta.get(key)
        return None if raw is None else json.loads(raw)

    def identity(self) -> dict:
        return {k: self.meta_value(k) for k in IDENTITY}

    def record(self, result: Result) -> None:
        """Store one result (replacing the student's previous one) and append it to the history."""
        result.graded_at = result.graded_at or now()
        row = asdict(result)
        row["report"] = json.dumps(result.report) if result.report is not None else None
        with self.db:
            self.db.execute(f"INSERT OR REPLACE INTO results ({', '.join(_FIELDS)}) "
                            f"VALUES ({', '.join('?' * len(_FIELDS))})", [row[f] for f in _FIELDS])
            self.db.execute(f"INSERT OR IGNORE INTO history ({', '.join(_HISTORY_FIELDS)}) "
                            f"VALUES ({', '.join('?' * len(_HISTORY_FIELDS))})", [row[f] for f in _HISTORY_FIELDS])

    def _select(self, where: str = "", args=()) -> list[Result]:
        cursor = self.db.execute(f"SELECT {', '.join(_FIELDS)} FROM results {where} ORDER BY student", args)
        out = []
        for values in cursor:
            row = dict(zip(_FIELDS, values))
            row["report"] = json.loads(row["report"]) if row["report"] else None
            out.append(Result(**row))
        return out

    def get(self, student: str) -> Result | None:
        found = self._select("WHERE student = ?", (student,))
        return found[0] if found else None

    def results(self) -> list[Result]:
        return self._select()

    def history(self) -> list[tuple[str, str, str]]:
        """(student, submission hash, graded_at) of every result ever written, oldest first."""
        return list(self.db.execute("SELECT student, submission_hash, graded_at FROM history ORDER BY graded_at"))

    def copy_history_from(self, other: "Gradebook") -> None:
        rows = other.db.execute(f"SELECT {', '.join(_HISTORY_FIELDS)} FROM history")
        with self.db:
            self.db.executemany(f"INSERT OR IGNORE INTO history ({', '.join(_HISTORY_FIELDS)}) "
                                f"VALUES ({', '.join('?' * len(_HISTORY_FIELDS))})", rows)


def merge(paths: list[str], out: str) -> list[str]:
    """Join shard gradebooks into a new gradebook ``out``; returns notes for the user.

    Refuses gradebooks of different courses, exercises or seeds (they are not one grading). A
    student found in more than one keeps the most recent result.
    """
    if os.path.exists(out):
        raise UsageError(f"{out} exists; merge writes a new gradebook, so remove it or choose another name")
    books = [Gradebook(p, readonly=True) for p in paths]
    try:
        first = books[0]
        for book in books[1:]:
            for key in IDENTITY:
                a, b = first.meta_value(key), book.meta_value(key)
                if a != b:
                    raise UsageError(f"{book.path} and {first.path} are not the same grading: their {key} differs "
                                     f"({b!r} vs {a!r}); grade every shard with the same course, exercise and --seed")
        latest: dict[str, Result] = {}
        repeated = set()
        for book in books:
            for r in book.results():
                if r.student in latest and latest[r.student].graded_at != r.graded_at:
                    repeated.add(r.student)
                if r.student not in latest or r.graded_at > latest[r.student].graded_at:
                    latest[r.student] = r
        with Gradebook(out) as merged:
            merged.set_meta(**{k: first.meta_value(k) for k in first.meta})
            for book in books:
                merged.copy_history_from(book)
            for r in latest.values():
                merged.record(r)
    finally:
        for book in books:
            book.close()
    notes = [f"merged {len(paths)} gradebooks: {len(latest)} students into {out}"]
    if repeated:
        notes.append(f"{len(repeated)} students were in more than one gradebook; kept the most recent result: "
                     + ", ".join(sorted(repeated)))
    return notes
