"""The phase loops of a scheduler's own `schedule()`, read from its source: what FOLD (code, induction,
any N) is about (`code_fold_induction`), and the statements between them, which must read no request.

schedule()'s top-level statements are read in order. A phase is one of three shapes:

- a map `E = list(self.C.values())`: by Python's `list`, the fold that appends each of C's values;
- a `for x in self.C.values(): BODY` (no `else`): BODY once per value of C, in C's order; or `for x in
  reversed([*islice(reversed(self.C.values()), COUNT)]): BODY`, once per value of C's tail of COUNT
  values, in C's order: the reference's partial prompts, the running requests after the ready ones.
  COUNT is `len(self.C) - R`, R the count of a container a phase before walks (`len(self.D)`, `len(E)`
  of a map's list no loop has appended to, or a local bound once to one of those after the last phase
  before): C past that phase's requests, no more and no fewer (that those are the requests of C not in
  that container is read, not proved: the reference's post-condition `ready_first`). Such a `for` may
  stand alone in `if len(self.C) > R:` (the same R), a guard that its tail is not empty, which skips
  only a loop that would plan nothing;
- a `while TEST: BODY` (no `else`) whose body takes requests off the head of one container, its line
  (`self.L.popleft()`, or an ordered dict's `self.L.popitem(last=False)`): BODY once per request of the
  line, in order, while TEST holds.

Which attribute is a container (of exactly the type dict, OrderedDict, deque, list or set: a
subclass's own methods would not run in the frame), a count, the config, is read off a new scheduler,
not off names. Every other statement is straight-line and must have the shape
`code_straight` reads (a guard, an assignment of counts and limits, the plan list passed to `Plan`).
A loop body may not return, declare a global or nonlocal, catch, yield, define a function or class,
rebind `self`, name `locals`, `vars`, `eval`, a frame and the like (`fold_frame.INTROSPECTION`),
`getattr`, `setattr`, `object` or a dunder, nor a global other than a pure builtin or a class
(`code_straight.allowed_global`: no module-level value that could alias the scheduler); the names the
shapes are read by are Python's (`BUILTINS` bound in neither the module nor the body, a tail's `islice`
`itertools.islice`); and no container is walked by two phases (a later one reads its count as what
the one before left). Anything else
is refused (`FrameError`): the row then proves nothing of the code's shape it cannot read. A wrapper
registered pass-through (`proofs.pass_through`: the prove command's timer) is unwrapped to the method it calls.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import inspect
import itertools
import types
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stallfree.proofs.pass_through import unwrapped
from stallfree.spec.types import Config

from . import code_straight
from .fold_frame import INTROSPECTION, REFUSED_NODES, FrameError, parsed

CONTAINERS = (dict, deque, list, set)
ONCE, NATURAL = "_stallfree_once", "_stallfree_natural"  # the names the compiled iteration adds
# a walrus too: in a while's test it would move a carried value on the last, uncounted test
REFUSED_IN_BODY = (*REFUSED_NODES, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.AsyncFor,
                   ast.AsyncWith, ast.NamedExpr, ast.Import, ast.ImportFrom, ast.Match)


@dataclass(frozen=True)
class Phase:
    """One phase loop of schedule(): its shape, the container it walks, and what it carries."""

    kind: str  # "map", "for" or "while"
    walked: str  # the scheduler's attribute it walks (the while's line; a for's, its tail alone if `tail`)
    node: ast.stmt  # the statement, as written
    target: str  # the for's variable; the map's list; "" for a while
    carried: tuple[str, ...]  # schedule()'s locals it reads or writes, bound before it by straight-line code
    plans: frozenset[str]  # of those, the lists (bound by a map, `[]` or `list(...)`): the plan entries
    earlier: tuple[str, ...]  # the containers the phases before it walk: their counts it may read
    attributes: frozenset[str]  # the scheduler's attributes it names
    label: str  # its header, as written
    tail: bool = False  # a for over the tail of `walked` (`reversed([*islice(reversed(...), COUNT)])`)
    guarded: bool = False  # the for stands alone in `if len(self.C) > R:`, its tail not empty
    past: str = ""  # a tail's: R of its COUNT `len(self.C) - R`, the earlier phase's count

    @property
    def loop(self) -> ast.For | ast.While:
        assert isinstance(self.node, ast.For | ast.While)
        return self.node


@dataclass(frozen=True)
class Source:
    """schedule()'s phases, with what compiling their bodies needs."""

    phases: tuple[Phase, ...]
    kinds: dict[str, str]  # attribute -> "container", "scalar", "config", "method", "record" or "other"
    globals: dict[str, Any]
    filename: str
    first_line: int


