"""What the student's code printed, as ``grade EXERCISE --show-output`` shows it under the report.

Print debugging is how students find out what their per-device function sees, so the text must be
easy to reach, but a flood must not bury the report: each layout shows at most SHOW_LINES lines and
SHOW_CHARS characters (the JSON report keeps up to 64 KiB per worker). It is written as terminal
text (grader.grading.sanitise.terminal): printed escape sequences must not clear the terminal or draw a fake report.
"""

from __future__ import annotations

from grader.grading.sanitise import terminal

SHOW_LINES = 40
SHOW_CHARS = 4000


def printed(output: dict[str, str], lines: int = SHOW_LINES, chars: int = SHOW_CHARS) -> str:
    """``output`` (layout label -> text, as RunResult.student_output holds it) as an indented block."""
    if not output:
        return "your code printed nothing\n"
    out = []
    for where, text in output.items():
        text = text.replace("\r\n", "\n").strip("\n")
        shown = text[:chars].split("\n")[:lines]
        rest = len(text) - len("\n".join(shown))
        out.append(f"your code printed ({where}):")
        out += ["  | " + terminal(line) for line in shown]
        if rest > 0:
            out.append(f"  [... {rest} more characters not shown; --format json holds up to 64 KiB]")
    return "\n".join(out) + "\n"
