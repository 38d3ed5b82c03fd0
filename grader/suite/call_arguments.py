"""The arguments of the JAX call on the student's line that raised, by the names JAX's API gives them.

An error JAX raises inside ``lax.all_gather`` talks about "axis 3 of an array of dimension 2"; the
student wrote ``axis=3`` (or a third positional argument). Reading that call from the student's own
source line (the worker sends it with the failure) lets a message name the argument the student
wrote, with the value they wrote, next to the fact JAX measured. This module only reads: a line that
does not parse, or a call it cannot find, gives no arguments, and the message then says less.
"""

from __future__ import annotations

import ast

# The positional parameters of the JAX calls whose arguments a message may name, in JAX's order.
SIGNATURES = {
    "psum": ("x", "axis_name"), "pmean": ("x", "axis_name"), "pmax": ("x", "axis_name"),
    "pmin": ("x", "axis_name"), "ppermute": ("x", "axis_name", "perm"),
    "all_gather": ("x", "axis_name"), "psum_scatter": ("x", "axis_name"), "all_to_all": ("x", "axis_name",
                                                                                        "split_axis", "concat_axis"),
    "axis_index": ("axis_name",), "axis_size": ("axis_name",),
    "pmap": ("fun", "axis_name"), "shard_map": ("f",), "vmap": ("fun", "in_axes", "out_axes"),
    "make_array_from_process_local_data": ("sharding", "local_data", "global_shape"),
    "device_put": ("x", "device"), "NamedSharding": ("mesh", "spec"),
}


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _parsed(line: str) -> ast.AST | None:
    """The line as Python, closing brackets a call continued on the next lines left open."""
    text = line.strip().rstrip("\\")
    if text.startswith(("return ", "yield ")):
        text = text.partition(" ")[2]
    text = text.partition(" = ")[2] if " = " in text.split("(")[0] else text
    for closing in ("", ")", "))", ")))", "])", ")])"):
        try:
            return ast.parse(text + closing, mode="eval")
        except SyntaxError:
            continue
    return None


def calls(line: str) -> list[tuple[str, dict[str, str]]]:
    """Every call on ``line`` as (function name, {parameter: source text}), outermost first."""
    tree = _parsed(line or "")
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _name(node.func) is None:
            continue
        name = _name(node.func)
        params = SIGNATURES.get(name, ())
        args = {params[i] if i < len(params) else f"argument {i}": ast.unparse(a) for i, a in enumerate(node.args)}
        args.update({k.arg: ast.unparse(k.value) for k in node.keywords if k.arg})
        found.append((name, args))
    return found


def argument(line: str, function: str, parameter: str) -> str | None:
    """The source text of ``parameter`` in the call of ``function`` on ``line``, or None."""
    return next((args[parameter] for name, args in calls(line) if name == function and parameter in args), None)


def call_with(line: str, functions: tuple[str, ...]) -> tuple[str, dict[str, str]] | None:
    """The first call on ``line`` of one of ``functions``, or None."""
    return next(((name, args) for name, args in calls(line) if name in functions), None)
