"""Feedback you can see: the communication summary and the device-layout picture, in text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_grade, task

from grader.suite import feedback

HLO = Path(__file__).parent / "data" / "hlo"

# The dot product with the psum before the local dot: the whole slices travel (the check fails).
GATHERING_DOT = '''
import jax
import jax.numpy as jnp
from jax import lax


def distributed_dot(x, y):
    n = jax.device_count()
    pad = (-x.shape[0]) % n
    x, y = jnp.pad(x, (0, pad)).reshape(n, -1), jnp.pad(y, (0, pad)).reshape(n, -1)
    return jax.pmap(lambda a, b: jnp.sum(lax.psum(a * b, "i")), axis_name="i")(x, y)[0]
'''
# shard_batch that deals rows out like cards: row i to device i % n.
DEALING_SHARD = '''
import jax.numpy as jnp


def shard_batch(x, n_devices):
    x = jnp.asarray(x)
    if x.shape[0] % n_devices:
        raise ValueError(f"{x.shape[0]} rows do not split over {n_devices} devices; use pad_and_shard")
    return jnp.swapaxes(x.reshape(x.shape[0] // n_devices, n_devices, *x.shape[1:]), 0, 1)


def pad_and_shard(x, n_devices):
    raise NotImplementedError


def unshard(x):
    raise NotImplementedError
'''


def test_communication_names_each_collective_and_who_asked_for_it():
    with feedback.recording() as notes:
        note = feedback.communication((HLO / "dot_with_squeeze.txt").read_text(), needed="1 all-reduce of 4 bytes",
                                      by_student=False)
    assert notes == [note]
    assert note["ran"] == ["1 all-reduce (psum) of 4 bytes per device",
                           "1 all-reduce (added by XLA for squeeze) of 4 bytes per device"]
    assert note["text"] == ["ran:    1 all-reduce (psum) of 4 bytes per device",
                            "        1 all-reduce (added by XLA for squeeze) of 4 bytes per device",
                            "        8 bytes per device in all", "needed: 1 all-reduce of 4 bytes"]
    assert feedback.communication((HLO / "dot_with_squeeze.txt").read_text(), "x")["ran"] == [
        "1 all-reduce (psum) of 4 bytes per device"]


def test_communication_that_is_what_the_task_needs_is_said_once():
    text = (HLO / "dot_with_squeeze.txt").read_text()
    note = feedback.communication(text, needed="1 all-reduce (psum) of 4 bytes per device")
    assert note["text"] == ["ran:    1 all-reduce (psum) of 4 bytes per device, as needed"]
    assert note["needed"] == "1 all-reduce (psum) of 4 bytes per device" and len(note["ran"]) == 1


def test_a_loop_of_unknown_length_is_said_and_not_counted():
    note = feedback.communication((HLO / "while_unknown.txt").read_text(), needed="n - 1 ppermutes")
    assert note["bytes_per_device"] is None
    assert all("in a loop of unknown length" in phrase for phrase in note["ran"]) and note["ran"]


def test_a_collective_for_show_is_named_as_carrying_nothing():
    note = feedback.communication((HLO / "psum_of_a_constant.txt").read_text(), needed="1 all-reduce of 4 bytes")
    assert note["ran"] == ["1 all-reduce (psum) of 4 bytes per device, which carries nothing the result needs "
                           "(not counted)"]
    assert note["bytes_per_device"] == 0


def test_attaching_outside_a_grading_run_records_nothing():
    with feedback.recording() as notes:
        pass
    feedback.layout("x", [["d0: row 0"]], [["d0: row 0"]])
    assert notes == []


def test_rows_held_reads_blocks_runs_and_strangers():
    x = np.arange(16.0)
    assert feedback.rows_held(x, x[4:8]) == "rows 4-7"
    assert feedback.rows_held(x, x[0::4]) == "rows 0, 4, 8, 12"
    assert feedback.rows_held(x, x[0::2]) == "rows 0, 2, 4, ..."
    assert feedback.rows_held(x, np.array([1.0, 99.0])) == "rows 1 + 1 other"
    assert feedback.rows_held(x, x[3:4]) == "row 3"


def test_the_layout_grid_marks_only_the_cells_that_differ():
    note = feedback.layout("shard_batch(x, 2)", [["d0: rows 0-1"], ["d1: rows 2-3"]],
                           [["d0: rows 0-1"], ["d1: rows 3, 2"]])
    assert note["text"] == ["device layout of shard_batch(x, 2):",
                            "  expected             yours  (* differs)",
                            "  | d0: rows 0-1   |   | d0: rows 0-1   |",
                            "  | d1: rows 2-3   |   | *d1: rows 3, 2 |"]


def test_a_layout_that_is_already_right_draws_no_picture_but_keeps_both_grids():
    grid = [["d0: x[0:3, 0:7]"]]
    note = feedback.layout("shard_matrix(x, mesh) on a 1 x 1 mesh", grid, [list(row) for row in grid])
    assert note["text"] == [] and note["expected"] == note["got"] == grid


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(text, json) reports of a wrong submission and of the solutions, dot and shard at 2 devices."""
    from conftest import ROOT

    folder = tmp_path_factory.mktemp("wrong") / "exercise7"
    folder.mkdir()
    for name, source in (("dot", GATHERING_DOT), ("shard", DEALING_SHARD)):
        (folder / f"{name}.py").write_text(source)
    out = {}
    for label, submission in (("wrong", folder.parent), ("right", ROOT / "solutions")):
        args = ["exercise7", "--submission", str(submission), "--task", "dot", "--task", "shard", "--devices", "2",
                "--seed", "5"]
        text, data = run_grade(*args), run_grade(*args, "--format", "json")
        assert text.returncode == 0 and data.returncode == 0, text.stderr + data.stderr
        out[label] = (text.stdout, json.loads(data.stdout))
    return out


