"""Which values of a compiled program depend on its inputs, and which its output depends on.

A collective only communicates something if it carries data that comes from the program's inputs
into the program's result. A ``psum`` of a constant zero, a psum of ``x * 0``, or one whose result
is multiplied by zero or never used, runs but tells nothing about how the answer was computed: a
non-distributed program with such a dummy added still gives right values on any input. This module
reads that from the HLO text alone, in the grader's process (grader.suite.hlo asks it):

* forward, every value gets a level: ZERO (known to be all zeros), CONST (the same whatever the
  inputs) or VARIES (computed from the inputs). Constants, iota and the device's own id are CONST;
  a multiply or ``and`` with a ZERO operand is ZERO; moving, adding or reducing zeros keeps ZERO;
  anything else is as high as its highest operand. Tuples keep a level per element, so a loop's
  carry is followed element by element; loop bodies, fusions, calls and branches are followed
  until nothing changes;
* backward, from the ENTRY computation's root, a value is *needed* if the result can depend on it:
  every operand of every needed instruction, except an operand multiplied (or and-ed) by a ZERO.

Both are conservative the same way: a value marked CONST really is the same for every input, and a
value not needed really cannot change the result; the reverse does not hold (``x - x`` is VARIES to
this reading), which is why a task about splitting work also bounds each device's work
(grader.suite.hlo.operations).
"""

from __future__ import annotations

import re

BOTTOM, ZERO, CONST, VARIES = range(4)
# Instructions whose result is all zeros when the operands that carry data are.
_KEEPS_ZERO = frozenset({"add", "subtract", "negate", "abs", "maximum", "minimum", "broadcast", "reshape", "bitcast",
                         "copy", "transpose", "slice", "reverse", "convert", "bitcast-convert", "concatenate", "pad",
                         "dot", "reduce", "all-reduce", "all-gather", "collective-permute", "all-to-all",
                         "reduce-scatter", "collective-broadcast", "all-reduce-start", "all-gather-start",
                         "collective-permute-start", "dynamic-update-slice", "copy-start", "copy-done",
                         "all-reduce-done", "all-gather-done", "collective-permute-done"})
_ZERO_IF_ANY = frozenset({"multiply", "and"})
SAME_FOR_EVERY_INPUT = frozenset({"iota", "partition-id", "replica-id", "after-all", "rng-get-and-update-state"})
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|true|false|nan|-?inf")


def level(value) -> int:
    return max(map(level, value), default=BOTTOM) if isinstance(value, tuple) else value


def join(a, b):
    if a == BOTTOM:
        return b
    if b == BOTTOM:
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(join(x, y) for x, y in zip(a, b))
    return max(level(a), level(b))


def _constant(rest: str) -> int:
    literal = rest.split(")", 1)[0]
    if "..." in literal:
        return CONST
    numbers = _NUMBER.findall(literal)
    return ZERO if numbers and all(n == "false" or (n not in ("true", "nan") and "inf" not in n and float(n) == 0)
                                   for n in numbers) else CONST


def tuple_index(rest: str) -> int | None:
    """A get-tuple-element's ``index=``."""
    m = re.search(r"\bindex=(\d+)", rest)
    return int(m.group(1)) if m else None


def parameter_number(rest: str) -> int:
    return int(rest.split(")", 1)[0])


def element(whole, rest: str):
    """What a get-tuple-element (``rest``: its text after the operand) takes of the tuple ``whole``, or None where
    ``whole`` is no tuple that long (a value read as one for all its elements)."""
    k = tuple_index(rest)
    return whole[k] if isinstance(whole, tuple) and k is not None and k < len(whole) else None


