"""The shape schedule()'s statements outside its phase loops must have (`code_phases`), and the
globals any of its statements may name: what lets FOLD (code, induction, any N) say that schedule()
is its phase loops in sequence, each a fold, and nothing else touching a request or a plan entry.

A straight-line statement is one of:

- a guard `if TEST: raise ...` or `assert TEST, ...` (no plan where it raises; its raise or message is
  not read): TEST may also count any container (`len(self.C)`) and ask whether an attribute holding
  no count is None (`self.X is None`, `is not None`);
- `name = EXPR`, `name OP= EXPR`, `self.X = EXPR`, `self.X OP= EXPR` (X an integer, or an attribute
  holding neither requests nor the config), `self.R.F = EXPR` (F a field of a dataclass record R, the
  step record, holding no requests: its number, its plan), or `return name`.

EXPR (and TEST) may read: constants; the scheduler's integer attributes and the config's fields
(`self.X`, `self.config.F`), and a record's integer fields (`self.R.F`; a field holding no count
only in a guard's `self.R.F is None`); the count of a container a phase before it walks (`len(self.C)`, or
`len(E)` of a map's list E no loop has appended to yet: that container's count); locals bound by
statements like it, but no name a loop before it binds (a loop's leftovers, even if bound before the
loop too); and globals a body may name (`allowed_global`); `len` counts a container or a map's list
alone. The plan list (`[]`, `list(...)` or a map) is bound once and read only in `tuple(E)`, an
argument of the spec's `Plan(...)`. Nothing else: no method call, subscript, other attribute (no
dunder), comprehension, `getattr` or `object`: anything else is refused (`FrameError`, naming the
statement). An attribute's kind is what it holds on a new scheduler and on a probe state alike
(`code_phases.attribute_kinds`): one that is an integer on one and a line on the other is "other".
"""

from __future__ import annotations

import ast
import builtins
import inspect
from dataclasses import dataclass, field
from typing import Any

from stallfree.spec.types import Plan

from .fold_frame import INTROSPECTION, FrameError

# the builtins a statement may call: pure functions of their arguments (the classes are checked apart);
# `iter` and `next` run their argument's own `__iter__` and `__next__`, in a body the frame's stand-ins'
PURE_BUILTINS = frozenset({"len", "min", "max", "abs", "sum", "any", "all", "divmod", "round",
                           "iter", "next"})
# what reaches an attribute or the type system around the frame, in a body or outside the loops
DENIED = INTROSPECTION | {"getattr", "setattr", "delattr", "hasattr", "object", "type", "super", "id", "open",
                          "memoryview", "classmethod", "staticmethod", "property"}


def allowed_global(name: str, scope: dict[str, Any]) -> str | None:
    """None if `name`, read as a global of schedule()'s module `scope`, is a builtin listed pure or a
    class, builtin, of `collections`, `itertools` or the project's (no metaclass, no `object` or `type`); else why
    not (a module, a function, a mutable value, a class of other code, whose constructor is not read)."""
    if name in DENIED:
        return f"names {name}"
    if name not in scope and not hasattr(builtins, name):
        return f"names {name}, bound nowhere"
    value = scope[name] if name in scope else getattr(builtins, name)
    if (inspect.isclass(value) and not issubclass(value, type) and value is not object
            and (value.__module__ in ("builtins", "collections", "itertools")
                 or value.__module__.startswith("stallfree."))):
        return None
    if value is getattr(builtins, name, None) and name in PURE_BUILTINS:
        return None
    return (f"names the global {name}, a {type(value).__name__} (only pure builtins and builtin, collections' "
            "or the project's classes)")


def global_names(nodes: list[ast.AST], local: set[str]) -> list[ast.Name]:
    return [n for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id not in local and n.id != "self"]


