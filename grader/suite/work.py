"""Whether each device did its share of the work: the student's program against the reference's.

A task about splitting work earns its point only if one device of the student's compiled program
performs about as much arithmetic as one device of the course's reference program, compiled for the
same inputs, layout and device count (grader.grading.reference_figures), counted the same way
(grader.suite.hlo.operations: every arithmetic instruction, a loop's body once per iteration). A
program that computes the whole answer on every device, at once or a slice at a time, with or
without collectives for show, performs about n times the reference's work per device and gets no
point; a correct program written another way (padded one block further, a fori_loop instead of a
Python loop, a sum of products instead of jnp.dot) stays within :data:`SLACK` of it. The same bound
holds for how much of each input one device's pmap or shard_map receives: a program handing every
device whole inputs and slicing its part inside does the reference's arithmetic but splits no input.
The statements say these bounds; the message gives both figures, so a student can check them.
"""

from __future__ import annotations

from grader.errors import GraderError
from grader.layout import plural
from grader.protocol import ARRIVED, PLACED
from grader.suite import hlo, structure

SLACK = 1.5  # a device may perform up to half again the arithmetic of one device of the reference
WHOLE = 0.8  # past this share of n times the reference's, a device did about the whole answer's work
OUTSIDE = 0.25  # of the reference's work, what a device may perform beyond it outside its per-device code


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def _input(name: str) -> str:
    """An input as messages name it: by its name in the signature, else by its place ("input 2")."""
    place = name.removeprefix("input ")
    if place.isdigit():
        return f"the {_ORDINALS[int(place) - 1]} input" if int(place) <= len(_ORDINALS) else name
    return name


def _percent(share: float) -> str:
    """A share as a percentage, to a tenth where it is not whole (12.5%, so that 4.0 times it reads right)."""
    return f"{share:.1%}".replace(".0%", "%")


def _portion(share: float, of: str) -> str:
    if share > 1.005:
        return f"all of {of}, padded ({_percent(share)})"
    return f"all of {of}" if share >= 0.995 else f"{_percent(share)} of {of}"


def expect_share_of_inputs(program, what: str, share: str, where: str, fix: str = "",
                           given: float | None = None) -> None:
    """AssertionError unless, for each input, one device's per-device computation (a pmap or shard_map)
    receives at most SLACK times the share of it one device of the reference's receives
    (grader.sandbox.program_held): the right arithmetic on a block sliced out of an input every device
    was handed whole does not split the input. A suite whose work is too small to compare (a ring's
    additions) asks this alone: a per-device function that reaches the whole input from outside its
    arguments (off the call stack, where the test's own pmap was handed it) hands it to every device; its
    ``fix`` replaces "hand each device only its block of x", which the test's pmap already does.
    ``given``: the share of each input the statement gives one device, in place of the reference's measured
    one, where that is an average its padding spreads thin (5 elements on 4 devices: the reference's padded blocks
    of 2 hold 1.25 of x's elements on average, a slice of 2 written into zeros holds 2)."""
    reference = (program.reference_held() if given is None else
                 [(name, given, how) for name, _, how in program.held or ()])
    if program.held is None:
        raise AssertionError(f"in {what} the grader cannot follow the inputs into the per-device computation {where}: "
                             "its functions call each other thousands of levels deep, which no program jax.jit makes "
                             "from ordinary code. So it counts as receiving every input whole; call jax.pmap or "
                             f"jax.shard_map on your inputs with fewer nested calls. {share}")
    for (name, got, how), (_, expected, _) in zip(program.held, reference):
        if got is not None and expected is not None and got > SLACK * expected:
            of = _input(name)
            held = {PLACED: f"each device holds {_portion(got, of)} {where} where your program places it "
                            "(jax.device_put)",
                    ARRIVED: f"each device holds {_portion(got, of)} {where} as the task hands it over: your "
                             "program computes with it without splitting it first (jax.device_put to a split "
                             "layout, or a pmap or shard_map handed only its block)",
                    }.get(how, f"each device's per-device computation (its pmap or shard_map) receives "
                               f"{_portion(got, of)} {where}")
            whose = "its slice" if given is not None else "the share one device of the reference program receives"
            raise AssertionError(f"in {what} {held}, {got / expected:.1f} times {whose} ({_percent(expected)}), and "
                                 f"the bound is {SLACK:g} times that: "
                                 f"{fix or 'hand each device only its block of ' + of}; {share}")


