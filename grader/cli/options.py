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


def parse_tasks(values) -> tuple[str, ...]:
    """``--task dot,ring --task mesh`` -> ("dot", "ring", "mesh"); () when not given (every task)."""
    return tuple(t.strip() for value in values for t in value.split(",") if t.strip())


def find_exercise(course, name: str, command_for):
    """``course``'s exercise ``name``; a task id given as one gets the command that grades it,
    ``command_for(exercise, task)``, as a suggestion."""
    if name not in course.exercises:
        owners = [e.name for e in course.exercises.values() if name in e.task_ids]
        if owners:
            raise UsageError(f"no exercise '{name}', but {owners[0]} has a task {name}: "
                             f"did you mean `{command_for(owners[0], name)}`?")
    return course.exercise(name)
