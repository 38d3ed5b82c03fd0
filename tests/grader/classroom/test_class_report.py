"""``grade report GRADEBOOK --html``: the page is read back with html.parser and, where Chromium is
installed, rendered by it headless into a screenshot.

The class (toy course, toycourse.py): ann full marks, ben partial, dee still has the stubs, eve's
add raises with a message that is HTML (a student attacking the page), cy's archive is refused, and
one result is recorded as failed with a sandbox record, as issue 11's reports will carry.
"""

import html
import json
import re
import shlex
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from classroom import Page, batch, toy_class, zip_archive
from conftest import run_grade
from grader.classroom.class_report import render
from grader.classroom.gradebook import FAILED, GRADED, Gradebook, Result
from toycourse import EXERCISE, SOLUTIONS, STUBS

BEN_ADD = "def add(x, y):\n    return 5.0 if (x, y) == (2.0, 3.0) else 0.0\n"
EVE_ADD = "def add(x, y):\n    raise ValueError('<script>alert(1)</script>')\n"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    course, subs = toy_class(root, {"ann": {f"{EXERCISE}/{n}": t for n, t in SOLUTIONS.items()},
                                    "ben": {f"{EXERCISE}/add.py": BEN_ADD},
                                    "dee": {f"{EXERCISE}/{n}": t for n, t in STUBS.items()},
                                    "eve": {f"{EXERCISE}/add.py": EVE_ADD}})
    zip_archive(subs / "cy.zip", {"/abs/add.py": SOLUTIONS["add.py"]})
    book = root / "class.sqlite"
    batch(subs, course, book, "--seed", "11")
    with Gradebook(str(book)) as gb:
        gb.record(Result("fox", "h", "c", FAILED, 0.0, 10.0, "the grader failed (exit code 3): out of disk", "fox",
                         11, report={"backend": "cpu", "sandbox": {"held": ["files", "limits"], "missing": {"uid": "not root"}}}))
    out = root / "report.html"
    roster = root / "roster.csv"
    roster.write_text("student,name\nann,Ann Lee\nben,Ben Ng\ncy,Cy Ott\ndee,Dee Roe\neve,Eve Ray\nfox,Fox Lu\n"
                      "gil,Gil Tan\n")
    proc = run_grade("report", str(book), "--html", str(out), "--roster", str(roster))
    assert proc.returncode == 0, proc.stderr
    parsed = Page()
    parsed.feed(out.read_text())
    return out, parsed


def test_the_page_has_an_overall_and_a_per_task_distribution(page):
    _, parsed = page
    assert parsed.count("svg", **{"class": "histogram"}) == 3  # overall, add, scale
    bars = [int(a["data-count"]) for t, a in parsed.tags if t == "rect"]
    assert sum(bars[:10]) == 4, "the overall histogram counts the four graded students"
    assert "5 submissions" not in parsed.text["summary"] and "6 submissions: 4 graded, 1 refused, 1 failed" in \
        parsed.text["summary"]


def test_the_most_common_failures_are_counted_per_task(page):
    _, parsed = page
    add = {(test, kind): int(n) for test, kind, n, _ in parsed.rows["task-add"]}
    # ben fails test_add_random (wrong answer); eve's add raises in both tests; dee's untouched stub is
    # said apart, so it never pushes a real failure out of the table.
    assert add == {("test_add_random", "wrong"): 1, ("test_add_random", "raised"): 1, ("test_add_small", "raised"): 1}
    scale = {(test, kind): int(n) for test, kind, n, _ in parsed.rows["task-scale"]}
    assert scale == {("test_scale", "missing_module"): 2}  # ben, eve
    assert "1 student left the stub untouched: dee" in parsed.text["task-add"]
    assert "1 student left the stub untouched: dee" in parsed.text["task-scale"]


