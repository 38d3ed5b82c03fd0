"""Student text as each kind of output may hold it: one function per output kind, used by every writer.

Whatever a worker sends (a failure's message and detail, what the code printed) and whatever a
submission names (student ids from folder names, module names) is text a hostile student chose.
It is cut to size where it enters the grader (grader.errors.REPLY_TEXT_CHARS, the worker's output
cap); here it is made harmless for where it goes:

- :func:`terminal` (text reports, progress, summaries, ``grade similar``, stderr): control
  characters are shown as escapes (``\\x1b``), so no escape sequence reaches a terminal (no
  cleared screen, no window title, no forged "dot 15 / 15 passed" redrawn over a real line), and
  neither do bidirectional overrides that would reorder a line as it is shown;
- :func:`line` (a name or an error in one line of a progress log, a summary, a warning): the same,
  and newlines and tabs shown too, so a file name cannot end the line it is in and forge the next
  ("c_honest: 15 / 15" for a student who scored 0);
- :func:`xml` (JUnit): the same, which also removes every character XML 1.0 forbids (CI refuses a
  whole file for one U+001B);
- :func:`html` (the class report): the same, then HTML-escaped;
- :func:`spreadsheet` (CSV, Canvas, Moodle): the same, and a cell that starts like a formula gets a
  leading ``'``;
- JSON (reports, the gradebook, Gradescope's results.json) needs nothing here: it is written with
  ``json.dumps``, which escapes every control character and every non-ASCII one.

Outside :func:`line`, newlines and tabs are kept (messages and pictures span lines); a carriage
return is always shown, since it would let a line overwrite the one before it.
"""

from __future__ import annotations

import html as _html
import re

_LINE_BREAKS = re.compile("[\n\t\u2028\u2029]")
_SHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufffe\uffff"
                    "\ud800-\udfff]")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape (``\\x1b``)."""
    return _SHOWN.sub(_escape, str(text))


def line(text: str) -> str:
    """``text`` as part of one line: :func:`terminal`, with newlines, tabs and Unicode line and paragraph
    separators shown as escapes too (``\\x0a``)."""
    return _LINE_BREAKS.sub(_escape, terminal(text))


def xml(text: str) -> str:
    """``text`` as an XML 1.0 attribute or text node may hold it (ElementTree escapes ``&<>"`` itself)."""
    return terminal(text)


def html(text: str) -> str:
    """``text`` for an HTML page: controls shown as escapes, then ``&<>"'`` escaped."""
    return _html.escape(terminal(text), quote=True)


def spreadsheet(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows and never runs: controls shown as escapes, and a cell that
    starts like a formula (a student id or name chosen as ``=HYPERLINK(...)``, an error quoting one) gets a
    leading ``'``, which Excel, LibreOffice and Google Sheets read as "this is text"."""
    text = str(text)
    return "'" + terminal(text) if text.startswith(FORMULA_STARTS) else terminal(text)
