"""The README's example hidden test runs as written: on a course of its own, the chapter's dot
product scores full marks and the stub zero."""

from __future__ import annotations

import re

import yaml
from conftest import ROOT, grade_json

from toycourse import write_files

SOLUTION = (ROOT / "solutions" / "exercise7" / "dot.py").read_text()
STUB = (ROOT / "exercises" / "exercise7" / "dot.py").read_text()


def readme_example() -> str:
    """The first Python block after "A hidden test looks like this" in README.md."""
    text = (ROOT / "README.md").read_text()
    after = text[text.index("A hidden test looks like this"):]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def test_the_readme_example_grades_a_course(tmp_path):
    course = {"course": "readme-course", "defaults": {"devices": [1, 2], "timeout_s": 60},
              "exercises": {"ex": {"title": "The README's example", "tasks": [
                  {"id": "dot", "title": "Distributed dot product", "points": 10, "hint": "One psum."}]}}}
    (tmp_path / "course.yaml").write_text(yaml.safe_dump(course))
    write_files(tmp_path / "tests" / "ex", {"test_dot.py": readme_example()})
    write_files(tmp_path / "solutions" / "ex", {"dot.py": SOLUTION})
    write_files(tmp_path / "exercises" / "ex", {"dot.py": STUB})
    for folder, expected in (("solutions", 10), ("exercises", 0)):
        report = grade_json(tmp_path / folder, "--course", str(tmp_path), exercise="ex")
        dot = report["tasks"][0]
        assert len(dot["cases"]) == 4, dot
        assert dot["score"] == expected, (folder, dot["reason"])
