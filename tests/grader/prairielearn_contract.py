"""PrairieLearn's external grading contract, checked by hand from its documentation.

Source: PrairieLearn, docs/externalGrading.md ("Configuring and enabling external grader support",
"The Grading Process", "Grading results"; https://prairielearn.readthedocs.io/en/latest/externalGrading/):

- info.json's ``externalGradingOptions``: ``enabled``, ``image`` (required), ``entrypoint`` (an absolute
  path, a string or a list), ``serverFilesCourse`` (copied to ``/grade/serverFilesCourse``), ``timeout``
  (seconds, at most 600), ``enableNetworking``, ``environment``; the question's ``gradingMethod`` is
  ``External``.
- the entrypoint reads ``/grade/student`` and writes ``/grade/results/results.json`` (at most 1 MB).
  ``score`` (a number in [0, 1]) is required when the submission is gradable; ``gradable: false`` marks
  it invalid, with ``format_errors`` a string or a list of strings. ``<pl-external-grader-results>``
  renders ``message``, ``output``, ``images`` and ``tests``, each with ``name``, ``description``,
  ``points``, ``max_points``, ``message``, ``output``, ``images``.
"""

from __future__ import annotations

import json
import math

OPTIONS = {"enabled", "image", "entrypoint", "serverFilesCourse", "timeout", "enableNetworking", "environment"}
TEST_KEYS = {"name", "description", "points", "max_points", "message", "output", "images"}
TOP_KEYS = {"gradable", "score", "format_errors", "message", "output", "images", "tests"}
MAX_BYTES = 1 << 20


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate_info(info: dict) -> list[str]:
    """The ways a question's info.json breaks the external grading options the documentation gives."""
    problems = []
    if info.get("gradingMethod") != "External":
        problems.append("gradingMethod: expected External")
    options = info.get("externalGradingOptions")
    if not isinstance(options, dict):
        return problems + ["externalGradingOptions: missing"]
    problems += [f"externalGradingOptions.{k}: not a documented option" for k in sorted(set(options) - OPTIONS)]
    if options.get("enabled") is not True:
        problems.append("externalGradingOptions.enabled: expected true")
    if not isinstance(options.get("image"), str) or not options["image"]:
        problems.append("externalGradingOptions.image: required")
    entry = options.get("entrypoint")
    first = entry[0] if isinstance(entry, list) and entry else entry
    if not isinstance(first, str) or not first.startswith("/"):
        problems.append("externalGradingOptions.entrypoint: expected an absolute path")
    timeout = options.get("timeout", 30)
    if not _number(timeout) or not 0 < timeout <= 600:
        problems.append("externalGradingOptions.timeout: expected seconds, at most 600")
    files = options.get("serverFilesCourse", [])
    if not (isinstance(files, list) and all(isinstance(f, str) for f in files)):
        problems.append("externalGradingOptions.serverFilesCourse: expected a list of paths")
    return problems


def validate_results(text: str) -> list[str]:
    """The ways a results.json (its text) breaks the grading results the documentation gives."""
    if len(text.encode()) > MAX_BYTES:
        return ["results.json: larger than 1 MB"]
    data = json.loads(text)
    if not isinstance(data, dict):
        return ["results: expected an object"]
    problems = [f"results.{k}: not a documented key" for k in sorted(set(data) - TOP_KEYS)]
    gradable = data.get("gradable", True)
    if not isinstance(gradable, bool):
        problems.append("results.gradable: expected true or false")
    if gradable and not (_number(data.get("score")) and 0 <= data["score"] <= 1):
        problems.append(f"results.score: a gradable result needs a number in [0, 1], got {data.get('score')!r}")
    errors = data.get("format_errors", [])
    if not (isinstance(errors, str) or isinstance(errors, list) and all(isinstance(e, str) for e in errors)):
        problems.append("results.format_errors: expected a string or a list of strings")
    for key in ("message", "output"):
        if key in data and not isinstance(data[key], str):
            problems.append(f"results.{key}: expected a string")
    for i, test in enumerate(data.get("tests", [])):
        where = f"results.tests[{i}]"
        problems += [f"{where}.{k}: not a documented key" for k in sorted(set(test) - TEST_KEYS)]
        for key in ("points", "max_points"):
            if key in test and not _number(test[key]):
                problems.append(f"{where}.{key}: expected a number")
        for key in ("name", "description", "message", "output"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"{where}.{key}: expected a string")
    return problems
