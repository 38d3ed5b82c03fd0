"""Whether a program's ppermutes form a ring: each step passes on what the step before it brought.

A ring (an all-gather, a reduce-scatter, an all-reduce, a collective matmul built from lax.ppermute)
sends, at every step after the first, a block that arrived at the step before (passed on as it came, or
with the device's own part added): n - 1 steps of one hop each. The same number of ppermutes of the same
size can do something else: each device sending its *own* block 1, 2, ... n - 1 places along (direct
sends, k hops for the k-th on a real ring of links), which ``count`` and ``bytes_moved`` cannot tell
from a ring. The data flow of the compiled program can: :func:`starts` counts the ppermutes that send
nothing an earlier ppermute brought, and :func:`expect_ring` fails a program with more than a ring's. A
ring has one (none for one in a loop, which passes its carry on from step to step), a ring that runs
both ways at once one per direction, a ring of a block sent in parts one per part, all along one route;
direct sends have one per step, each along a route of its own.
A ring also sends every step along the same route: each device to the same neighbour (or, in a ring that
runs both ways at once, to the other one). :func:`routes` reads each ppermute's (source, target) pairs,
and :func:`expect_ring` fails a program whose ppermutes take a route that is neither the first one's nor
its reverse: recursive doubling (partners 1, 2, 4 apart), recursive halving (partners swapped in pairs),
hops that grow.
Pairs are devices as the compiled program numbers them, so a ring along one axis of a mesh is one route
like any other.

Read from the compiled HLO the clean worker returns, over the program's own ppermutes that the answer
needs (grader.suite.hlo.select): a ppermute reads what another one brought if one of its operands is
computed from that one's result, within its computation, through fusions and calls, and across a loop
when it reads a value of the loop's carry that its own result (or another ppermute's) is written back to.
A flow is not enough where it is worth nothing (``x + 0 * prev``): a ppermute the clean worker measured
to carry the same whatever the earlier ones brought is marked ``fresh`` (grader.sandbox.program_ring_steps)
and starts afresh, whatever its flow.
"""

from __future__ import annotations

import re

from grader.protocol import FRESH_MARK, LABEL_SEPARATOR
from grader.suite import hlo, replica_groups, work

PERMUTE = "collective-permute"
_INDEX = re.compile(r"\bindex=(\d+)")


def _inside(comps: dict, name: str, seen: frozenset = frozenset()) -> set[tuple[str, str]]:
    """Every ppermute in computation ``name`` and in the computations it calls."""
    found = set()
    for ins in comps.get(name, ()):
        if _is_permute(ins):
            found.add((name, ins.name))
        for _, callee in ins.calls:
            if callee not in seen and callee != name:
                found |= _inside(comps, callee, seen | {name})
    return found


def _is_permute(ins) -> bool:
    return hlo._base(ins.opcode) == PERMUTE and not ins.opcode.endswith("-done")


def _sources(comps: dict, name: str) -> tuple[dict[str, set], dict[str, set[int]]]:
    """For each instruction of computation ``name``: the ppermutes whose results its value is computed from
    (itself, for a ppermute), and the elements of the computation's parameter (a loop's carry: tuple
    indices) it is computed from."""
    permutes: dict[str, set] = {}
    carried: dict[str, set[int]] = {}
    parameters = {ins.name for ins in comps[name] if ins.opcode == "parameter"}
    for ins in comps[name]:
        ps, cs = set(), set()
        for op in ins.operands:
            ps |= permutes.get(op, set())
            cs |= carried.get(op, set())
            if op in parameters and ins.opcode == "get-tuple-element":
                index = _INDEX.search(ins.rest)
                cs.add(int(index.group(1)) if index else 0)
        for _, callee in ins.calls:
            ps |= _inside(comps, callee)  # what a fusion, call or loop computes may come from its ppermutes
        if _is_permute(ins):
            ps = ps | {(name, ins.name)}
        permutes[ins.name], carried[ins.name] = ps, cs
    return permutes, carried


def _fresh(ins) -> bool:
    """Whether the clean worker measured this ppermute to send nothing an earlier one brought."""
    return re.search(rf'op_name="[^"]*{LABEL_SEPARATOR}{FRESH_MARK}["/)]', ins.rest) is not None


def _root_elements(comps: dict, name: str) -> list[str]:
    """The instructions a computation's root tuple is made of (the root itself if it is no tuple)."""
    root = comps[name][-1] if comps[name] else None
    if root is None:
        return []
    return list(root.operands) if root.opcode == "tuple" else [root.name]


def starts(text: str) -> list[tuple[tuple[int, int], ...] | None]:
    """The (source, target) pairs of each of the program's own ppermutes the answer needs that sends
    nothing an earlier ppermute brought (None where the pairs cannot be read)."""
    comps, entry, _ = hlo._program(text)
    counted = {(c.computation, c.instruction) for c in hlo.select(text, PERMUTE, by_student=True)}
    found = []
    for name in comps:
        mine = [ins for ins in comps[name] if (name, ins.name) in counted]
        if not mine:
            continue
        permutes, carried = _sources(comps, name)
        # the carry elements a loop body writes a ppermute's result back to
        written_back = {i for i, element in enumerate(_root_elements(comps, name)) if permutes.get(element)}
        for ins in mine:
            reads = set().union(set(), *(permutes.get(op, set()) for op in ins.operands))
            loops_back = any(carried.get(op, set()) & written_back for op in ins.operands)
            if (not reads and not loops_back) or _fresh(ins):
                groups = replica_groups.parse(ins.rest)
                found.append(tuple(tuple(pair) for pair in groups) if groups else None)
    return found