def probe_state(cls: type) -> Any:
    """A state with one ready, one partial and one waiting request, reached by the scheduler's own add,
    schedule and complete."""
    s = cls(2, 3, 64)
    s.add(0, 1, 8)
    s.complete(s.schedule())
    s.add(1, 16, 8)
    s.complete(s.schedule())
    s.add(2, 1, 1)
    return s


def _kind(value: Any) -> str:
    return ("container" if type(value) in (*CONTAINERS, OrderedDict) else "scalar" if type(value) is int
            else "config" if isinstance(value, Config) else "other")


def attribute_kinds(cls: type) -> dict[str, str]:
    """What each attribute holds, the same on a new `cls(1, 1, 1)` and on the probe state (`probe_state`);
    "other" where the two differ (an integer that later holds a line, say); a method or property of the
    class: "method"; a probe run that raises leaves the new scheduler's alone (the row then holds
    nothing: `code_frame.probe` runs it again)."""
    states = [vars(cls(1, 1, 1))]
    with contextlib.suppress(Exception):  # a probe run that fails: `code_frame.probe` fails too, nothing holds
        states.append(vars(probe_state(cls)))
    kinds = {n: "method" for c in cls.__mro__ for n in vars(c) if not n.startswith("__")}
    for name in {n for state in states for n in state}:
        found = {_kind(state[name]) if name in state else "absent" for state in states}
        kinds[name] = found.pop() if len(found) == 1 else "other"
        records = {type(state[name]) for state in states if name in state and _is_record(state[name])}
        if kinds[name] == "other" and len(records) == 1 and all(name in state and _is_record(state[name])
                                                               for state in states):
            kinds[name] = "record"  # a dataclass record (the step record): its fields' kinds as "name.field"
            for f in dataclasses.fields(records.pop()):
                held = {_kind(getattr(state[name], f.name)) for state in states}
                kinds[f"{name}.{f.name}"] = held.pop() if len(held) == 1 else "other"
    return kinds


def _is_record(value: Any) -> bool:
    """A plain record: an instance of a slots dataclass whose fields are its slots (no property in their
    place) and whose classes define no attribute hook (`__getattribute__`, `__getattr__`, `__setattr__`,
    `__delattr__`): reading or writing one of its fields then runs no code of the scheduler's."""
    cls = type(value)
    if not dataclasses.is_dataclass(value) or isinstance(value, type) or hasattr(value, "__dict__"):
        return False
    if any(hook in vars(c) for c in cls.__mro__ if c is not object for hook in ATTRIBUTE_HOOKS):
        return False
    return all(type(inspect.getattr_static(cls, f.name, None)) is types.MemberDescriptorType
               for f in dataclasses.fields(cls))


ATTRIBUTE_HOOKS = ("__getattribute__", "__getattr__", "__setattr__", "__delattr__")


def read(cls: type) -> Source:
    """The phases of `cls.schedule`; FrameError naming what the source shows that the frame cannot read."""
    func = getattr(cls, "schedule", None)
    func = unwrapped(func)
    if not inspect.isfunction(func):
        raise FrameError(f"{cls.__qualname__}.schedule is not a plain function")
    tree = parsed(func)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef) or [a.arg for a in node.args.args] != ["self"] or node.decorator_list:
        raise FrameError(f"{func.__qualname__} is not a plain method of self alone")
    kinds = attribute_kinds(cls)
    body = node.body[1:] if _is_docstring(node.body[0]) else node.body
    _check_builtins(func, {n for stmt in body for n in _bound(stmt)})
    phases = _phases(body, kinds, func.__globals__, func.__qualname__)
    if not phases:
        raise FrameError(f"{func.__qualname__} holds no phase loop the frame can read")
    return Source(tuple(phases), kinds, func.__globals__, inspect.getsourcefile(func) or "<schedule>",
                  func.__code__.co_firstlineno)


BUILTINS = ("len", "list", "reversed", "iter", "next")  # the builtins the frame reads by name (its phases' shapes)