class Forward:
    """Values read forward through one program, into the computations it calls and around its loops until nothing
    changes: a subclass says what each instruction gives (``_transfer``) and how two values join (``_join``: they
    only ever rise, so this ends); ``bottom`` is a value not reached yet.

    ``comps`` maps computation names to their instructions (each with ``name``, ``shape``, ``opcode``,
    ``operands``, ``calls`` as (attribute, computation) pairs and ``rest``), ``entry`` names ENTRY.
    """

    bottom: object = BOTTOM

    def __init__(self, comps: dict, entry: str):
        self.comps, self.entry = comps, entry
        self.by_name = {c: {i.name: i for i in instrs} for c, instrs in comps.items()}
        self.values: dict[tuple[str, str], object] = {}
        self.incoming: dict[tuple[str, int], object] = {}  # a computation's parameter: the join of its callers'
        self.callers: dict[str, list[tuple[str, object, str, int]]] = {}
        self.reachable = self._reach()
        self._forward()

    @staticmethod
    def _join(a, b):
        return join(a, b)

    def _transfer(self, comp: str, ins) -> tuple[object, bool]:
        raise NotImplementedError

    def _calls(self, ins) -> list[tuple[str, str]]:
        """(how, computation) for the computations an instruction runs as part of the program: "call"
        (fusion, call: parameters are its operands), "body" and "condition" (while), "branch"."""
        out = []
        for attr, callee in ins.calls:
            if attr == "calls" or (attr == "to_apply" and ins.opcode == "call"):
                out.append(("call", callee))
            elif attr in ("body", "condition", "branch"):
                out.append((attr, callee))
        return [(how, c) for how, c in out if c in self.comps]

    def _reach(self) -> list[str]:
        seen, todo = [], [self.entry] if self.entry in self.comps else []
        while todo:
            comp = todo.pop()
            if comp in seen:
                continue
            seen.append(comp)
            for ins in self.comps[comp]:
                for branch, (how, callee) in enumerate(self._calls(ins)):
                    self.callers.setdefault(callee, []).append((comp, ins, how, branch))
                    todo.append(callee)
        return seen

    def value(self, comp: str, name: str):
        return self.values.get((comp, name), self.bottom)

    def _root(self, comp: str):
        return self.value(comp, self.comps[comp][-1].name) if self.comps.get(comp) else self.bottom

    def _send(self, callee: str, index: int, value) -> bool:
        old = self.incoming.get((callee, index), self.bottom)
        new = self._join(old, value)
        self.incoming[(callee, index)] = new
        return new != old

    def _parameter(self, comp: str, ins):
        """A called computation's parameter: what its callers hand it, joined."""
        return self.incoming.get((comp, parameter_number(ins.rest)), self.bottom)

    def _tupled(self, op: str, ops: list, rest: str, whole):
        """A tuple's value (its operands') or a get-tuple-element's (``whole(value)`` where it takes from no tuple)."""
        if op == "tuple":
            return tuple(ops)
        taken = element(ops[0], rest) if ops else None
        return whole(ops[0] if ops else self.bottom) if taken is None else taken

    def _loop(self, calls: list, ops: list) -> tuple[object, object, bool]:
        """A while loop's (carry: the join of what it starts with and what its body returns, what its condition
        gives, whether its body or condition got new parameters)."""
        body = next((c for how, c in calls if how == "body"), None)
        condition = next((c for how, c in calls if how == "condition"), None)
        carried = self._join(ops[0] if ops else self.bottom, self._root(body) if body else self.bottom)
        sent = False
        for callee in (body, condition):
            if callee:
                sent |= self._send(callee, 0, carried)
        return carried, self._root(condition) if condition else self.bottom, sent

    def _branches(self, calls: list, ops: list) -> tuple[object, bool]:
        """A conditional's (the join of what its branches return, whether a branch got new parameters)."""
        out, sent = self.bottom, False
        for j, callee in enumerate(c for how, c in calls if how == "branch"):
            sent |= self._send(callee, 0, ops[j + 1] if j + 1 < len(ops) else self.bottom)
            out = self._join(out, self._root(callee))
        return out, sent

    def _called(self, calls: list, ops: list) -> tuple[object, bool] | None:
        """A fusion's or call's (what its computation returns, the operands its parameters), else None."""
        called = [c for how, c in calls if how == "call"]
        if not called:
            return None
        sent = False
        for i, v in enumerate(ops):
            sent |= self._send(called[0], i, v)
        return self._root(called[0]), sent

    def _forward(self) -> None:
        changed = True
        while changed:
            changed = False
            for comp in self.reachable:
                for ins in self.comps[comp]:
                    value, sent = self._transfer(comp, ins)
                    value = self._join(self.value(comp, ins.name), value)  # values only rise: this ends
                    if value != self.value(comp, ins.name):
                        self.values[(comp, ins.name)] = value
                        changed = True
                    changed |= sent