def _whole(program, done: int, reference: int, devices: int) -> bool:
    """Whether one device's ``done`` is about the whole computation's work, done on every device: at least WHOLE of
    n times the reference's; on 2 devices also a per-device computation handed more than its share of an input,
    since there a costlier algorithm on its own share reaches 1.6 times the reference's (round 47: statistics X^T X
    summed with a psum, told as the whole work done on every device)."""
    if devices < 2 or done < WHOLE * devices * reference:
        return False
    if devices > 2:
        return True
    theirs = program.reference_held()
    return program.held is None or any(got is not None and expected is not None and got > SLACK * expected
                                       for (_, got, _), (_, expected, _) in zip(program.held, theirs))


def whole_on_every_device(program, what: str, devices: int) -> str | None:
    """What to say first where one device of ``program`` performs about the whole computation (at least WHOLE
    times n times the arithmetic of one device of the reference): not a detail of the algorithm but a design
    that splits no work (grader.suite.bypass tells it before any symptom); else None. Where the program runs a
    kind of collective the reference's does not (the student's own all_gather of the inputs), that
    difference comes first, from the suite: it says where the design went another way."""
    if devices < 2:
        return None
    if {s.op for s in structure.steps(program.hlo)} - {s.op for s in program.reference_collectives()}:
        return None
    reference, done = program.reference_operations(), hlo.operations(program.hlo)
    if not reference or done is None or not _whole(program, done, reference, devices):
        return None
    return (f"in {what} one device performs {hlo.in_words(done)} on {plural(devices, 'device')}, {done / reference:.1f} "
            f"times the reference's (about the whole computation's work, done on every device); one device of the "
            f"reference program performs {hlo.in_words(reference)}. The task splits the work over the devices, each "
            "computing its share: that is another design, not a detail to fix")


def outside_per_device(text: str, outside: int | None, inside: int | None) -> int | None:
    """What one device performs of the arithmetic a program writes outside its per-device code, from the clean
    worker's counts on the program as written (grader.sandbox.program_outside): at least ``outside`` (that work
    spread evenly over every device), and at least what the compiled program ``text`` runs beyond what is
    written ``inside`` (where XLA splits the work over one mesh axis only, each device of the other runs it):
    the larger. None where ``outside`` is unknown (a loop of unknown length). The collectives' own combining
    is neither (round 63: a psum of the rows divided by n, where the reference's pmean divides after it, was
    booked as arithmetic outside the pmap)."""
    done = hlo.operations(text, combining=False)
    if outside is None or done is None or inside is None:
        return outside
    return max(outside, done - inside)


def left_outside(program, what: str, devices: int, tool: str) -> str | None:
    """What to say first where the statement asks for per-device code (``tool``: "jax.pmap") and ``program``
    writes more arithmetic outside its per-device computations than the reference's does, by more than OUTSIDE
    of one device's whole work in the reference: XLA's partitioner then splits the arithmetic written around
    the pmap or shard_map by itself, and the per-device code holds little more than its collectives (a psum of
    partial products computed outside it). Measured on the program as written (:func:`outside_per_device`).
    Else None; a loop of unknown length outside counts as too much."""
    if devices < 2:
        return None
    reference, theirs, mine = program.reference_operations(), program.reference_outside(), program.outside
    if not reference or theirs is None or (mine is not None and mine <= theirs + OUTSIDE * reference):
        return None
    return (f"{what}: on {plural(devices, 'device')}, the arithmetic your program writes outside its {tool} comes to "
            f"{hlo.in_words(mine)} on each device (XLA's partitioner splits it over the devices by itself: counted as an "
            "even share of it, or as what the compiled program runs beyond your per-device code, whichever is more); "
            f"the reference's program leaves {theirs} per device there, and one device of it performs {reference} in "
            "all. The bound "
            f"is the reference's plus {OUTSIDE:.0%} of that whole: the per-device code you write, run on every device "
            f"by {tool}, does the task's work, not only its collectives. That is another design, not a detail to fix")


