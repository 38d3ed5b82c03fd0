"""grader.submission: messy submissions (folders, debris, Windows files) are found and graded sensibly."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from conftest import ROOT, grade_json

from grader import submission
from grader.errors import UsageError

MODULES = ("dot", "ring")


def _files(top: Path, *paths: str, text: str = "x = 1\n") -> Path:
    for p in paths:
        (top / p).parent.mkdir(parents=True, exist_ok=True)
        (top / p).write_text(text)
    return top


@pytest.mark.parametrize("paths, expected", [
    (["dot.py", "ring.py"], ""),
    (["exercise7/dot.py", "exercise7/ring.py"], "exercise7"),
    (["my_work/dot.py", "my_work/ring.py"], "my_work"),
    (["my_work/exercise7/dot.py", "my_work/exercise7/ring.py", "my_work/notes.txt"], "my_work/exercise7"),
    (["bundle/exercises/exercise7/dot.py", "bundle/tests/exercise7/test_dot.py"], "bundle/exercises/exercise7"),
    (["old/dot.py", "new/dot.py", "new/ring.py"], "new"),                    # most modules wins
    (["dot.py", "exercise7/dot.py"], "exercise7"),                          # a tie goes to the exercise's name
    (["__MACOSX/exercise7/dot.py", "__MACOSX/exercise7/ring.py", "work/dot.py"], "work"),
    (["venv/dot.py", "venv/pyvenv.cfg", "src/dot.py"], "src"),
    (["readme.md"], ""),                                                    # nothing: the top, modules reported missing
    (["a/exercise7/readme.md"], "a/exercise7"),
])
def test_locate_finds_the_folder_with_the_modules(tmp_path, paths, expected):
    _files(tmp_path, *paths)
    assert Path(submission.locate(str(tmp_path), "exercise7", MODULES)) == tmp_path / expected


def test_locate_without_module_names_prefers_the_exercise_folder(tmp_path):
    _files(tmp_path, "dot.py", "exercise7/dot.py")
    assert Path(submission.locate(str(tmp_path), "exercise7")) == tmp_path / "exercise7"


def test_locate_refuses_what_is_not_a_folder(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        submission.locate(str(tmp_path / "nope"), "exercise7", MODULES)
    _files(tmp_path, "file.py")
    with pytest.raises(UsageError, match="not a folder"):
        submission.locate(str(tmp_path / "file.py"), "exercise7", MODULES)


def test_expected_modules_are_the_stub_modules():
    stubs = ROOT / "exercises" / "exercise7"
    assert submission.expected_modules(str(stubs)) == tuple(sorted(p.stem for p in stubs.glob("*.py")))


SOURCE = 'def f():\n    return "é"\n'


@pytest.mark.parametrize("encoded", [
    SOURCE.replace("\n", "\r\n").encode(),
    codecs.BOM_UTF8 + SOURCE.encode(),
    codecs.BOM_UTF8 + SOURCE.replace("\n", "\r\n").encode(),
    SOURCE.replace("\n", "\r").encode(),
    SOURCE.encode("utf-16"),
    SOURCE.replace("\n", "\r\n").encode("cp1252"),
])
def test_windows_files_become_plain_utf8(encoded):
    assert submission.python_source(encoded) == SOURCE.encode()


def test_copy_skips_debris_and_normalises_python(tmp_path):
    src = _files(tmp_path / "src", "notes.txt", "__MACOSX/._dot.py", "._dot.py", ".DS_Store", ".git/config",
                 "__pycache__/dot.cpython-311.pyc", "env/pyvenv.cfg", "env/lib/site.py", "pkg/helper.py")
    (src / "dot.py").write_bytes(codecs.BOM_UTF8 + b"x = 1\r\n")
    dest = Path(submission.copy_to_scratch(str(src), str(tmp_path / "scratch")))
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert copied == ["dot.py", "notes.txt", "pkg/helper.py"]
    assert (dest / "dot.py").read_bytes() == b"x = 1\n"


def test_large_extra_files_are_left_out_but_too_much_python_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(submission, "MAX_BYTES", 1000)
    src = _files(tmp_path / "src", "dot.py")
    (src / "data.bin").write_bytes(b"0" * 5000)
    dest = Path(submission.copy_to_scratch(str(src), str(tmp_path / "a")))
    assert (dest / "dot.py").exists() and not (dest / "data.bin").exists()
    (src / "big.py").write_text("#" * 5000)
    with pytest.raises(UsageError, match="too large"):
        submission.copy_to_scratch(str(src), str(tmp_path / "b"))


def test_a_zipped_folder_of_windows_files_scores_full(tmp_path):
    """End to end: my_work/exercise7/ with CRLF + BOM modules, macOS debris and extra files."""
    folder = tmp_path / "upload" / "my_work" / "exercise7"
    for path in (ROOT / "solutions" / "exercise7").glob("*.py"):
        _files(folder, path.name)
        (folder / path.name).write_bytes(codecs.BOM_UTF8 + path.read_bytes().replace(b"\n", b"\r\n"))
    _files(tmp_path / "upload", "__MACOSX/my_work/exercise7/._dot.py", "my_work/README.txt", "my_work/scratch.py")
    report = grade_json(tmp_path / "upload", "--devices", "1", "--task", "devices,dot")
    assert all(t["score"] == t["max_score"] for t in report["tasks"]), [t["reason"] for t in report["tasks"]]


def test_a_missing_module_is_named_and_the_rest_is_graded(tmp_path, make_submission):
    folder = make_submission({})
    first = sorted((folder / "exercise7").glob("*.py"))[0]
    first.unlink()
    report = grade_json(folder, "--devices", "1", "--task", f"{first.stem},dot")
    missing = [t for t in report["tasks"] if t["status"] == "missing"]
    assert missing and all(t["score"] == 0 for t in missing)
    assert f"{first.name} is missing" in missing[0]["reason"]
    assert all(t["score"] == t["max_score"] for t in report["tasks"] if t not in missing)
