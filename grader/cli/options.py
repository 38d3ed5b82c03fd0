"""Option values several commands parse the same way."""

from __future__ import annotations

from grader.errors import UsageError


def parse_devices(text: str | None) -> tuple[int, ...] | None:
    """``--devices 1,2,4`` -> (1, 2, 4); None when not given."""
    if not text:
        return None
    try:
        counts = tuple(sorted({int(p) for p in text.split(",") if p.strip()}))
    except ValueError:
        raise UsageError(f"--devices takes device counts like 1,2,4,8, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise UsageError(f"--devices takes positive device counts like 1,2,4,8, got {text!r}")
    return counts
