"""A student's own compile cache: kept across a student's runs of their own exercises, and nothing else's.

What must hold (grader.workers.compile_cache.own_folder): a student's run of their own exercises
writes what its student workers compile to the student's own cache and finds it there the next time
(the second run of unchanged code compiles nothing new); whatever the student's code plants there
stays there: a ``--submission`` run or a GitHub Classroom run (whose report is a grade) of the same
code neither reads nor writes it, and nothing of it reaches the shared cache. The folder is used only
if it is this user's own, which nobody else may write.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import ROOT, run_grade, task
from release_helpers import copy_course
from grader.workers import compile_cache

KEY = "fedcba9876543210" * 4
PLANT = f'''
import os

import jax

FOLDER = jax.config.jax_compilation_cache_dir
print("CACHE folder:", FOLDER)
try:  # where a student's worker may write (its own cache), an entry under a name of its choosing
    with open(os.path.join(FOLDER, "jit_planted-{KEY}-cache"), "wb") as f:
        f.write(b"PLANTED")
    print("CACHE plant: done")
except (OSError, TypeError) as exc:
    print(f"CACHE plant: refused ({{type(exc).__name__}})")
'''


def _names(folder) -> set[str]:
    return {n for _, _, names in os.walk(folder) for n in names}


def _files(folder) -> dict[str, int]:
    """Each entry's inode: JAX writes an entry it compiled anew as a new file, so an unchanged inode was found."""
    return {n: os.lstat(os.path.join(parent, n)).st_ino for parent, _, names in os.walk(folder) for n in names}


def _grade(course, env, *args) -> dict:
    proc = run_grade("exercise7", "--course", str(course), "--seed", "5", *args, cwd=course, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_students_own_runs_keep_their_cache_and_no_graded_run_touches_it(tmp_path):
    course = copy_course(tmp_path / "course", devices=(2,), tasks=("dot",))
    own, shared = tmp_path / "own", tmp_path / "shared"
    dot = course / "exercises" / "exercise7" / "dot.py"
    dot.write_text(PLANT + (ROOT / "solutions" / "exercise7" / "dot.py").read_text())
    env = {compile_cache.VARIABLE: str(shared), compile_cache.OWN_VARIABLE: str(own)}

    first = json.loads(_grade(course, env, "--format", "json").stdout)
    said = "".join(first["student_output"].values())
    assert f"CACHE folder: {own / 'devices-2'}" in said and "CACHE plant: done" in said
    assert task(first, "dot")["score"] == task(first, "dot")["points"]
    kept, files = _names(own), _files(own)
    assert f"jit_planted-{KEY}-cache" in kept and len(kept) > 5  # the student's programs, and the plant

    second = json.loads(_grade(course, env, "--format", "json").stdout)
    assert task(second, "dot")["score"] == task(second, "dot")["points"]
    found = _files(own)
    found.pop(f"jit_planted-{KEY}-cache"), files.pop(f"jit_planted-{KEY}-cache")  # the student's code wrote it again
    assert found == files  # every program found: nothing compiled anew

    (own / "devices-2" / f"jit_planted-{KEY}-cache").unlink()
    graded = json.loads(_grade(course, env, "--format", "json", "--submission", str(course / "exercises")).stdout)
    said = "".join(graded["student_output"].values())
    assert str(own) not in said and "CACHE plant: refused" in said  # it reads the shared one, by name only
    _grade(course, env, "--format", "classroom")
    assert _names(own) == kept - {f"jit_planted-{KEY}-cache"}  # neither run wrote the student's own cache
    assert not any("planted" in n for n in _names(shared))  # and nothing of it was published


def test_the_own_folder_is_this_users_alone_and_off_when_asked(tmp_path, monkeypatch):
    monkeypatch.delenv(compile_cache.VARIABLE, raising=False)
    folder = tmp_path / "own"
    monkeypatch.setenv(compile_cache.OWN_VARIABLE, str(folder))
    assert compile_cache.own_folder() == str(folder) and oct(folder.stat().st_mode & 0o777) == "0o711"
    folder.chmod(0o777)  # another user could write it: their programs would run in this user's workers
    assert compile_cache.own_folder() == ""
    folder.chmod(0o700)
    link = tmp_path / "link"
    link.symlink_to(folder)
    monkeypatch.setenv(compile_cache.OWN_VARIABLE, str(link))
    assert compile_cache.own_folder() == ""
    if os.geteuid() == 0:
        os.chown(folder, 65534, 65534)
        monkeypatch.setenv(compile_cache.OWN_VARIABLE, str(folder))
        assert compile_cache.own_folder() == ""
    for variable in (compile_cache.OWN_VARIABLE, compile_cache.VARIABLE):
        monkeypatch.setenv(compile_cache.OWN_VARIABLE, str(tmp_path / "another"))
        monkeypatch.setenv(variable, "off")
        assert compile_cache.own_folder() == ""
    assert not (tmp_path / "another").exists()


@pytest.mark.parametrize("format_", ["json", "classroom"])
def test_only_a_students_own_run_is_given_their_cache(tmp_path, monkeypatch, format_):
    """Without --submission, and not for GitHub Classroom, whose report is the grade."""
    from grader.cli import grade

    seen = {}

    def start(course, exercise, devices, backend, timeout, own_cache=""):
        seen["own"] = own_cache
        raise SystemExit(0)

    monkeypatch.setenv(compile_cache.OWN_VARIABLE, str(tmp_path / "own"))
    monkeypatch.delenv(compile_cache.VARIABLE, raising=False)
    monkeypatch.setattr("grader.grading.zygote_first.start", start)
    for submission, expected in ((None, str(tmp_path / "own") if format_ == "json" else ""), (str(ROOT), "")):
        with pytest.raises(SystemExit):
            grade._grade("exercise7", submission=submission, tasks=("dot",), devices=None, seed=1, fmt=format_,
                         output=None, fail_under=None, course_path=str(ROOT), backend=None, timeout=None,
                         allow_jax_mismatch=False, require_sandbox=None, show_output=False, watch=False)
        assert seen.pop("own") == expected