def _check_builtins(func: Any, local: set[str]) -> None:
    """The names the frame reads a phase's shape by are Python's: `BUILTINS` unbound in schedule()'s module
    and body, and `islice` unbound in its body (a tail's is checked `itertools.islice`: `_phases`);
    FrameError naming the one that is not."""
    for name in (*BUILTINS, "islice"):
        if name in local or (name in BUILTINS and name in func.__globals__):
            raise FrameError(f"{func.__qualname__}: its module or body rebinds {name}")


def _phases(body: list[ast.stmt], kinds: dict[str, str], scope: dict[str, Any], name: str) -> list[Phase]:
    """Each phase of schedule()'s `body`, in order, every straight-line statement checked."""
    shapes = [_shape(stmt, kinds) for stmt in body]
    in_phases = {n for stmt, s in zip(body, shapes, strict=True) if s is not None and s[0] != "map"
                 for n in _bound(stmt)}
    ctx = code_straight.Context(kinds, scope, {n for stmt in body for n in _bound(stmt)})
    once = _bound_once(body)
    straight: set[str] = set()
    phases: list[Phase] = []
    for stmt, shape in zip(body, shapes, strict=True):
        if shape is None:
            code_straight.check(stmt, ctx, name)
            straight |= _bound(stmt)
            ctx.plans |= _lists(stmt)
            ctx.counts |= _count_bound(stmt, ctx, once)
            continue
        kind, walked, target = shape
        if walked in ctx.earlier:  # its count, carried from the phase before as what it left, would not be
            raise FrameError(f"{name}: `{ast.unparse(stmt).splitlines()[0]}` walks self.{walked}, which a phase "
                             "before it walks")
        loop = _guarded(stmt) or stmt
        phase = _phase(loop, kind, walked, target, straight, ctx, phases, in_phases, name)
        if kind == "for" and _values_of(loop.iter, kinds) is None:  # type: ignore[attr-defined]
            if scope.get("islice") is not itertools.islice:
                raise FrameError(f"{name}: the islice of `{ast.unparse(stmt).splitlines()[0]}` is not itertools.islice")
            phase = dataclasses.replace(phase, tail=True, guarded=loop is not stmt)
            past = _check_count(phase, stmt.test if loop is not stmt else None, ctx, name)  # type: ignore[attr-defined]
            phase = dataclasses.replace(phase, past=past)
        elif loop is not stmt:
            raise FrameError(f"{name}: `{ast.unparse(stmt).splitlines()[0]}` guards a loop that is no tail `for`")
        phases.append(phase)
        ctx.counts = set()  # a count bound before a phase may be stale after it
        ctx.earlier.add(walked)
        ctx.untouched -= phase.plans
        if kind == "map":
            straight.add(target)
            ctx.plans.add(target)
            ctx.untouched.add(target)
        else:
            ctx.loop_bound |= _bound(stmt)
    return phases


def _phase(stmt: ast.stmt, kind: str, walked: str, target: str, straight: set[str], ctx: code_straight.Context,
           before: list[Phase], in_phases: set[str], name: str) -> Phase:
    label = ast.unparse(stmt).splitlines()[0]
    plans = ctx.plans
    if kind != "map":
        _check_body(stmt, name, label, ctx)
    loaded = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    own = _bound(stmt) if kind != "map" else set()
    carried = tuple(sorted((loaded | own) & straight)) if kind != "map" else ()
    leftover = sorted((loaded & in_phases) - own - straight)
    if leftover:
        raise FrameError(f"{name}: `{label}` reads {leftover[0]}, bound by another loop's body")
    attributes = frozenset(n.attr for n in ast.walk(stmt) if isinstance(n, ast.Attribute)
                           and isinstance(n.value, ast.Name) and n.value.id == "self")
    earlier = tuple(p.walked for p in before)
    if kind != "map" and own & ctx.plans:
        raise FrameError(f"{name}: `{label}` binds the plan list {sorted(own & ctx.plans)[0]} again")
    if len(plans & set(carried)) > 1:
        raise FrameError(f"{name}: `{label}` appends to more than one plan list")
    return Phase(kind, walked, stmt, target, carried, frozenset(plans & set(carried)), earlier, attributes, label)


