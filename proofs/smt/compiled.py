"""The Z3 step's own terms, compiled once into a Python function over ints and bools: what lets the
differential evaluate the model the theorems reason about on tens of thousands of concrete states.

`compile_terms(inputs, defs, outputs)` walks the terms' graph (each shared node once) and writes a
straight-line function, one assignment per node, in dependency order. A constant is an input, or is
defined by one of `defs` (`const == term`, as `policy.Draft.let` names the loops' running totals);
any other constant, or an operator outside linear integer arithmetic and Boolean logic, is refused
(ValueError naming it), so a term is never evaluated by a guess. Over unbounded ints these operators
mean in Python what they mean in Z3; `tests/test_proofs_refinement.py` also checks the compiled step
against Z3's own evaluation (`concrete.Evaluator`) on random states.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import z3

_NARY = {z3.Z3_OP_ADD: " + ", z3.Z3_OP_MUL: " * ", z3.Z3_OP_AND: " and ", z3.Z3_OP_OR: " or "}
_BINARY = {z3.Z3_OP_SUB: " - ", z3.Z3_OP_LE: " <= ", z3.Z3_OP_LT: " < ", z3.Z3_OP_GE: " >= ",
           z3.Z3_OP_GT: " > ", z3.Z3_OP_EQ: " == ", z3.Z3_OP_DISTINCT: " != "}

Compiled = Callable[[Sequence[Any]], list[Any]]


def definitions(defs: z3.BoolRef) -> dict[str, z3.ExprRef]:
    """The named constants of `defs`, a conjunction of `const == term`, by name."""
    parts = defs.children() if z3.is_and(defs) else [defs]
    named: dict[str, z3.ExprRef] = {}
    for part in parts:
        if z3.is_true(part):
            continue
        if not (z3.is_eq(part) and z3.is_const(part.arg(0)) and part.arg(0).decl().kind() == z3.Z3_OP_UNINTERPRETED):
            raise ValueError(f"not a definition (const == term): {part}")
        named[part.arg(0).decl().name()] = part.arg(1)
    return named


def operation(node: z3.ExprRef, args: list[str]) -> str:
    """The Python expression of the operator at `node` applied to `args`, the names of its operands' values."""
    kind = node.decl().kind()
    if kind in _NARY:
        return "(" + _NARY[kind].join(args) + ")"
    if kind in _BINARY and len(args) == 2:
        return f"({args[0]}{_BINARY[kind]}{args[1]})"
    if kind == z3.Z3_OP_UMINUS:
        return f"(-{args[0]})"
    if kind == z3.Z3_OP_NOT:
        return f"(not {args[0]})"
    if kind == z3.Z3_OP_IMPLIES:
        return f"((not {args[0]}) or {args[1]})"
    if kind == z3.Z3_OP_ITE:
        return f"({args[1]} if {args[0]} else {args[2]})"
    raise ValueError(f"cannot compile the Z3 operator {node.decl().name()!r} in {str(node)[:80]}")


def compile_terms(inputs: Sequence[z3.ExprRef], defs: z3.BoolRef, outputs: Sequence[z3.ExprRef]) -> Compiled:
    """A function from the values of `inputs` (in order) to the values of `outputs` (in order)."""
    named = definitions(defs)
    argument = {c.decl().name(): i for i, c in enumerate(inputs)}
    names: dict[int, str] = {}  # node id -> the local variable holding its value
    lines: list[str] = []

    def operand(node: z3.ExprRef) -> str:
        return names[node.get_id()]

    def emit(node: z3.ExprRef) -> str:
        kind = node.decl().kind()
        if kind == z3.Z3_OP_ANUM:
            return str(node.as_long())
        if kind == z3.Z3_OP_TRUE:
            return "True"
        if kind == z3.Z3_OP_FALSE:
            return "False"
        if kind == z3.Z3_OP_UNINTERPRETED and node.num_args() == 0:
            name = node.decl().name()
            if name in argument:
                return f"x[{argument[name]}]"
            return operand(named[name])
        return operation(node, [operand(a) for a in node.children()])

    def children(node: z3.ExprRef) -> list[z3.ExprRef]:
        if z3.is_const(node) and node.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            name = node.decl().name()
            if name in argument:
                return []
            if name not in named:
                raise ValueError(f"the constant {name!r} is neither an input nor defined")
            return [named[name]]
        return list(node.children())

    for root in outputs:  # depth first, iteratively: the terms of 64 requests are deep
        stack: list[tuple[z3.ExprRef, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if node.get_id() in names:
                continue
            if not ready:
                stack.append((node, True))
                stack.extend((c, False) for c in children(node) if c.get_id() not in names)
                continue
            variable = f"v{len(names)}"
            lines.append(f"    {variable} = {emit(node)}")
            names[node.get_id()] = variable
    body = "\n".join(lines) or "    pass"
    source = f"def step(x):\n{body}\n    return [{', '.join(operand(o) for o in outputs)}]\n"
    scope: dict[str, Any] = {}
    exec(compile(source, "<compiled Z3 step>", "exec"), scope)  # the source is written above, from Z3 terms only
    return scope["step"]
