"""Running a JAX script in a fresh process on emulated CPU devices, for tests of the clean worker's side.

A device count is fixed per process, so a test that needs 4 devices runs its script in one of its own;
the script prints one JSON object, which is returned.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap

from conftest import ROOT


def run_json(script: str, timeout: float = 180, **fields) -> dict:
    """The JSON that ``script`` (formatted with ``root``, the project's folder, and ``fields``) prints."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script.format(root=str(ROOT), **fields))],
                          capture_output=True, text=True, timeout=timeout,
                          env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@functools.cache
def run_json_once(script: str) -> dict:
    """:func:`run_json` of ``script``, run once per test process: the tests of a file that read the same figures
    share one JAX process."""
    return run_json(script)
