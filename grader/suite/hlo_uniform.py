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
from grader.suite.hlo_flow import parameter_number, tuple_index

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


class Uniform:
    """Which values of one program are the same on every device (:func:`same` of :meth:`value`).

    ``comps`` and ``entry`` as grader.suite.hlo_flow.Flow reads them; read forward, calls and loops until
    nothing changes (a value only ever goes from the same everywhere to differing, so this ends)."""

    def __init__(self, comps: dict, entry: str):
        self.comps, self.entry = comps, entry
        self.names = {c: {i.name for i in instrs} for c, instrs in comps.items()}
        self.values: dict[tuple[str, str], object] = {}
        self.incoming: dict[tuple[str, int], object] = {}
        self._forward()

    def value(self, comp: str, name: str):
        return self.values.get((comp, name), UNKNOWN)

    def moves_nothing(self, comp: str, ins) -> bool:
        """Whether the collective ``ins`` of computation ``comp`` moves only values every device holds."""
        operands = [op for op in ins.operands if op in self.names.get(comp, ())]
        return bool(operands) and all(same(self.value(comp, op)) for op in operands)

    def _root(self, comp: str):
        return self.value(comp, self.comps[comp][-1].name) if self.comps.get(comp) else UNKNOWN

    def _send(self, callee: str, index: int, value) -> bool:
        old = self.incoming.get((callee, index), UNKNOWN)
        new = _join(old, value)
        self.incoming[(callee, index)] = new
        return new != old

    def _transfer(self, comp: str, ins) -> tuple[object, bool]:
        """(what ``ins`` gives, whether a computation it calls got new parameters)."""
        op = ins.opcode
        ops = [self.value(comp, o) if o in self.names[comp] else True for o in ins.operands]
        called = [(attr, c) for attr, c in ins.calls if c in self.comps]
        sent = False
        if op == "parameter":
            if comp == self.entry:
                return "sharding={replicated}" in ins.rest, sent
            return self.incoming.get((comp, parameter_number(ins.rest)), UNKNOWN), sent
        if op in ("constant", "iota"):
            return True, sent
        if op in _DIFFERS:
            return False, sent
        if op == "tuple":
            return tuple(ops), sent
        if op == "get-tuple-element":
            whole, k = (ops[0] if ops else UNKNOWN), tuple_index(ins.rest)
            return (whole[k] if isinstance(whole, tuple) and k is not None and k < len(whole) else whole), sent
        if op in _SHARED_RESULT:
            groups = replica_groups.parse(ins.rest)
            return (groups is not None and len(groups) <= 1) or all(same(v) for v in ops), sent
        if op in _OWN_RESULT:
            return False, sent
        if op == "while":
            body = next((c for attr, c in called if attr == "body"), None)
            condition = next((c for attr, c in called if attr == "condition"), None)
            carried = _join(ops[0] if ops else UNKNOWN, self._root(body) if body else UNKNOWN)
            for callee in (body, condition):
                if callee:
                    sent |= self._send(callee, 0, carried)
            if condition and self._root(condition) is not UNKNOWN and not same(self._root(condition)):
                return False, sent  # the devices may run it a different number of times
            return carried, sent
        if op == "conditional":
            branches = [c for attr, c in called if attr == "branch"]
            out = UNKNOWN
            for j, callee in enumerate(branches):
                sent |= self._send(callee, 0, ops[j + 1] if j + 1 < len(ops) else UNKNOWN)
                out = _join(out, self._root(callee))
            return (out if ops and same(ops[0]) else False), sent
        runs = [c for attr, c in called if attr == "calls" or (attr == "to_apply" and op == "call")]
        if runs:  # a fusion or a call: its parameters are the operands
            for i, v in enumerate(ops):
                sent |= self._send(runs[0], i, v)
            return self._root(runs[0]), sent
        return all(same(v) for v in ops if v is not UNKNOWN), sent  # a reducer applies to its operands alone

    def _forward(self) -> None:
        reachable, todo = [], [self.entry] if self.entry in self.comps else []
        while todo:
            comp = todo.pop()
            if comp not in reachable:
                reachable.append(comp)
                todo += [c for ins in self.comps[comp] for _, c in ins.calls if c in self.comps]
        changed = True
        while changed:
            changed = False
            for comp in reachable:
                for ins in self.comps[comp]:
                    value, sent = self._transfer(comp, ins)
                    old = self.value(comp, ins.name)
                    new = _join(old, value) if old is not UNKNOWN else value
                    if new != old:
                        self.values[(comp, ins.name)] = new
                        changed = True
                    changed |= sent
