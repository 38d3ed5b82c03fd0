"""What an archive built to stall the batch's intake costs it: a .tar.gz of a few MiB whose left-out
``__MACOSX/`` entry pads out to many GiB, then one real file (issue 32: 11 MiB holding 12 GiB stalled
intake 47-87 s). The archive is made fast as concatenated gzip members (gzip reads them as one
stream): one member holds 1 MiB of zeros and is repeated. Prints the archive's size, what it would
inflate to, and how long grader.classroom.unpack takes to refuse it and why.

``python bench/intake_bomb.py [--gib 12]``
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grader.classroom import unpack  # noqa: E402 - after the path that finds it

MIB = 1 << 20


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT)


def build(path: str, gib: int) -> int:
    """Write the padded archive at ``path``; returns how many bytes it inflates to."""
    padding = gib << 30
    block = gzip.compress(bytes(MIB), compresslevel=9)
    tail = _header("exercise7/dot.py", 2) + b"x\n".ljust(512, b"\0") + bytes(1024)
    with open(path, "wb") as f:
        f.write(gzip.compress(_header("__MACOSX/padding", padding)))
        for _ in range(padding // MIB):
            f.write(block)
        f.write(gzip.compress(tail))
    return 512 + padding + len(tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=int, default=12, help="GiB of padding")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        archive = os.path.join(scratch, "mallory.tar.gz")
        inflated = build(archive, args.gib)
        size = os.path.getsize(archive)
        started = time.monotonic()
        try:
            unpack.unpack(archive, os.path.join(scratch, "out"))
            outcome = "unpacked (no bound held)"
        except unpack.Refused as exc:
            outcome = f"refused: {exc}"
        took = time.monotonic() - started
    print(f"archive {size / MIB:.1f} MiB, inflates to {inflated / (1 << 30):.1f} GiB")
    print(f"intake took {took:.2f} s: {outcome}")


if __name__ == "__main__":
    main()