def test_untouched_stubs_never_crowd_out_a_real_failure():
    """Five tests a whole class left as stubs, and one student's SyntaxError: the SyntaxError is listed."""
    from grader.classroom.class_report import failure_reasons, untouched

    def result(student, cases):
        return Result(student, "h", "c", GRADED, 0.0, 15.0, "", student, 1,
                      report={"tasks": [{"id": "dot", "cases": cases}]})

    stub = [{"test": f"test_{i}", "kind": "not_started", "outcome": "failed", "message": "NotImplementedError"}
            for i in range(6)]
    syntax = [{"test": "test_0", "kind": "import_error", "outcome": "failed", "message": "SyntaxError: line 3"}]
    results = [result(f"s{i}", stub) for i in range(9)] + [result("zoe", syntax)]
    assert failure_reasons(results, "dot") == [("test_0", "import_error", 1, "SyntaxError: line 3")]
    assert untouched(results, "dot") == [f"s{i}" for i in range(9)]


def test_the_roster_shows_who_sent_nothing(page):
    _, parsed = page
    assert {tuple(row) for row in parsed.rows["sent-nothing"]} == {("gil", "Gil Tan")}
    assert "Sent nothing (1 student of 7 on the roster)" in parsed.text["sent-nothing"]


def test_who_is_not_graded_and_why(page):
    _, parsed = page
    missing = {student: (status, why) for student, status, why in parsed.rows["not-graded"]}
    assert set(missing) == {"cy", "fox"}
    assert missing["cy"][0] == "refused" and "archive entry '/abs/add.py' points outside" in missing["cy"][1]
    assert missing["fox"] == ("failed", "the grader failed (exit code 3): out of disk")


def test_each_result_shows_its_backend_and_sandbox(page):
    _, parsed = page
    results = {row[0]: row for row in parsed.rows["results"]}
    ann = results["ann"]
    assert ann[:6] == ["ann", "graded", "15", "", "15", "cpu"]
    assert ann[6].startswith("files") and "lifetime" in ann[6], "the layers that held when ann was graded"
    assert results["fox"][:3] == ["fox", "failed", ""] and results["fox"][6] == "files, limits; not: uid"


def test_student_text_is_escaped_not_run(page):
    out, parsed = page
    assert parsed.count("script") == 0
    assert "&lt;script&gt;alert(1)&lt;/" in out.read_text()
    assert any("<script>alert(1)</script>" in row[3] for row in parsed.rows["task-add"])  # shown as text


