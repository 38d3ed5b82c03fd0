"""One sanitiser per output kind: what each lets through of a hostile student's text, and what it shows instead."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from grader.grading import junit
from grader.grading.sanitise import html, line, spreadsheet, terminal, xml

HOSTILE = "\x1b[2J\x1b]0;title\x07\r\x08\x00\x0b\x0c\x7f\x85\x9b31m\u202e\u2066\ufffe\ud800"


def test_terminal_shows_every_control_character_and_keeps_lines_tabs_and_unicode():
    shown = terminal(f"ok\tπ ∑ │ 日本\n{HOSTILE}")
    assert shown.startswith("ok\tπ ∑ │ 日本\n")
    assert all(c not in shown for c in HOSTILE if not c.isprintable())
    assert shown.endswith("\\x1b[2J\\x1b]0;title\\x07\\x0d\\x08\\x00\\x0b\\x0c\\x7f\\x85\\x9b31m\\u202e\\u2066\\ufffe\\ud800")


def test_line_keeps_a_name_on_its_line():
    shown = line(f"mallory\n[3/3] c_honest: 15 / 15\tx\u2028y\u2029{HOSTILE}")
    assert len(shown.splitlines()) == 1 and shown.isprintable()
    assert shown.startswith("mallory\\x0a[3/3] c_honest: 15 / 15\\x09x\\u2028y\\u2029\\x1b[2J")
    assert line("Ann Lee, π") == "Ann Lee, π"


def test_xml_text_parses_whatever_the_student_wrote():
    every_character = "".join(chr(c) for c in range(0x20)) + HOSTILE + "<&>\""
    element = ET.Element("failure", message=xml(every_character))
    element.text = xml(every_character)
    parsed = ET.fromstring(ET.tostring(element, encoding="unicode"))
    assert parsed.get("message") == parsed.text == xml(every_character)
    assert "\\x1b" in parsed.text and "<&>" in parsed.text


def test_junit_of_a_hostile_case_is_valid_xml():
    case = {"test": "test_add", "name": "test_add", "devices": 1, "processes": None, "outcome": "failed",
            "kind": "raised", "message": HOSTILE, "where": "\x1b[31m.py:1", "duration_s": 0.1}
    report = {"tasks": [{"id": "add", "hint": "", "cases": [case]}]}
    root = ET.fromstring(junit.junit_xml([("\x1bmallory", report, ""), ("ann", None, HOSTILE)], "course").encode())
    assert [s.get("name") for s in root] == ["\\x1bmallory", "ann"]


def test_html_escapes_markup_after_showing_controls():
    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags = []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

    page = Tags()
    page.feed(f"<p>{html('<script>alert(1)</script><b onclick=x>' + HOSTILE)}</p>")
    assert page.tags == ["p"]


def test_spreadsheet_neutralises_formulas_and_shows_controls():
    cells = [spreadsheet(t) for t in ("=HYPERLINK(\"x\")", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", "ann", HOSTILE)]
    assert cells[:6] == ["'=HYPERLINK(\"x\")", "'+1", "'-1", "'@SUM(A1)", "'\t=1", "'\\x0d=1"]
    assert cells[6] == "ann" and "\x1b" not in cells[7]
    out = io.StringIO()
    csv.writer(out).writerow(cells)
    assert next(csv.reader(io.StringIO(out.getvalue()))) == cells
