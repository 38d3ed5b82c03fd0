"""The shared compile cache: filled only by trusted processes, read by name, never written by student code.

What must hold: a student's worker can open an entry by name but can neither list the folder nor
write to it, nor plant an entry in the outbox the grader publishes from, nor get a look-alike folder
in its scratch published; a run that tried all of that is graded exactly like the reference solution
and leaves the shared folder byte for byte as it was. The grader publishes only well-formed entries,
whole; and an entry's name (JAX's key) does not depend on the folder a process caches in, or no
outbox could ever share one with the shared folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, build_submission, run_grade, task
from grader.grading import confinement
from grader.grading.workspace import Workspace
from grader.layout import Layout
from grader.workers import compile_cache
from grader.workers.backends import resolve
from grader.workers.worker import RunSettings, Worker

KEY = "0123456789abcdef" * 4
POISON = b"POISON-ENTRY"


def _contents(folder) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in os.listdir(folder)}


def _grade(submission, shared) -> dict:
    proc = run_grade("exercise7", "--submission", str(submission), "--task", "dot", "--devices", "2",
                     "--format", "json", "--seed", "5", env={compile_cache.VARIABLE: str(shared)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


ATTACK = '''
import os

import jax

SHARED, NAME, KEY, POISON = {shared!r}, {name!r}, {key!r}, {poison!r}


def _attempt(what, step):
    try:
        step()
        print(f"CACHE {{what}}: done")
    except OSError as exc:
        print(f"CACHE {{what}}: refused ({{type(exc).__name__}})")


def _plant(folder, name):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(POISON)


_attempt("read", lambda: open(os.path.join(SHARED, NAME), "rb").read())
_attempt("list", lambda: os.listdir(SHARED))
_attempt("overwrite", lambda: _plant(SHARED, NAME))
_attempt("create", lambda: _plant(SHARED, f"jit_planted-{{KEY}}-cache"))
_attempt("outbox", lambda: _plant(os.path.join(os.path.dirname(os.getcwd()), "compile-outbox", "clean-1"),
                                  f"jit_outbox-{{KEY}}-cache"))
_attempt("look-alike", lambda: _plant(os.path.join(os.getcwd(), "compile-outbox", "clean-1"), f"jit_alike-{{KEY}}-cache"))
print("CACHE folder:", jax.config.jax_compilation_cache_dir)
'''


@pytest.mark.skipif(not sys.platform.startswith("linux") or "files" not in confinement.survey()["held"],
                    reason="needs the sandbox's files layer (Landlock), without which no worker reads the cache")
def test_student_code_cannot_write_list_or_poison_the_shared_cache(tmp_path):
    shared = tmp_path / "shared"
    reference = _grade(ROOT / "solutions", shared)  # fills it: the clean worker's programs
    before = _contents(shared)
    assert before and all(compile_cache.ENTRY.fullmatch(n) for n in before)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o711
    source = (ROOT / "solutions" / "exercise7" / "dot.py").read_text()
    attack = ATTACK.format(shared=str(shared), name=sorted(before)[0], key=KEY, poison=POISON)
    hostile = build_submission(tmp_path / "hostile", {"dot": attack + source})

    report = _grade(hostile, shared)

    said = "".join(report["student_output"].values())
    assert "CACHE read: done" in said  # by name, as JAX does
    for step in ("list", "overwrite", "create", "outbox", "look-alike"):
        if step == "look-alike":
            assert "CACHE look-alike: done" in said  # its own scratch: allowed, and never published
        else:
            assert f"CACHE {step}: refused" in said, said
    assert f"CACHE folder: {shared}" in said  # the worker did read the shared cache
    assert task(report, "dot")["score"] == task(reference, "dot")["score"] == task(reference, "dot")["points"]
    after = _contents(shared)
    assert {n: h for n, h in after.items() if n in before} == before
    assert not any(POISON in (shared / n).read_bytes() for n in after)
    assert not any(part in n for n in after for part in ("planted", "outbox", "alike"))


def test_publish_moves_only_whole_well_formed_entries(tmp_path):
    outbox, shared = tmp_path / "outbox", tmp_path / "shared"
    (outbox / "clean-2").mkdir(parents=True)
    shared.mkdir()
    good = f"jit_stage-{KEY}-cache"
    (outbox / "clean-2" / good).write_bytes(b"program")
    (outbox / "clean-2" / "notes.txt").write_bytes(b"not an entry")
    (outbox / "clean-2" / f".jit_stage-{KEY}-cache.12.partial").write_bytes(b"half")
    (outbox / "clean-2" / f"jit_link-{KEY}-cache").symlink_to("/etc/passwd")
    (outbox / "clean-2" / f"jit_big-{KEY}-cache").write_bytes(b"x" * (compile_cache.ENTRY_LIMIT_BYTES + 1))
    (shared / f"jit_kept-{KEY}-cache").write_bytes(b"first")
    (outbox / "clean-2" / f"jit_kept-{KEY}-cache").write_bytes(b"second")
    (outbox / "clean-3").symlink_to(tmp_path / "elsewhere")

    assert compile_cache.publish(str(outbox), str(shared)) == 1
    assert sorted(os.listdir(shared)) == sorted([good, f"jit_kept-{KEY}-cache"])
    assert (shared / good).read_bytes() == b"program" and stat.S_IMODE((shared / good).stat().st_mode) == 0o644
    assert (shared / f"jit_kept-{KEY}-cache").read_bytes() == b"first"


def test_the_shared_folder_is_off_when_asked_or_when_the_sandbox_is_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv(compile_cache.VARIABLE, str(tmp_path / "c"))
    assert compile_cache.shared_folder() == str(tmp_path / "c")
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o711
    assert compile_cache.shared_folder(("landlock",)) == ""
    monkeypatch.setenv(compile_cache.VARIABLE, "off")
    assert compile_cache.shared_folder() == ""


_COMPILE = textwrap.dedent('''
    import os, sys
    import jax, jax.numpy as jnp, numpy as np
    from grader.sandbox import compile_cache
    shared, own = sys.argv[1:3]
    print(compile_cache.use(shared, own))
    jnp.pad(np.ones(5, np.float32), (0, 3)).block_until_ready()
    print(sorted(n for n in os.listdir(own) if not n.startswith(".")) if own else jax.config.jax_compilation_cache_dir)
''')


def _compile(shared: str, own: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", _COMPILE, shared, own], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "JAX_PLATFORMS": "cpu"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_an_entry_is_named_by_the_program_not_by_the_folder_it_is_kept_in(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    first, second = _compile("", str(one)), _compile("", str(two))
    assert first[1] == second[1] and "jit__pad" in first[1]
    assert not [n for n in os.listdir(one) if n.endswith(".partial")]  # written whole


_LABELLED = textwrap.dedent('''
    import sys
    import jax, jax.numpy as jnp
    from grader.sandbox import compile_cache
    compile_cache.use("", sys.argv[1], locations=sys.argv[3] == "clean")

    def f(x):
        with jax.named_scope(sys.argv[2]):
            return jnp.sin(x) * 2

    print("LABEL" in jax.jit(f).lower(jnp.ones(3)).compile().as_text())
''')


@pytest.mark.parametrize("worker, second_reads_its_labels", [("clean", "True"), ("student", "False")])
def test_in_a_clean_worker_programs_that_differ_only_in_their_locations_do_not_share_an_entry(
        tmp_path, worker, second_reads_its_labels):
    """A clean worker reads labels and the student's own code back from a compiled program's locations,
    which JAX's key leaves out by default: there the labelled twin of a cached program is compiled, not
    read. Elsewhere (a student's worker, whose compiled text nobody reads) the twins share one entry."""
    for scope, labelled in (("plain", "False"), ("LABEL_7", second_reads_its_labels)):
        proc = subprocess.run([sys.executable, "-c", _LABELLED, str(tmp_path), scope, worker], capture_output=True,
                              text=True, cwd=ROOT, env={**os.environ, "JAX_PLATFORMS": "cpu"}, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == [labelled]


def test_in_a_clean_worker_the_same_program_from_another_copy_of_the_code_is_read_not_compiled(tmp_path):
    """No Python frame enters a clean worker's locations: a run's own copy of the engine (another path every
    run) does not make its programs new to the cache."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for copy in ("one", "two"):
        (tmp_path / copy).mkdir()
        (tmp_path / copy / "compile.py").write_text(_LABELLED)
        proc = subprocess.run([sys.executable, str(tmp_path / copy / "compile.py"), str(cache), "LABEL_1", "clean"],
                              capture_output=True, text=True, cwd=ROOT, timeout=120,
                              env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stderr
        entries = sorted(n for n in os.listdir(cache) if n.endswith("-cache"))
        if copy == "one":
            first = entries
    assert entries == first


def test_a_shared_folder_this_process_could_write_is_not_read(tmp_path):
    """Where confinement does not hold (here: the test's own process), the shared cache is not trusted."""
    assert _compile(str(tmp_path), "") == ["writable here", "None"]
    assert os.listdir(tmp_path) == []  # the write check leaves nothing behind


def test_only_trusted_workers_write_what_they_compile(tmp_path):
    """A student's worker gets no outbox; a clean one does, and in grade check (a trusted run) every one."""
    run = RunSettings("code", "probes", resolve("cpu"), 0, 1.0, outbox=str(tmp_path / "out"),
                      shared_cache=str(tmp_path / "shared"))
    assert Worker(Layout(2), run, launcher=None).compile_cache() == ""
    assert Worker(Layout(2), run, launcher=None, clean_dir=str(tmp_path)).compile_cache() == str(tmp_path / "out" / "clean-2")
    trusted = dataclasses.replace(run, trusted=True)
    assert Worker(Layout(2), trusted, launcher=None).compile_cache() == str(tmp_path / "out" / "worker-2")
    assert Worker(Layout(2), trusted, launcher=None, distributed={"process": 0}).compile_cache() == ""
    space = Workspace(trusted=True)
    try:
        assert space.settings(backend=resolve("cpu"), memory_mb=0, timeout_s=1).trusted
    finally:
        space.close()