def check_names(nodes: list[ast.AST], local: set[str], scope: dict[str, Any]) -> str | None:
    """Why the global names and attributes of `nodes` step outside the frame; None if they do not."""
    for n in global_names(nodes, local):
        why = allowed_global(n.id, scope)
        if why is not None:
            return why
    attrs = [n for n in nodes if isinstance(n, ast.Attribute)]
    for a in attrs:
        if a.attr.startswith("__"):
            return f"reads the dunder {a.attr}"
        if isinstance(a.value, ast.Name) and a.value.id not in local and a.value.id != "self":
            return f"reads {a.value.id}.{a.attr}, an attribute of a global"
    return None


@dataclass
class Context:
    """What the straight-line statements before this one left: their locals, the loops' names, ..."""

    kinds: dict[str, str]
    scope: dict[str, Any]
    local: set[str]  # every name schedule() binds
    loop_bound: set[str] = field(default_factory=set)  # the names a phase loop before binds
    plans: set[str] = field(default_factory=set)  # the plan lists
    untouched: set[str] = field(default_factory=set)  # map lists no loop has appended to yet
    earlier: set[str] = field(default_factory=set)  # the containers the phases before walk
    counts: set[str] = field(default_factory=set)  # locals bound once to such a count since the last phase


def check(stmt: ast.stmt, ctx: Context, name: str) -> None:
    """`stmt` has the shape of a straight-line statement: FrameError naming it and why, if not."""
    label = ast.unparse(stmt).splitlines()[0]
    why = _why(stmt, ctx)
    if why is not None:
        raise FrameError(f"{name}: the statement `{label}` outside the phase loops {why}")


def _why(stmt: ast.stmt, ctx: Context) -> str | None:
    guard = isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Raise)
    if guard or isinstance(stmt, ast.Assert):
        return _expr(stmt.test, ctx, guard=True)  # type: ignore[attr-defined]
    if isinstance(stmt, ast.Return):
        ok = isinstance(stmt.value, ast.Name) and stmt.value.id not in ctx.plans | ctx.loop_bound
        return None if ok else "returns no local bound outside the loops"
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, ast.AugAssign):
        target, value = stmt.target, stmt.value
        if isinstance(target, ast.Name) and target.id in ctx.loop_bound:
            return f"reads {target.id}, bound by a loop before it"
    else:
        return "is no guard (`if ...: raise`), assignment or `return name`"
    why = _target(target, ctx)
    if why is None and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Plan":
        return _plan(value, ctx)
    return why or _expr(value, ctx, guard=False)


def _target(target: ast.expr, ctx: Context) -> str | None:
    if isinstance(target, ast.Name):
        return f"binds the plan list {target.id} again" if target.id in ctx.plans else None
    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
            and not target.attr.startswith("__") and ctx.kinds.get(target.attr) in ("scalar", "other")):
        return None
    if (isinstance(target, ast.Attribute) and _is_self_attr(target.value) and not target.attr.startswith("__")
            and ctx.kinds.get(target.value.attr) == "record"  # type: ignore[attr-defined]
            and ctx.kinds.get(f"{target.value.attr}.{target.attr}") in ("scalar", "other")):  # type: ignore[attr-defined]
        return None  # a field of the step record holding no requests (its plan, its number)
    return f"writes {ast.unparse(target)}, not a local or an attribute holding no requests"


def _plan(call: ast.Call, ctx: Context) -> str | None:
    """`Plan(ARGS, tuple(E))`: the spec's Plan, the plan list in `tuple(...)` alone, the rest read as EXPR."""
    if ctx.scope.get("Plan") is not Plan:
        return "calls a Plan that is not the spec's"
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        if (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "tuple"
                and len(arg.args) == 1 and isinstance(arg.args[0], ast.Name) and arg.args[0].id in ctx.plans):
            if "tuple" in ctx.scope:
                return "runs in a module that rebinds tuple"
            continue
        why = _expr(arg, ctx, guard=False)
        if why is not None:
            return why
    return None


def expression(expr: ast.expr, ctx: Context, also: str) -> str | None:
    """Why `expr`, read as a straight-line expression that may count the container `also` as well as
    those a phase before walks (a tail `for`'s count), reads more than its frame; None if it does not."""
    earlier = ctx.earlier
    ctx.earlier = earlier | {also}
    try:
        return _expr(expr, ctx, guard=False)
    finally:
        ctx.earlier = earlier