def _shape(stmt: ast.stmt, kinds: dict[str, str]) -> tuple[str, str, str] | None:
    """(kind, walked container, target) of a phase statement; None for a straight-line one."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        value = stmt.value
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "list"
                and len(value.args) == 1 and not value.keywords):
            walked = _values_of(value.args[0], kinds)
            if walked is not None:
                return "map", walked, stmt.targets[0].id
        return None
    loop = _guarded(stmt)
    if loop is not None:
        return _shape(loop, kinds)
    if isinstance(stmt, ast.For):
        walked = _values_of(stmt.iter, kinds) or _tail_of(stmt.iter, kinds)
        if walked is None or stmt.orelse or not isinstance(stmt.target, ast.Name):
            raise FrameError(f"`{ast.unparse(stmt).splitlines()[0]}` is no `for x in self.C.values():` without else")
        return "for", walked, stmt.target.id
    if isinstance(stmt, ast.While):
        lines = {n.func.value.attr for n in ast.walk(stmt) if isinstance(n, ast.Call) and _takes_head(n)}
        if len(lines) != 1 or stmt.orelse or kinds.get(next(iter(lines))) != "container":
            raise FrameError(f"`{ast.unparse(stmt).splitlines()[0]}` takes no one line's head (popleft), "
                             "or has an else")
        return "while", lines.pop(), ""
    if any(isinstance(n, ast.For | ast.While | ast.AsyncFor) for n in ast.walk(stmt)):
        raise FrameError(f"`{ast.unparse(stmt).splitlines()[0]}` holds a loop that is no phase of the frame")
    return None


def _values_of(node: ast.expr, kinds: dict[str, str]) -> str | None:
    """C if `node` is `self.C.values()` with C a container of the scheduler."""
    if (isinstance(node, ast.Call) and not node.args and not node.keywords and isinstance(node.func, ast.Attribute)
            and node.func.attr == "values" and _is_self_attr(node.func.value)):
        attr = node.func.value.attr  # type: ignore[attr-defined]
        return attr if kinds.get(attr) == "container" else None
    return None


def _takes_head(call: ast.Call) -> bool:
    """`self.L.popleft()`, or `self.L.popitem(last=False)` (an ordered dict's head)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and _is_self_attr(func.value)):
        return False
    if func.attr == "popleft":
        return True
    last = [k for k in call.keywords if k.arg == "last"]
    return (func.attr == "popitem" and not call.args and len(call.keywords) == 1 and len(last) == 1
            and isinstance(last[0].value, ast.Constant) and last[0].value.value is False)


def _tail_of(node: ast.expr, kinds: dict[str, str]) -> str | None:
    """C if `node` is `reversed([*islice(reversed(self.C.values()), COUNT)])`: C's last COUNT values, in
    C's order (COUNT is checked by `_check_count`; the frame's `whole` walks C's values)."""
    if not (_call_of(node, "reversed") and isinstance(node.args[0], ast.List)  # type: ignore[attr-defined]
            and len(node.args[0].elts) == 1 and isinstance(node.args[0].elts[0], ast.Starred)):  # type: ignore[attr-defined]
        return None
    sliced = node.args[0].elts[0].value  # type: ignore[attr-defined]
    if not (_call_of(sliced, "islice", 2) and _call_of(sliced.args[0], "reversed")):  # type: ignore[attr-defined]
        return None
    return _values_of(sliced.args[0].args[0], kinds)  # type: ignore[attr-defined]


def _guarded(stmt: ast.stmt) -> ast.For | None:
    """The `for` if `stmt` is `if TEST:` holding that `for` alone, without else (TEST judged by `_check_count`)."""
    if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.For):
        return stmt.body[0]
    return None


