"""Gradescope's results.json format, checked by hand from its documentation.

Source: Gradescope, "Autograder Specifications", section "Output format"
(https://gradescope-autograders.readthedocs.io/en/latest/specs/). The documented keys:

    { "score": 44.0,                 optional, but required if not on each test case
      "execution_time": 136,         optional, seconds
      "output": "...",               optional, text for the whole submission
      "output_format", "test_output_format", "test_name_format":  text | html | simple_format | md | ansi
      "visibility": "after_due_date",     optional: visible | hidden | after_due_date | after_published
      "stdout_visibility": "visible",     optional, same values
      "extra_data": {},              optional
      "tests": [ { "score", "max_score", "status" (passed | failed), "name", "name_format",
                   "number", "output", "output_format", "tags" [str], "visibility", "extra_data" } ],
      "leaderboard": [ { "name", "value", "order" (asc | desc) } ] }

Everything is optional except the score: at the top level, or on every test. Unknown keys are
reported too, since Gradescope would ignore them silently.
"""

from __future__ import annotations

import math

VISIBILITIES = {"visible", "hidden", "after_due_date", "after_published"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
STATUSES = {"passed", "failed"}
TOP_KEYS = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
            "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST_KEYS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
             "visibility", "extra_data"}


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_fields(obj: dict, where: str, problems: list[str]) -> None:
    for key in ("score", "max_score", "execution_time"):
        if key in obj and not _number(obj[key]):
            problems.append(f"{where}.{key}: expected a finite number, got {obj[key]!r}")
    for key in ("output", "name"):
        if key in obj and not isinstance(obj[key], str):
            problems.append(f"{where}.{key}: expected a string, got {obj[key]!r}")
    for key in ("visibility", "stdout_visibility"):
        if key in obj and obj[key] not in VISIBILITIES:
            problems.append(f"{where}.{key}: expected one of {sorted(VISIBILITIES)}, got {obj[key]!r}")
    for key in ("output_format", "test_output_format", "test_name_format", "name_format"):
        if key in obj and obj[key] not in FORMATS:
            problems.append(f"{where}.{key}: expected one of {sorted(FORMATS)}, got {obj[key]!r}")
    if "extra_data" in obj and not isinstance(obj["extra_data"], dict):
        problems.append(f"{where}.extra_data: expected an object")


def validate(results) -> list[str]:
    """The ways ``results`` breaks the documented format (empty when it conforms)."""
    if not isinstance(results, dict):
        return [f"results: expected an object, got {type(results).__name__}"]
    problems = [f"results.{k}: not a documented key" for k in sorted(set(results) - TOP_KEYS)]
    _check_fields(results, "results", problems)
    tests = results.get("tests", [])
    if not isinstance(tests, list):
        return problems + ["results.tests: expected a list"]
    for i, test in enumerate(tests):
        where = f"results.tests[{i}]"
        if not isinstance(test, dict):
            problems.append(f"{where}: expected an object")
            continue
        problems += [f"{where}.{k}: not a documented key" for k in sorted(set(test) - TEST_KEYS)]
        _check_fields(test, where, problems)
        if "status" in test and test["status"] not in STATUSES:
            problems.append(f"{where}.status: expected passed or failed, got {test['status']!r}")
        if "number" in test and not isinstance(test["number"], (str, int, float)):
            problems.append(f"{where}.number: expected a string or number")
        if "tags" in test and not (isinstance(test["tags"], list) and all(isinstance(t, str) for t in test["tags"])):
            problems.append(f"{where}.tags: expected a list of strings")
    if "score" not in results and not (tests and all(isinstance(t, dict) and "score" in t for t in tests)):
        problems.append("results: a score is required at the top level or on every test")
    for i, entry in enumerate(results.get("leaderboard", [])):
        if not isinstance(entry, dict) or "name" not in entry or "value" not in entry:
            problems.append(f"results.leaderboard[{i}]: expected an object with name and value")
        elif entry.get("order", "desc") not in ("asc", "desc"):
            problems.append(f"results.leaderboard[{i}].order: expected asc or desc")
    return problems
