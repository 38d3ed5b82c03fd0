"""Option values several commands parse the same way."""

from __future__ import annotations

from grader.errors import UsageError

COURSE_KEY = "grader.course"  # click's ctx.meta: the course require_exercise read, which the exercise command reuses


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


def _course_option(args: list[str]) -> str | None:
    """The value of ``--course`` among a command's arguments, read before click parses them."""
    for i, arg in enumerate(args):
        if arg == "--course" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--course="):
            return arg.partition("=")[2]
    return None


def require_exercise(name: str, args: list[str], commands):
    """The course (found as ``args`` would find it) if ``name`` is one of its exercises, else UsageError: a
    near miss of a command (``grade batc``) is named, and nothing, not even --help, runs for an
    exercise that does not exist."""
    import difflib

    from grader.course import find_course

    close = difflib.get_close_matches(name, list(commands), n=1, cutoff=0.75)
    guess = f"did you mean `grade {close[0]}`?" if close else ""
    try:
        course = find_course(explicit=_course_option(args))
    except UsageError:
        if guess:
            raise UsageError(f"no command '{name}': {guess}") from None
        raise
    if guess and name not in course.exercises:
        raise UsageError(f"no command or exercise '{name}': {guess} (exercises: {', '.join(course.exercises)})")
    find_exercise(course, name, lambda owner, task: f"grade {owner} --task {task}")  # a task's id is named as such
    return course
