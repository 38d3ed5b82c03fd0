"""``grade similar``: copied code is flagged, independent code and untouched stubs are not, no grade changes.

A class of the toy course (toycourse.py): bob copied alice's add and renamed everything, fay sent
bob's copy as a zip, carol wrote her own, dan and eve sent the stubs untouched (the same text, but
only what the stubs give). The HTML report is read back with html.parser.
"""

import hashlib
from html.parser import HTMLParser

import pytest

from classroom import Page, batch, toy_class, zip_archive
from conftest import run_grade
from grader.classroom import roster, similarity
from toycourse import EXERCISE, STUBS

pytest.importorskip("copydetect", reason="grade similar needs copydetect: pip install -e '.[similarity]'")

ALICE = '''def add(x, y):
    """Return x + y."""
    total = 0.0
    for value in (x, y):
        if value is None:
            raise ValueError("missing value")
        total = total + value
    result = float(total)
    return result
'''
BOB = '''def add(x, y):
    """Return x + y."""
    # my own work
    acc = 0.0
    for item in (x, y):
        if item is None:
            raise ValueError("no value given")
        acc = acc + item
    out = float(acc)
    return out
'''
CAROL = '''import math


def add(x, y):
    """Return x + y."""
    return math.fsum([x, y])
'''


def files(add: str) -> dict[str, str]:
    return {f"{EXERCISE}/add.py": add, f"{EXERCISE}/scale.py": STUBS["scale.py"]}


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    root = tmp_path_factory.mktemp("similar")
    course, subs = toy_class(root, {"alice": files(ALICE), "bob": files(BOB), "carol": files(CAROL),
                                    "dan": files(STUBS["add.py"]), "eve": files(STUBS["add.py"])})
    zip_archive(subs / "fay.zip", files(BOB))
    return root, course, subs


def _all_text(page: str) -> list[str]:
    parser = HTMLParser()
    found = []
    parser.handle_data = found.append
    parser.feed(page)
    return found


def flagged(stdout: str) -> set[tuple[str, str, str]]:
    return {tuple(line.split()[:3]) for line in stdout.splitlines() if line.startswith("  ")}


def test_copies_are_flagged_and_nothing_else(klass, tmp_path):
    _, course, subs = klass
    html = tmp_path / "similar.html"
    proc = run_grade("similar", str(subs), "--exercise", EXERCISE, "--course", str(course), "--html", str(html))
    assert proc.returncode == 0, proc.stderr
    assert "6 submissions compared, 3 pairs more than 60% alike" in proc.stdout
    assert flagged(proc.stdout) == {("alice", "bob", "add.py"), ("alice", "fay", "add.py"), ("bob", "fay", "add.py")}
    text = " ".join(" ".join(_all_text(html.read_text())).split())
    assert "Copy Detection Report" in text
    matched = text.split("Matched Code", 1)[1]
    assert "file: alice/add.py ( 100.00% )" in matched
    assert "fay/add.py" in matched and "carol/" not in matched and "dan/" not in matched


def test_a_gradebook_is_read_for_its_submissions_and_left_as_it_was(klass, tmp_path):
    _, course, subs = klass
    book = tmp_path / "class.sqlite"
    batch(subs, course, book, "--seed", "1")
    before = hashlib.sha256(book.read_bytes()).hexdigest()
    proc = run_grade("similar", str(book), cwd=tmp_path)  # outside the course: the gradebook keeps the stubs
    assert proc.returncode == 0, proc.stderr
    assert flagged(proc.stdout) == {("alice", "bob", "add.py"), ("alice", "fay", "add.py"), ("bob", "fay", "add.py")}
    assert hashlib.sha256(book.read_bytes()).hexdigest() == before


def test_a_higher_threshold_flags_fewer(klass):
    _, course, subs = klass
    proc = run_grade("similar", str(subs), "--exercise", EXERCISE, "--course", str(course), "--threshold", "1")
    assert proc.returncode == 0 and flagged(proc.stdout) == set()


def test_a_student_id_that_is_html_is_shown_as_text(tmp_path):
    evil = "<img src=x onerror=alert(1)>"
    course, subs = toy_class(tmp_path, {"alice": files(ALICE), evil: files(BOB)})
    html = tmp_path / "similar.html"
    proc = run_grade("similar", str(subs), "--exercise", EXERCISE, "--course", str(course), "--html", str(html))
    assert proc.returncode == 0, proc.stderr
    page = Page()
    page.feed(html.read_text())
    assert not any(tag == "img" and "onerror" in attrs for tag, attrs in page.tags)
    assert any(f"{evil}/add.py" in text for text in page.text.values())


def test_a_source_that_is_gone_is_named_not_compared(klass, tmp_path):
    _, course, subs = klass
    entries = [roster.Entry(s, (str(subs / s),)) for s in ("alice", "bob")] + [
        roster.Entry("gil", (str(tmp_path / "gil.zip"),))]
    pairs, skipped = similarity.compare(entries, EXERCISE, str(course / "exercises" / EXERCISE), 0.6, None)
    assert [(p.first, p.second, p.module) for p in pairs] == [("alice", "bob", "add")]
    assert skipped == {"gil": f"{tmp_path / 'gil.zip'} is no longer there"}


def test_a_class_folder_needs_the_exercise(klass):
    _, course, subs = klass
    proc = run_grade("similar", str(subs), "--course", str(course))
    assert proc.returncode == 2 and "needs --exercise" in proc.stderr


def test_a_notebook_is_compared_by_the_modules_its_cells_make(klass, tmp_path):
    from classroom import notebook

    _, course, subs = klass
    copied = notebook(tmp_path / "gus.ipynb", {"add": BOB, "scale": STUBS["scale.py"]})
    entries = [roster.Entry("alice", (str(subs / "alice"),)), roster.Entry("gus", (str(copied),))]
    pairs, skipped = similarity.compare(entries, EXERCISE, str(course / "exercises" / EXERCISE), 0.6, None)
    assert skipped == {} and [(p.first, p.second, p.module) for p in pairs] == [("alice", "gus", "add")]
