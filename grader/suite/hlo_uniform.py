"""Which values of a compiled program are the same on every device: a collective of those moves nothing.

Every device runs the same compiled program (SPMD), and some of its values come out the same on all of
them: constants, an input handed over whole (a parameter laid out ``replicated``), what an all-reduce or an
all-gather among all the devices returns, and whatever is computed from such values alone. A value that
reads the device's id (partition-id, replica-id), an input handed over in blocks, or what a permute, an
all-to-all or a reduce-scatter returns, may differ from device to device.

A collective whose operands are the same on every device moves nothing a device does not hold already:
each device could compute its result alone (a psum of such a value is n times it; a ppermute of it, the
value itself, or zeros where nothing is sent). It communicates nothing, whatever the answer does with it,
and no structural rule counts it (grader.suite.hlo.Collective.idle): XLA reading the answer out of the
last device's copy of a psum's result (``out[-1]``: a collective-permute of what every device holds), or a
pmean of an answer every device computed whole.

The reading errs one way only: a value read as the same everywhere is so on every input; one read as
differing may not (a value that reads the device's id and discards it).
"""

from __future__ import annotations

from grader.suite import replica_groups
from grader.suite.hlo_flow import Forward

UNKNOWN = None  # not reached yet (a loop's carry before its body is read): joins as nothing
# Instructions whose result may differ between devices whatever their operands (the device's own id, data from
# outside the program, a custom call nobody reads).
_DIFFERS = frozenset({"partition-id", "replica-id", "rng", "rng-bit-generator", "rng-get-and-update-state",
                      "custom-call", "infeed", "recv", "recv-done", "send", "send-done"})
# Collectives whose result is the same on every device of a group (the reduction of, or all of, the group's
# operands): the same on every device where one group holds them all, or where every operand already is.
_SHARED_RESULT = frozenset({"all-reduce", "all-gather", "all-reduce-start", "all-gather-start",
                            "all-reduce-done", "all-gather-done"})
# Collectives whose result differs between devices (each gets another block, or another device's value).
_OWN_RESULT = frozenset({"collective-permute", "collective-permute-start", "collective-permute-done", "all-to-all",
                         "reduce-scatter", "collective-broadcast"})


def same(value) -> bool:
    """Whether every part of ``value`` (a flag, or a tuple of them) is the same on every device."""
    if isinstance(value, tuple):
        return all(same(v) for v in value)
    return value is True


def _join(a, b):
    if a is UNKNOWN:
        return b
    if b is UNKNOWN:
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(_join(x, y) for x, y in zip(a, b))
    return same(a) and same(b)


class Uniform(Forward):
    """Which values of one program are the same on every device (:func:`same` of :meth:`value`), read forward
    (a value only ever goes from the same everywhere to differing)."""

    bottom = UNKNOWN

    @staticmethod
    def _join(a, b):
        return _join(a, b)

    def moves_nothing(self, comp: str, ins) -> bool:
        """Whether the collective ``ins`` of computation ``comp``, run among several devices, moves only values
        every device holds (on one device every value is the same everywhere, and a suite that grades there asks
        whether the program would communicate: zeros tell, grader.sandbox.program_ablation)."""
        groups = replica_groups.parse(ins.rest)
        operands = [op for op in ins.operands if op in self.by_name.get(comp, ())]
        return (bool(groups) and any(len(set(g)) > 1 for g in groups) and bool(operands)
                and all(same(self.value(comp, op)) for op in operands))

    def _transfer(self, comp: str, ins) -> tuple[object, bool]:
        """(what ``ins`` gives, whether a computation it calls got new parameters)."""
        op = ins.opcode
        ops = [self.value(comp, o) if o in self.by_name[comp] else True for o in ins.operands]
        called = self._calls(ins)
        sent = False
        if op == "parameter":
            return ("sharding={replicated}" in ins.rest if comp == self.entry else self._parameter(comp, ins)), sent
        if op in ("constant", "iota"):
            return True, sent
        if op in _DIFFERS:
            return False, sent
        if op in ("tuple", "get-tuple-element"):
            return self._tupled(op, ops, ins.rest, lambda whole: whole), sent
        if op in _SHARED_RESULT:
            groups = replica_groups.parse(ins.rest)
            return (groups is not None and len(groups) <= 1) or all(same(v) for v in ops), sent
        if op in _OWN_RESULT:
            return False, sent
        if op == "while":
            carried, condition, sent = self._loop(called, ops)
            differs = condition is not UNKNOWN and not same(condition)  # the devices may run it different times
            return (False if differs else carried), sent
        if op == "conditional":
            out, sent = self._branches(called, ops)
            return (out if ops and same(ops[0]) else False), sent
        through = self._called(called, ops)
        if through:  # a fusion or a call: its parameters are the operands
            return through
        return all(same(v) for v in ops if v is not UNKNOWN), sent  # a reducer applies to its operands alone