def _expr(expr: ast.expr, ctx: Context, guard: bool) -> str | None:
    """Why `expr` reads more than its frame outside the loops; None if it does not."""
    nodes = list(ast.walk(expr))
    why = check_names(nodes, ctx.local, ctx.scope)
    if why is not None:
        return why
    counted = {id(n.args[0]) for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id == "len" and len(n.args) == 1}
    compared = {id(n.left) for n in nodes if guard and isinstance(n, ast.Compare) and len(n.ops) == 1
                and isinstance(n.ops[0], ast.Is | ast.IsNot) and isinstance(n.comparators[0], ast.Constant)
                and n.comparators[0].value is None}
    held = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    for n in nodes:
        why = _node(n, ctx, guard, counted, compared, held)
        if why is not None:
            return why
    return None


def _node(n: ast.AST, ctx: Context, guard: bool, counted: set[int], compared: set[int], held: set[int]) -> str | None:
    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
        if n.id == "self" and id(n) not in held:
            return "names self"
        if n.id in ctx.loop_bound:
            return f"reads {n.id}, bound by a loop before it"
        if n.id in ctx.plans and not (id(n) in counted and n.id in ctx.untouched):
            return f"reads the plan list {n.id}"
        return None
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and not _counts(n, ctx):
        return f"counts {ast.unparse(n.args[0]) if n.args else 'nothing'}, no container of the scheduler"
    if isinstance(n, ast.Attribute):
        return _attribute(n, ctx, guard, counted, compared, held)
    if isinstance(n, ast.Call) and not isinstance(n.func, ast.Name):
        return f"calls {ast.unparse(n.func)}, no builtin or class"
    if isinstance(n, ast.Subscript | ast.Lambda | ast.NamedExpr | ast.comprehension | ast.Starred | ast.Await
                  | ast.Yield | ast.YieldFrom):
        return f"holds {type(n).__name__}"
    return None


def _attribute(n: ast.Attribute, ctx: Context, guard: bool, counted: set[int], compared: set[int],
               held: set[int]) -> str | None:
    base = n.value
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "self":
        if ctx.kinds.get(base.attr) == "record" and not n.attr.startswith("__"):
            field = ctx.kinds.get(f"{base.attr}.{n.attr}")
            if field == "scalar" or (field == "other" and id(n) in compared):
                return None
            return f"reads {ast.unparse(n)}, a field of the record neither an integer nor asked `is None`"
        return None if ctx.kinds.get(base.attr) == "config" else f"reads {ast.unparse(n)}, not the config's"
    if not (isinstance(base, ast.Name) and base.id == "self"):
        return f"reads {ast.unparse(n)}, an attribute of no self"
    kind = ctx.kinds.get(n.attr)
    if kind == "record" and id(n) in held:
        return None  # only as the base of one of its fields, judged above
    if kind == "container" and id(n) in counted and (guard or n.attr in ctx.earlier):
        return None
    if kind == "other" and id(n) in compared:
        return None
    if kind in ("scalar", "config") and not n.attr.startswith("__"):
        return None
    return f"reads self.{n.attr}, {_KIND.get(kind or '', 'of no kind a new scheduler shows')}"


def _counts(call: ast.Call, ctx: Context) -> bool:
    """`len(self.C)` of a container, or `len(E)` of a map's list no loop has appended to yet."""
    if len(call.args) != 1 or call.keywords:
        return False
    arg = call.args[0]
    if isinstance(arg, ast.Name):
        return arg.id in ctx.untouched
    return _is_self_attr(arg) and ctx.kinds.get(arg.attr) == "container"  # type: ignore[attr-defined]


def _is_self_attr(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


_KIND = {"container": "a container of requests", "method": "a method or property", "other": "neither a count "
         "nor the config (outside a guard's `is None`)"}