def _check_count(phase: Phase, guard: ast.expr | None, ctx: code_straight.Context, name: str) -> str:
    """The COUNT of a tail `for` is a straight-line expression (`code_straight`), which may count the
    walked container too, of the shape `len(self.C) - R` (`_rest`); the `guard` of a guarded one is
    `len(self.C) > R`, the same R. Returns R, as written; FrameError naming what else either reads or how it
    differs. That C past R's requests are the requests of C not counted by R is read, not proved (in the
    reference, the post-condition ready_first: the ready requests are the first of `_running`)."""
    stmt, walked = phase.loop, phase.walked
    label = ast.unparse(stmt).splitlines()[0]
    count = stmt.iter.args[0].elts[0].value.args[1]  # type: ignore[attr-defined]
    why = code_straight.expression(count, ctx, also=walked) or _rest(count, walked, ctx)[1]
    if why is not None:
        raise FrameError(f"{name}: the count of `{label}`'s tail {why}")
    rest = _rest(count, walked, ctx)[0]
    if guard is None:
        return ast.unparse(rest)
    same = (isinstance(guard, ast.Compare) and len(guard.ops) == 1 and isinstance(guard.ops[0], ast.Gt)
            and _counts_self(guard.left, walked) and ast.dump(guard.comparators[0]) == ast.dump(rest))
    if not same:
        raise FrameError(f"{name}: the guard `if {ast.unparse(guard)}:` of `{label}` is not `len(self.{walked}) > "
                         f"{ast.unparse(rest)}`, that its tail is not empty")
    return ast.unparse(rest)


def _rest(count: ast.expr, walked: str, ctx: code_straight.Context) -> tuple[ast.expr, str | None]:
    """(R, None) if `count` is `len(self.C) - R` (C walked), R the count of a container a phase before
    walks: `len(self.D)`, `len(E)` of a map's list no loop has appended to, or a local bound once to one
    of those after the last phase (`_count_bound`); else (count, why not)."""
    if not (isinstance(count, ast.BinOp) and isinstance(count.op, ast.Sub) and _counts_self(count.left, walked)):
        return count, f"is no `len(self.{walked}) - R`: its tail is not {walked} past an earlier phase's requests"
    rest = count.right
    if _earlier_count(rest, ctx) or (isinstance(rest, ast.Name) and rest.id in ctx.counts):
        return rest, None
    return rest, (f"subtracts {ast.unparse(rest)}, no count of a container a phase before walks (nor a local "
                  "bound once to one, after the last phase)")


def _counts_self(node: ast.expr, attr: str) -> bool:
    """`node` is `len(self.<attr>)`."""
    return _call_of(node, "len") and _is_self_attr(node.args[0]) and node.args[0].attr == attr  # type: ignore[attr-defined]


def _earlier_count(node: ast.expr, ctx: code_straight.Context) -> bool:
    """`len(self.D)`, D a container a phase before walks, or `len(E)` of a map's list no loop has appended to."""
    if not _call_of(node, "len"):
        return False
    arg = node.args[0]  # type: ignore[attr-defined]
    if isinstance(arg, ast.Name):
        return arg.id in ctx.untouched
    return _is_self_attr(arg) and arg.attr in ctx.earlier and ctx.kinds.get(arg.attr) == "container"  # type: ignore[attr-defined]


def _bound_once(body: list[ast.stmt]) -> set[str]:
    """The names schedule()'s `body` binds (or deletes) at one place alone."""
    stores = [n.id for stmt in body for n in ast.walk(stmt)
              if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)]
    return {n for n in stores if stores.count(n) == 1}


def _count_bound(stmt: ast.stmt, ctx: code_straight.Context, once: set[str]) -> set[str]:
    """The local `stmt` binds to an earlier phase's count (`_earlier_count`), if it is bound nowhere else
    in schedule(): a tail's count may subtract it."""
    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id in once and _earlier_count(stmt.value, ctx)):
        return {stmt.targets[0].id}
    return set()


def _call_of(node: ast.expr, name: str, num_args: int = 1) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
            and len(node.args) == num_args and not node.keywords)


