"""A report (or several) as JUnit XML, which CI test reporters read: one <testcase> per case.

Every text in it is XML text (grader.grading.sanitise.xml): one student's escape sequence must not make
the whole class's file invalid XML, which CI would refuse.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from grader.layout import label
from grader.grading.sanitise import xml


def _case_reason(case: dict) -> str:
    where = f" ({case['where']})" if case.get("where") else ""
    at = label(case.get("devices"), case.get("processes"))
    return xml(f"[{at}] {case['message']}{where}" if at else f"{case['message']}{where}")


def _junit_suite(parent: ET.Element, name: str, report: dict | None, error: str) -> dict:
    name = xml(name)
    suite = ET.SubElement(parent, "testsuite", name=name)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    if report is None:
        case = ET.SubElement(suite, "testcase", classname=name, name="submission", time="0")
        ET.SubElement(case, "error", message=xml(error), type="not graded").text = xml(error)
        counts.update(tests=1, errors=1)
    else:
        for task in report["tasks"]:
            for c in task["cases"]:
                case = ET.SubElement(suite, "testcase", classname=xml(f"{name}.{task['id']}"),
                                     name=xml(c.get("name") or c["test"]), time=f"{c['duration_s']:.3f}")
                counts["tests"] += 1
                counts["time"] += c["duration_s"]
                if c["outcome"] == "failed":
                    ET.SubElement(case, "failure", message=_case_reason(c), type=xml(c["kind"] or "failed")).text = (
                        _case_reason(c) + xml(f"\nhint: {task['hint']}" if task.get("hint") else ""))
                    counts["failures"] += 1
                elif c["outcome"] == "skipped":
                    ET.SubElement(case, "skipped", message=xml(c["message"]))
                    counts["skipped"] += 1
    for key, value in counts.items():
        suite.set(key, f"{value:.3f}" if key == "time" else str(value))
    return counts


def junit_xml(suites: list[tuple[str, dict | None, str]], name: str) -> str:
    """JUnit XML with one <testsuite> per (name, report or None, error) and one <testcase> per case."""
    root = ET.Element("testsuites", name=xml(name))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for suite_name, report, error in suites:
        counts = _junit_suite(root, suite_name, report, error)
        for key in totals:
            totals[key] += counts[key]
    for key, value in totals.items():
        root.set(key, f"{value:.3f}" if key == "time" else str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
