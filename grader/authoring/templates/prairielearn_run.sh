#!/usr/bin/env bash
# PrairieLearn's external grader runs this for every submission (info.json's entrypoint): grade the
# files in /grade/student against the full suites of @EXERCISE@ and write /grade/results/results.json.
# Written by `grade release`. PRAIRIELEARN_ROOT and PRAIRIELEARN_PYTHON let it run in a copy of that layout.
set -u
ROOT="${PRAIRIELEARN_ROOT:-/grade}"
PYTHON="${PRAIRIELEARN_PYTHON:-python3}"
cd "$(dirname "$0")"
export PYTHONPATH="$PWD"
exec "$PYTHON" -m grader autograde @EXERCISE@ --platform prairielearn --root "$ROOT"