def routes(text: str) -> list[frozenset[tuple[int, int]] | None]:
    """The (source, target) pairs of each of the program's own ppermutes the answer needs (None where the pairs
    cannot be read)."""
    return [frozenset(tuple(pair) for pair in c.groups) if c.groups else None
            for c in hlo.select(text, PERMUTE, by_student=True)]


def _other_route(taken: list) -> tuple[int, int | None, int | None] | None:
    """Where one of the routes ``taken`` is neither the first nor its reverse: a device, where the first route
    sends it and where the other one does (None: nowhere). None if there is no such route, or a route cannot
    be read (never a guess)."""
    if not taken or None in taken:
        return None
    first = dict(taken[0])
    back = frozenset((t, s) for s, t in taken[0])
    for route in taken[1:]:
        if route not in (taken[0], back):
            there = dict(route)
            device = next(d for d in sorted(first.keys() | there.keys()) if first.get(d) != there.get(d))
            return device, first.get(device), there.get(device)
    return None


def parts(text: str) -> int | None:
    """How many chains one ring runs in (:func:`_parts` of the program's starts and routes)."""
    return _parts(starts(text), routes(text))


def _parts(begun: list, taken: list) -> int | None:
    """How many chains one ring runs in: the device's own data sent in parts along one route, each part passed on as
    a chain of its own (round 55: the block's halves, one way), or along a route and its reverse (a ring both ways at
    once, also where loops carry each way's chain and no send starts one: its routes tell); one otherwise; None
    where several starts (``begun``, :func:`starts`) take other routes, or ones that cannot be read (not a ring).
    ``taken``: :func:`routes`."""
    if len(begun) > 1:
        if None in begun:
            return None
        ways = {frozenset(b) for b in begun}
        first = next(iter(ways))
        return len(begun) if len(ways) == 1 or ways == {first, frozenset((t, s) for s, t in first)} else None
    first = taken[0] if taken and None not in taken else None
    back = first and frozenset((t, s) for s, t in first)
    return 2 if first is not None and back != first and set(taken) == {first, back} else 1


def expect_ring(text: str, what: str, sent: str, where: str) -> None:
    """AssertionError unless the program's ppermutes form a ring: what starts from the devices' own data
    (:func:`starts`) takes one route or one and its reverse (:func:`parts`: a ring, in parts or both ways at once),
    and all take the first one's route or its reverse (:func:`routes`). The message says how many send the
    device's own ``sent`` (a block, a chunk) rather than what arrived, or where a device sends in two routes."""
    begun, taken = starts(text), routes(text)
    if _parts(begun, taken) is None:
        raise AssertionError(f"{what}'s ppermutes are not a ring {where}: {len(begun)} of them send the device's own "
                             f"{sent}, not the one the step before brought. A ring passes on the {sent} that arrived "
                             "(adding its own part where it sums), one hop per step")
    other = _other_route(taken)
    if other is not None:
        device, first, then = ("nowhere" if d is None else f"device {d}" for d in other)
        raise AssertionError(f"{what}'s ppermutes are not a ring {where}: {device} sends to {first} in one "
                             f"step and to {then} in another. A ring sends every step along the same ring, each "
                             "device to its neighbour ((i + 1) % n; a ring that runs both ways at once also the "
                             "other way), and passes on what arrived: a sum grows as it travels, it does not jump")


def expect_own_block(program, what: str, where: str, of: str = "x") -> None:
    """AssertionError where a ring's per-device function, handed its block of ``of`` by the suite's own pmap or
    shard_map, receives more of it than the reference's (work.expect_share_of_inputs): a function that reaches the
    whole input from outside its arguments (up the call stack, round 49) can run the ring for show beside it."""
    work.expect_share_of_inputs(
        program, what, f"the per-device function starts from the block of {of} it is handed and learns the other "
        "devices' blocks only from what arrives through lax.ppermute; it reads nothing from outside its arguments",
        where, f"use only the block of {of} your function is handed")


def expect_sent_as_is(text: str, what: str, dtype, where: str, sent: str = "block") -> None:
    """AssertionError where a ppermute the answer needs carries another dtype than the blocks': a ring passes the
    blocks (or their chunks) themselves, and blocks sent in a narrower type (int32 as int8, where the values
    happen to fit) meet a byte bound that the same ring in the blocks' own type does not (round 58)."""
    import numpy as np

    want = np.dtype(dtype).name
    for c in hlo.select(text, "collective-permute", by_student=True):
        got = hlo.dtypes(c.shape)
        if got and got != {want}:
            raise AssertionError(f"the ppermutes of {what} carry {' and '.join(sorted(got))} {where}, and its {sent}s "
                                 f"are {want}: a ring passes the {sent}s as they are, in their own dtype (a "
                                 "narrower type would lose what does not fit)")