def expect_no_whole_input_moved(program, what: str, devices: int, whole_bytes: int, of: str, share: str,
                                where: str = "") -> None:
    """AssertionError where one device puts into its collectives as many bytes as the other devices' parts of
    ``of`` together ((n - 1) / n of ``whole_bytes``) and more than SLACK times what one device of the reference puts
    into its own: each device then receives the equivalent of the whole input, whatever the collective is
    called (an all-reduce of a zero-padded copy of the array gathers it as surely as an all-gather, a ring of
    ppermutes as surely as both), which a task whose statement keeps the data split avoids. On one device a
    device's part is the whole input."""
    if devices < 2:
        return
    moved = structure.total(structure.steps(program.hlo), True)
    reference = structure.total(program.reference_collectives(), True)
    others = whole_bytes * (devices - 1) // devices  # what a device lacks of it: a ring of ppermutes brings that
    if moved is None or reference is None or moved < others or moved <= SLACK * reference:
        return
    where = where or f"on {plural(devices, 'device')}"
    raise AssertionError(f"in {what} each device puts {plural(moved, 'byte')} into its collectives {where}, as many as "
                         f"the other devices' parts of {of} together ({plural(others, 'byte')} of the whole "
                         f"{plural(whole_bytes, 'byte')}), where one "
                         f"device of the reference program puts {plural(reference, 'byte')}: so every device receives "
                         f"the equivalent of the whole input, which the task avoids, whatever the collective (an "
                         f"all-reduce of a zero-padded copy of it, or a ring of ppermutes, carries it as surely as an "
                         f"all-gather). {share}")


def expect_collectives_of_reference(program, what: str, share: str, devices: int, where: str = "",
                                    alike: dict[str, str] | None = None) -> None:
    """AssertionError where the collectives ``program``'s answer needs (its own and those XLA's partitioner added)
    include a kind the reference's program does not run, or move in one kind more than SLACK times the bytes per
    device the reference's do (grader.suite.structure.beyond; ``alike``: kinds the task accepts for another). A
    needed psum of the right size proves little where something else did the combining (a reduce-scatter of n
    copies, a ring of ppermutes, an all-gather XLA added, the psum only handing on one device's total): what
    combines the devices' values is a collective, and this measures every one. On one device nothing moves."""
    if devices < 2:
        return
    said = structure.beyond(structure.steps(program.hlo), program.reference_collectives(), SLACK, program.mesh, alike)
    if said:
        raise AssertionError(f"in {what} {where or 'on ' + plural(devices, 'device')}, {said}: {share}")


def expect_share_of_work(program, what: str, share: str, devices: int, where: str = "") -> None:
    """AssertionError unless one device of ``program`` performs at most SLACK times the arithmetic one
    device of the reference performs, and its per-device computation receives at most SLACK times the
    reference's share of each input; ``share`` says, in the task's words, what one device's part of
    the work is. ``where``: the case, for the message (default: "on 4 devices"). On one device a device's
    share is the whole work, so nothing is compared: there XLA may fold the reference to no arithmetic at
    all (a count of the devices divided by), and one division of a correct program would be too many."""
    if devices == 1:
        return
    where = where or f"on {plural(devices, 'device')}"
    reference = program.reference_operations()
    if reference is None:
        raise GraderError(f"the reference's program for {what} runs a loop of unknown length; its work cannot be "
                          "compared with the student's")
    done = hlo.operations(program.hlo)
    bound = SLACK * reference
    if done is not None and done <= bound:
        expect_share_of_inputs(program, what, share, where)
        return
    limit = (f"one device of the reference program performs {hlo.in_words(reference)}, and the bound is "
             f"{SLACK:g} times that, {int(bound)}")
    if done is None or not reference:
        raise AssertionError(f"in {what} one device performs {hlo.in_words(done)} {where}; {limit}: {share}")
    ratio = done / reference
    whole = " (about the whole computation's work, done on every device)" if _whole(program, done, reference,
                                                                                     devices) else ""
    raise AssertionError(f"in {what} one device performs {hlo.in_words(done)} {where}, {ratio:.1f} times "
                         f"the reference's{whole}; {limit}: {share}")


def expect_products_once(program, what: str, smallest: int, share: str, where: str) -> None:
    """AssertionError where one device of ``program`` runs products (grader.suite.hlo.products) that come to at
    least half of ``smallest`` more than one device of the reference's: where a structural point rests on which
    products run (each step of a ring overlapped by a product of at least ``smallest``, grader.suite.hlo.overlapped),
    a copy of a product the task needs once (scaled apart so that XLA keeps it) would count for a step that
    multiplies nothing new. ``share``: what one device multiplies, in the task's words."""
    reference, done = program.reference_products(), hlo.products(program.hlo)
    if reference is None or done is None or done - reference < smallest / 2:
        return
    raise AssertionError(f"in {what} the products one device runs {where} come to {done // 2} multiply-adds, "
                         f"{(done - reference) // 2} more than one device of the reference program runs "
                         f"({reference // 2}): some product is computed more than the task needs, and a product "
                         f"computed again multiplies nothing new while a block travels. {share}")