def test_a_failing_task_shows_what_its_program_communicated(graded):
    text, report = graded["wrong"]
    assert "communication of distributed_dot (2 devices):\n" in text  # which function: a task may have several
    assert "ran:        1 all-reduce (psum) of 812 bytes per device" in text  # len 405 padded to 406: 203 products each
    assert "reference:  1 all-reduce (psum) of 4 bytes per device" in text  # the reference's program, measured
    assert "difference: your all-reduces move 816 bytes per device; the reference's move 8" in text
    shown = task(report, "dot")["feedback"]
    assert shown["test"] == "test_dot_uses_one_all_reduce" and shown["outcome"] == "failed"
    assert shown["items"][0]["kind"] == "communication"
    assert "1 all-reduce (psum) of 812 bytes per device" in shown["items"][0]["ran"]


def test_a_failing_sharding_task_shows_where_each_row_went(graded):
    text, report = graded["wrong"]
    assert "device layout of shard_batch(x, 2) with x of shape (16,):" in text
    assert "| d0: rows 0-7           |   | *d0: rows 0, 2, 4, ... |" in text
    case = next(c for c in task(report, "shard")["cases"] if c["test"] == "test_shard_batch")
    assert case["feedback"][0]["expected"] == [["d0: rows 0-7"], ["d1: rows 8-15"]]
    assert case["feedback"][0]["got"] == [["d0: rows 0, 2, 4, ..."], ["d1: rows 1, 3, 5, ..."]]


def test_a_right_submission_keeps_the_pictures_in_json_only(graded):
    text, report = graded["right"]
    assert "communication (" not in text and "device layout of" not in text
    dot = task(report, "dot")["feedback"]
    assert dot["outcome"] == "passed"
    assert dot["items"][0]["ran"] == ["1 all-reduce (psum) of 4 bytes per device",
                                      "1 all-reduce (added by XLA for squeeze) of 4 bytes per device"]
    shard = next(c for c in task(report, "shard")["cases"] if c["test"] == "test_shard_batch")
    assert shard["feedback"][0]["got"] == shard["feedback"][0]["expected"]


def test_gradescope_shows_a_failed_tests_pictures_under_its_reason():
    from grader.grading import gradescope

    note = {"kind": "communication", "text": ["ran:    2 all-reduces (psum) of 4 bytes per device", "needed: 1"]}
    cases = [{"outcome": "failed", "message": "two psums", "where": None, "devices": 2, "feedback": [note]},
             {"outcome": "passed", "message": "", "where": None, "devices": 1, "feedback": []}]
    output = gradescope._test_output({"hint": ""}, cases)
    assert output.splitlines()[1:] == ["- [2 devices] two psums", *note["text"]]