class Flow(Forward):
    """The forward levels and the needed instructions of one program (the module's docstring)."""

    def __init__(self, comps: dict, entry: str):
        super().__init__(comps, entry)
        self.needed = self._backward()
        self._needed_by: dict[int, set[tuple[str, str]]] = {}

    def _operand_values(self, comp: str, ins) -> list:
        return [self.value(comp, op) if op in self.by_name[comp] else CONST for op in ins.operands]

    def _transfer(self, comp: str, ins) -> tuple[object, bool]:
        """(the instruction's value, whether a computation it runs got new parameter values)."""
        op, ops = ins.opcode, self._operand_values(comp, ins)
        top = max((level(v) for v in ops), default=BOTTOM)
        sent = False
        if op == "parameter":
            return (VARIES if comp == self.entry else self._parameter(comp, ins)), sent
        if op == "constant":
            return _constant(ins.rest), sent
        if op in SAME_FOR_EVERY_INPUT:
            return CONST, sent
        if op in ("tuple", "get-tuple-element"):
            return self._tupled(op, ops, ins.rest, level), sent
        calls = self._calls(ins)
        if op == "while":
            carried, condition, sent = self._loop(calls, ops)
            return (VARIES if level(condition) == VARIES else carried), sent  # its trip count depends on the inputs
        if op == "conditional":
            out, sent = self._branches(calls, ops)
            return (VARIES if ops and level(ops[0]) == VARIES and level(out) != ZERO else out), sent
        called = self._called(calls, ops)
        if called:
            return called
        if op in _ZERO_IF_ANY and any(level(v) == ZERO for v in ops):
            return ZERO, sent
        data = {"dynamic-slice": ops[:1], "select": ops[1:], "pad": ops, "dynamic-update-slice": ops[:2]}.get(op, ops)
        if op in _KEEPS_ZERO | {"dynamic-slice", "select"} and data and all(level(v) == ZERO for v in data):
            return ZERO, sent
        if ins.shape.startswith("(") and op.startswith(("all-", "collective-", "reduce-scatter")) and len(ops) > 1:
            return tuple(ops), sent  # a merged collective: one result per operand
        return (CONST if top == ZERO else top), sent

    def outputs(self) -> int | None:
        """How many results the program returns, where its ENTRY root is a tuple of them; else None."""
        root = self.comps[self.entry][-1] if self.comps.get(self.entry) else None
        return len(root.operands) if root is not None and root.opcode == "tuple" else None

    def needed_by(self, k: int) -> set[tuple[str, str]]:
        """(computation, instruction) pairs result ``k`` of the program (an element of the ENTRY root's tuple)
        can depend on: a wrong result is explained only by what it depends on."""
        if k not in self._needed_by:
            self._needed_by[k] = self._backward(k)
        return self._needed_by[k]

    def _backward(self, k: int | None = None) -> set[tuple[str, str]]:
        """(computation, instruction) pairs the ENTRY root's value (its element ``k``: None, all) can depend on."""
        if not self.comps.get(self.entry):
            return set()
        demanded: set[tuple[str, str, int | None]] = set()
        todo = [(self.entry, self.comps[self.entry][-1].name, k)]
        while todo:
            item = todo.pop()
            if item in demanded:
                continue
            demanded.add(item)
            comp, name, k = item
            todo += self._needs(comp, self.by_name[comp][name], k)
        return {(c, n) for c, n, _ in demanded}

    def _needs(self, comp: str, ins, k: int | None) -> list[tuple[str, str, int | None]]:
        """What element ``k`` (None: all) of ``ins``'s value depends on."""
        names = [op for op in ins.operands if op in self.by_name[comp]]
        whole = [(comp, op, None) for op in names]
        op = ins.opcode
        if op == "parameter":
            out = []
            for caller_comp, caller, how, branch in self.callers.get(comp, []):
                operands = [o for o in caller.operands if o in self.by_name[caller_comp]]
                index = parameter_number(ins.rest)
                if how == "call" and index < len(operands):
                    out.append((caller_comp, operands[index], k))
                elif how in ("body", "condition") and operands:
                    out.append((caller_comp, operands[0], k))
                    body = next((c for h, c in self._calls(caller) if h == "body"), None)
                    if body and self.comps[body]:
                        out.append((body, self.comps[body][-1].name, k))
                elif how == "branch" and branch + 1 < len(operands):
                    out.append((caller_comp, operands[branch + 1], k))
            return out
        if op == "tuple":
            return whole if k is None or k >= len(names) else [whole[k]]
        if op == "get-tuple-element":
            return [(comp, names[0], tuple_index(ins.rest))] if names else []
        roots = [(how, c, self.comps[c][-1].name) for how, c in self._calls(ins) if self.comps[c]]
        if op == "while":  # the body's result, the trip count (the condition's), the initial carry
            return [(c, r, k if how == "body" else None) for how, c, r in roots] + [(comp, n, k) for n in names[:1]]
        if op == "conditional":
            return [(c, r, k) for _, c, r in roots] + whole[:1]
        if any(how == "call" for how, _, _ in roots):
            return [(c, r, k) for _, c, r in roots[:1]]
        if op in _ZERO_IF_ANY:
            zeros = [n for n in names if level(self.value(comp, n)) == ZERO]
            if zeros:
                return [(comp, n, None) for n in zeros]
        if k is not None and ins.shape.startswith("(") and k < len(names):
            return [whole[k]]
        return whole
