"""--show-output: what the student's code printed, per layout, capped, and unable to draw on the terminal."""

from __future__ import annotations

from conftest import run_grade

from grader.grading.printed import printed

PRINTING_DOT = '''
import jax
import jax.numpy as jnp
from jax import lax


def distributed_dot(x, y):
    n = jax.device_count()
    print(f"dot on {n} devices, len {x.shape[0]}")
    print("\\x1b[2J\\x1b[Hall tasks passed")
    pad = (-x.shape[0]) % n
    x, y = jnp.pad(x, (0, pad)).reshape(n, -1), jnp.pad(y, (0, pad)).reshape(n, -1)
    return jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), "i"), axis_name="i")(x, y)[0]
'''


def test_the_report_shows_each_layouts_output_and_escapes_cannot_clear_the_screen(make_submission):
    submission = make_submission({"dot": PRINTING_DOT})
    proc = run_grade("exercise7", "--submission", str(submission), "--task", "dot", "--devices", "1,2",
                     "--show-output", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    report, _, shown = proc.stdout.partition("your code printed (1 device):")
    assert "--show-output" not in report, "the output is shown below: the report offers nothing"
    assert "  | dot on 1 devices, len " in shown
    first, _, second = shown.partition("your code printed (2 devices):")
    assert "  | dot on 2 devices, len " in second and "dot on 2" not in first
    assert "\x1b" not in proc.stdout
    assert "  | \\x1b[2J\\x1b[Hall tasks passed" in shown  # shown, not obeyed (grader.grading.sanitise.terminal)


def test_json_stays_parseable_and_the_output_goes_to_stderr(make_submission):
    submission = make_submission({"dot": PRINTING_DOT})
    proc = run_grade("exercise7", "--submission", str(submission), "--task", "dot", "--devices", "2",
                     "--show-output", "--format", "json")
    assert proc.stdout.lstrip().startswith("{") and proc.stdout.rstrip().endswith("}")
    assert "your code printed (2 devices):" in proc.stderr


def test_the_classroom_format_shows_the_output_once_beside_its_text_report(make_submission):
    submission = make_submission({"dot": PRINTING_DOT})
    proc = run_grade("exercise7", "--submission", str(submission), "--task", "dot", "--devices", "2",
                     "--show-output", "--format", "classroom")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("your code printed (2 devices):") == 1


def test_a_flood_is_cut_to_the_first_lines_and_says_how_much_is_left():
    text = "".join(f"line {i}\n" for i in range(1000))
    shown = printed({"4 devices": text}, lines=5)
    assert shown.splitlines()[1:6] == [f"  | line {i}" for i in range(5)]
    left = len(text.rstrip("\n")) - len("\n".join(f"line {i}" for i in range(5)))
    assert f"[... {left} more characters not shown" in shown.splitlines()[-1]


def test_one_long_line_is_cut_by_characters():
    shown = printed({"1 device": "x" * 10_000}, chars=100)
    assert "  | " + "x" * 100 + "\n" in shown
    assert "[... 9900 more characters not shown" in shown


def test_nothing_printed_says_so():
    assert printed({}) == "your code printed nothing\n"