def _is_self_attr(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _check_body(stmt: ast.stmt, name: str, label: str, ctx: code_straight.Context) -> None:
    nodes = list(ast.walk(stmt))
    outside = code_straight.check_names(nodes, ctx.local, ctx.scope)
    if outside is not None:
        raise FrameError(f"{name}: `{label}` {outside}: it is no function of one iteration")
    refused = [type(n).__name__ for n in nodes if isinstance(n, REFUSED_IN_BODY)]
    refused += [n.id for n in nodes if isinstance(n, ast.Name) and (n.id in INTROSPECTION or n.id == "super"
                                                                     or n.id.startswith("_stallfree"))]
    refused += [n.attr for n in nodes if isinstance(n, ast.Attribute) and (n.attr in INTROSPECTION
                                                                           or n.attr.startswith("_stallfree"))]
    held = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    refused += ["self, not as an attribute's base" for n in nodes if isinstance(n, ast.Name) and n.id == "self"
                and isinstance(n.ctx, ast.Load) and id(n) not in held]
    refused += ["a rebinding of self" for n in nodes if isinstance(n, ast.Name) and n.id == "self"
                and not isinstance(n.ctx, ast.Load)]
    if refused:
        raise FrameError(f"{name}: `{label}` holds {refused[0]}: it is no function of one iteration")


def _bound(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


def _lists(stmt: ast.stmt) -> set[str]:
    """The names `stmt` binds to a new list (`[]`, `list(...)`): plan lists a later phase appends to."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return set()
    v = stmt.value
    is_list = isinstance(v, ast.List) or (isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
                                          and v.func.id == "list")
    return {stmt.targets[0].id} if is_list else set()


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _returns(tag: str | bool | None, names: tuple[str, ...]) -> ast.Return:
    head: list[ast.expr] = [] if tag is None else [ast.Constant(tag)]
    return ast.Return(ast.Tuple([*head, *(ast.Name(n, ast.Load()) for n in names)], ast.Load()))


def iteration(source: Source, phase: Phase) -> Callable[..., tuple[Any, ...]]:
    """One iteration of `phase`'s loop, compiled from its body: a function of (self, *carried, x) for a
    `for` (of (self, *carried) for a `while`, whose test it runs first) returning ("round" | "broke" |
    "exit", *carried): round when the body ends or continues, broke on a break, exit when the test fails."""
    assert phase.kind != "map"
    loop = copy.deepcopy(phase.loop)
    body = list(loop.body)
    if isinstance(loop, ast.While):
        body = [ast.If(ast.UnaryOp(ast.Not(), loop.test), [_returns("exit", phase.carried)], []), *body]
    once = ast.For(ast.Name(ONCE, ast.Store()), ast.Tuple([ast.Constant(0)], ast.Load()), body,
                   [_returns("round", phase.carried)])
    params = ("self", *phase.carried, *([phase.target] if phase.kind == "for" else []))
    return _compiled(source, params, [once, _returns("broke", phase.carried)], "_iteration")


def whole(source: Source, phase: Phase) -> Callable[..., tuple[Any, ...]]:
    """`phase`'s statement itself, as written, as a function of (self, *carried) returning (ended, *carried)
    (ended: the loop ran out without a break; a map returns (True, its list))."""
    stmt = copy.deepcopy(phase.node)
    if phase.kind == "map":
        return _compiled(source, ("self",), [stmt, _returns(True, (phase.target,))], "_whole")
    assert isinstance(stmt, ast.For | ast.While)
    if phase.tail:  # on a container holding one request, its tail is that request: the walk of its values
        stmt.iter = ast.Call(ast.Attribute(ast.Attribute(ast.Name("self", ast.Load()), phase.walked, ast.Load()),  # type: ignore[attr-defined]
                                           "values", ast.Load()), [], [])
    stmt.orelse = [ast.Assign([ast.Name(NATURAL, ast.Store())], ast.Constant(True))]
    start = ast.Assign([ast.Name(NATURAL, ast.Store())], ast.Constant(False))
    return _compiled(source, ("self", *phase.carried), [start, stmt, _returns(None, (NATURAL, *phase.carried))],
                     "_whole")


def test_of(source: Source, phase: Phase) -> Callable[..., Any]:
    """A while phase's test alone, as a function of (self, *carried)."""
    loop = phase.loop
    assert isinstance(loop, ast.While)
    return _compiled(source, ("self", *phase.carried), [ast.Return(copy.deepcopy(loop.test))], "_test")


def _compiled(source: Source, params: tuple[str, ...], body: list[ast.stmt], name: str) -> Callable[..., Any]:
    from .code_frame import framed_len  # the frame's len: a carried count where it counts a container

    fn = ast.parse(f"def {name}({', '.join(params)}): pass").body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body = body
    module = ast.Module(body=[fn], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, source.first_line - 1)
    namespace: dict[str, Any] = {}
    scope = {**source.globals, "len": framed_len}
    try:
        exec(compile(module, source.filename, "exec"), scope, namespace)
    except SyntaxError as error:
        raise FrameError(f"a phase's body is no function of one iteration ({error.msg})") from None
    return namespace[name]