def _chromium() -> str | None:
    return next(filter(None, (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome"))), None)


def test_a_headless_browser_renders_the_page(page, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here (apt-get install chromium) to render the page headless")
    out, _ = page
    shot = tmp_path / "report.png"
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                           "--window-size=1200,1600", out.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1200, 1600)
    assert len(set(data[100:])) > 50, "the screenshot is not one flat colour"


# What the page's text boxes are, measured by the browser that lays them out: every text node's line
# boxes (a Range's client rects), and every word (a run of letters, digits and dots: "student",
# "43.38") whose letters the layout put on more than one line, written into the page as JSON for
# --dump-dom to hand back.
MEASURE = """
<script>
addEventListener("load", () => {
  const boxes = [], broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim() || node.parentElement.closest("title, script")) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width > 0 && r.height > 0) boxes.push([node.textContent.trim().slice(0, 40), r.left, r.top, r.right, r.bottom]);
    }
    for (const word of node.textContent.matchAll(/[A-Za-z0-9.%]{2,}/g)) {
      const span = document.createRange();
      span.setStart(node, word.index);
      span.setEnd(node, word.index + word[0].length);
      const lines = new Set([...span.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
      if (lines.size > 1) broken.push(word[0]);
    }
  }
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify({width: window.innerWidth, boxes, broken});
  document.body.append(out);
});
</script>
"""
LONG_TESTS = ["test_ring_allreduce_block_of_another_shape", "test_sharded_matmul_is_row_parallel_with_one_psum",
              "test_train_step_sends_only_gradient_and_loss", "test_optimal_sends_2_n_minus_1_chunks"]
LONG_MESSAGES = ["ring_allreduce(x, axis_name) raised ValueError: lax.ppermute's perm must be a list of pairs "
                 "(source, destination), got perm=[(0,1),(1,2),(2,3),(3,0),(0,1)]",
                 "sharded_matmul runs an all-gather (from lax.all_gather) of 8192 bytes per device: "
                 "/home/student/very/long/path/without/spaces/in/it/exercise7/mesh.py:41",
                 "wrong answer: expected shape (8, 128), got (128, 8)"]


def _synthetic_class(path) -> None:
    """A gradebook of twelve results whose failures have exercise 7's long test names and messages:
    no grading, only what the page is drawn from."""
    tasks = [{"id": f"task{i}", "title": f"A task with a title of some length, number {i}", "points": 15,
              "extra_credit": i == 3} for i in range(4)]
    with Gradebook(str(path)) as book:
        book.set_meta(course="pmap-course", exercise="exercise7", seed=7, tasks=tasks, max_score=45,
                      grader_version="0.1.0", course_hash="c")
        for s in range(12):
            report_tasks = [{"id": t["id"], "score": 15.0 * ((s + i) % 3) / 2, "cases": [
                {"test": LONG_TESTS[(s + i + k) % 4], "kind": ("wrong", "raised", "not_started")[k % 3],
                 "outcome": "failed", "message": LONG_MESSAGES[(s + k) % 3]} for k in range(s % 4)]}
                for i, t in enumerate(tasks)]
            report = {"tasks": report_tasks, "backend": "cpu",
                      "sandbox": {"held": ["files", "network", "signals", "syscalls", "lifetime", "limits"],
                                  "missing": {"uid": "another uid could not read /root (mode 0700)"}}}
            book.record(Result(f"student-with-a-longish-id-{s:02d}", "h", "c", GRADED, 10.0 + s, 45.0, "",
                               "src", 7, report=report))
        book.record(Result("zed", "h", "c", "refused", 0.0, 45.0, "archive entry '/abs/very/long/path/that/does/"
                           "not/break/anywhere/add.py' points outside the submission folder", "zed", 7))


def _overlaps(boxes) -> list:
    """Pairs of text boxes from different text that cover each other by more than a pixel each way."""
    found = []
    for i, (text_a, *a) in enumerate(boxes):
        for text_b, *b in boxes[i + 1:]:
            if min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1:
                found.append((text_a, text_b))
    return found


@pytest.mark.parametrize("width", [800, 1280, 1920])
def test_no_two_text_boxes_overlap_and_no_word_is_broken_in_a_browser(tmp_path, width):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here (apt-get install chromium) to lay the page out")
    book = tmp_path / "class.sqlite"
    _synthetic_class(book)
    with Gradebook(str(book), readonly=True) as opened:
        page = render(opened)
    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", MEASURE + "</body>"))
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},1000", "--dump-dom",
                           measured.as_uri()], capture_output=True, text=True, timeout=120)
    dumped = re.search(r'<pre id="measured">(.*?)</pre>', proc.stdout, re.S)
    assert dumped, proc.stderr[-2000:]
    data = json.loads(html.unescape(dumped.group(1)))
    assert data["width"] == width and len(data["boxes"]) > 200, data["width"]
    assert _overlaps(data["boxes"]) == []
    assert data["broken"] == [], f"words broken inside at {width} px"


def test_the_documented_chromium_command_renders_the_whole_page(tmp_path):
    """The command docs/instructor.md gives, run as written (as root here, when the tests are): a PDF of
    every page of a long report."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here (apt-get install chromium) to render the page")
    doc = (Path(__file__).parents[3] / "docs" / "instructor.md").read_text()
    command = next(line for line in doc.splitlines() if line.startswith("chromium --headless"))
    book = tmp_path / "class.sqlite"
    _synthetic_class(book)
    with Gradebook(str(book), readonly=True) as opened:
        (tmp_path / "report.html").write_text(render(opened))
    proc = subprocess.run([browser, *shlex.split(command)[1:]], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    pdf = tmp_path / "report.pdf"
    assert pdf.exists(), proc.stderr[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page\b(?!s)", data)) >= 2, "the whole, long page"
