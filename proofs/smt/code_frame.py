"""The frame one iteration of a phase loop of schedule() runs in (`code_phases`), and its every path
as Z3 terms: the premise of FOLD (code, induction, any N) (`code_fold_induction`).

A phase loop is a fold if each iteration reads nothing but its own request, the config and the carried
values, writes nothing but its own entry and the carried values, and treats every iteration alike. The
iteration compiled from the loop's body runs here on symbolic values (`symexec`: every feasible path,
the branches decided by Z3) with a stand-in for `self` (`FramedSelf`) that shows only:

- the config, with symbolic limits; each integer attribute the loop names (the free KV), carried;
- the container the loop walks: nothing of it in a `for` (its values come one at a time as the loop
  variable); in a `while`, the head of its line, `self.L[0]`, and `self.L.popleft()`, once, and that
  the line is not empty before it is taken (`Line`): reading behind the head, its length, or the
  line after the head is taken raises;
- each container a phase before this one walks: its count, carried (`len(self.C)`, through the
  frame's `len`), and one write, of the own request at its own rid (`Counted`);
- schedule()'s locals the loop carries: integers, symbolic; a plan list, which takes one entry of
  the own request and shows nothing back (`Appends`);
- the own request: the scheduler's own `Sequence` (or the value it holds for it, such as its decode
  entry: read off a probe run of add/schedule/complete), its lengths symbolic, its rid opaque (`Rid`:
  a key and an entry's rid, no value); it must be the same after. Its fields None are those of one of
  the walked container's values in the probe run: the iteration runs once for each pattern of None
  fields they show (`_running`: a ready request and a partial one), so a branch only one kind takes runs.

Anything else the body touches raises `FrameError`; so does any other error of one iteration (a local
read before it is written: no local carries over), a `while` iteration that goes round without taking
its request, the config or an attribute of the scheduler's, sequence's, request's or config's class
changed (by value: a list a class holds, filled in place, counts).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from stallfree.spec.types import Config, Request

from .code_phases import Phase, Source, probe_state
from .fold_frame import FrameError
from .symexec import Bool, Explorer, Int, Refused, paths
from .symstate import _unchecked, home

PLANNED, N, TAKEN, DONE = "planned", "n", "taken", "done"  # an entry's parts, and the loop's end
PATTERN = "probe.pattern"  # which of its container's patterns of None fields the own request has (`probe`)


class Rid:
    """The own request's rid: its identity keys its entries; any use as a value raises (equality and
    hashing too, which would answer by identity, not as the int it stands for would)."""

    __slots__ = ()


def _refuse(name: str) -> Callable[..., Any]:
    def refused(self: Rid, *args: Any) -> Any:
        raise FrameError(f"the body uses its request's rid as a value ({name})")
    return refused


for _name in ("__bool__", "__index__", "__int__", "__float__", "__lt__", "__le__", "__gt__", "__ge__", "__add__",
              "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__mod__", "__floordiv__", "__neg__",
              "__format__", "__str__", "__repr__", "__eq__", "__ne__", "__hash__"):
    setattr(Rid, _name, _refuse(_name))


class Holding:
    """The container a `for` or map walks, holding the own request alone (the loop run on one request)."""

    def __init__(self, name: str, own: Any) -> None:
        self.name, self.own = name, own

    def values(self) -> list[Any]:
        return [self.own]

    def __getattr__(self, name: str) -> Any:
        raise FrameError(f"the loop reads self.{self.name}.{name}, not its values")


class Line:
    """The line a `while` walks, as one iteration sees it: its head, taken once."""

    def __init__(self, name: str, head: Any, rid: Any = None) -> None:
        self.name, self.head, self.rid, self.taken = name, head, rid, False

    def __bool__(self) -> bool:
        if self.taken:
            raise FrameError(f"the body asks whether self.{self.name} is empty after taking its request")
        return True

    def __getitem__(self, key: Any) -> Any:
        if type(key) is int and key == 0 and not self.taken:
            return self.head
        shown = "0 after taking its request" if type(key) is int and key == 0 else repr(key)
        raise FrameError(f"the body reads self.{self.name}[{shown}], not the head of its line")

    def popleft(self) -> Any:
        if self.taken:
            raise FrameError(f"the body takes a second request off self.{self.name}")
        self.taken = True
        return self.head

    def popitem(self, last: bool = True) -> Any:
        """An ordered dict's `popitem(last=False)`: its head's rid (opaque) and its head, taken."""
        if last is not False:
            raise FrameError(f"the body takes the newest request off self.{self.name}, not its head")
        return self.rid, self.popleft()

    def values(self) -> Any:
        """An ordered dict's values, as far as its head: `next(iter(self.L.values()))`."""
        return _HeadOnly(self)

    def __len__(self) -> int:
        raise FrameError(f"the body reads the length of self.{self.name}, the line it walks")

    def __iter__(self) -> Any:
        raise FrameError(f"the body iterates over self.{self.name}, the line it walks")

    def __getattr__(self, name: str) -> Any:
        raise FrameError(f"the body calls self.{self.name}.{name}, not popleft or the head of its line")


class _HeadOnly:
    """A line's values, of which one iteration may read the first alone, before taking it."""

    def __init__(self, line: Line) -> None:
        self.line, self.read = line, False

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        if self.read:
            raise FrameError(f"the body reads behind the head of self.{self.line.name}")
        self.read = True
        return self.line[0]

    def __getattr__(self, name: str) -> Any:
        raise FrameError(f"the body calls self.{self.line.name}.values().{name}, not the head of its line")


class LineOfOne(deque):  # type: ignore[type-arg]
    """The line a `while` walks, holding the own request alone (the loop run on one request): a deque,
    and an ordered dict's head taken (`popitem(last=False)`: with its opaque rid) and values."""

    rid: Any = None

    def popitem(self, last: bool = True) -> Any:
        if last is not False:
            raise FrameError("the body takes the newest request off its line, not its head")
        return self.rid, self.popleft()

    def values(self) -> list[Any]:
        return list(self)


def _line_of_one(own: Any, rid: Rid) -> LineOfOne:
    line = LineOfOne([own])
    line.rid = rid
    return line


class Counted:
    """A container an earlier phase walks: its count, carried, and one write of the own request."""

    def __init__(self, name: str, count: Int, rid: Rid, own: Any) -> None:
        self.name, self.count, self.rid, self.own, self.placed = name, count, rid, own, False

    def __setitem__(self, key: Any, value: Any) -> None:
        if key is not self.rid or value is not self.own or self.placed:
            raise FrameError(f"the body writes self.{self.name}[...], not its own request once at its own rid")
        self.placed, self.count = True, self.count + 1  # its rid is in no other container (the post-conditions)

    def __bool__(self) -> bool:
        return bool(self.count)

    def _refused(self, *args: Any) -> Any:
        raise FrameError(f"the body reads self.{self.name}, whose requests are another phase's (its count alone)")

    __getitem__ = __contains__ = __iter__ = __len__ = __delitem__ = _refused

    def __getattr__(self, name: str) -> Any:
        raise FrameError(f"the body reads self.{self.name}.{name}, whose requests are another phase's")


class Appends:
    """A plan list the loop carries: one entry of the own request appended, nothing shown back."""

    def __init__(self, name: str, rid: Rid) -> None:
        self.name, self.rid, self.entries = name, rid, []

    def append(self, value: Any) -> None:
        if not (isinstance(value, tuple) and len(value) == 2 and value[0] is self.rid):
            raise FrameError(f"the body appends a {type(value).__name__} to {self.name}, not an entry of its request")
        if self.entries:
            raise FrameError(f"the body appends a second entry to {self.name}")
        self.entries.append(value)

    def _refused(self, *args: Any) -> Any:
        raise FrameError(f"the body reads {self.name}, the entries before its own")

    __getitem__ = __iter__ = __len__ = __contains__ = __bool__ = _refused

    def __getattr__(self, name: str) -> Any:
        raise FrameError(f"the body calls {self.name}.{name}, not append")


class FramedSelf:
    """`self` as one iteration may see it (its views); anything else named raises, saying why."""

    __slots__ = ("_stallfree_scalars", "_stallfree_views", "_stallfree_why")

    def __init__(self, views: dict[str, Any], why: dict[str, str], scalars: set[str]) -> None:
        object.__setattr__(self, "_stallfree_views", views)
        object.__setattr__(self, "_stallfree_why", why)
        object.__setattr__(self, "_stallfree_scalars", scalars)

    def __getattr__(self, name: str) -> Any:
        if name in self._stallfree_views:
            return self._stallfree_views[name]
        raise FrameError(f"the body reads self.{name}: {self._stallfree_why.get(name, 'not in its frame')}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._stallfree_scalars:
            raise FrameError(f"the body sets self.{name}, not a carried value")
        self._stallfree_views[name] = value

    def __delattr__(self, name: str) -> None:
        raise FrameError(f"the body deletes self.{name}")


def framed_len(value: Any) -> Any:
    """len() in a compiled phase: a Counted container's carried count, else Python's."""
    return value.count if isinstance(value, Counted) else len(value)


@dataclass(frozen=True)
class Inputs:
    """The Z3 constants one iteration starts from: the config, the carried values, the own request's fields."""

    config: dict[str, z3.ArithRef]
    carried: dict[str, z3.ArithRef]  # "local.left", "self._free_kv", "len._ready", ...
    fields: dict[str, z3.ArithRef]  # "request.prompt_len", "seq.num_prefilled", ..., and its PATTERN


def carried_keys(phase: Phase, kinds: dict[str, str]) -> list[str]:
    """The carried values of `phase`, named: its integer locals, integer attributes, earlier counts."""
    keys = [f"local.{c}" for c in phase.carried if c not in phase.plans]
    keys += [f"self.{a}" for a in sorted(phase.attributes) if kinds.get(a) == "scalar"]
    return keys + [f"len.{c}" for c in phase.earlier if c in phase.attributes]


def own_fields(cls: type) -> list[str]:
    """The own request's symbolic fields: the request's but its rid, and the sequence's integer ones."""
    names = [f"request.{f.name}" for f in dataclasses.fields(Request) if f.name != "rid"]
    sequence = home(cls).Sequence
    return names + [f"seq.{f.name}" for f in dataclasses.fields(sequence) if f.init and f.name != "request"]


def inputs(prefix: str, phase: Phase, source: Source, cls: type) -> Inputs:
    config = {f.name: z3.Int(f"{prefix}config.{f.name}") for f in dataclasses.fields(Config)}
    carried = {k: z3.Int(f"{prefix}in.{k}") for k in carried_keys(phase, source.kinds)}
    fields = {k: z3.Int(f"{prefix}own.{k}") for k in [*own_fields(cls), PATTERN]}
    return Inputs(config, carried, fields)


@dataclass(frozen=True)
class Probe:
    """What a container's values are of their request (None: the sequence itself; else the name of the
    sequence's attribute it holds), and that sequence on a probe run (its fields None or not)."""

    attribute: str | None
    sequence: Any


Probes = dict[str, tuple[Probe, ...]]  # each container's kinds of request, by its attribute


def probe(cls: type) -> Probes:
    """A state with one ready, one partial and one waiting request, reached by the scheduler's own add,
    schedule and complete; for each container holding one, what it holds of them: one Probe for each
    pattern of None fields its values show, in order (`_running` holds a ready request, its first-token
    step set, and a partial one, its step None: an iteration runs once for each). A container one of
    whose values is no request nor a request's attribute is left out (the loop walking it is refused)."""
    s = probe_state(cls)
    sequence = home(cls).Sequence
    held = {name: list(v.values()) if isinstance(v, dict) else list(v) for name, v in vars(s).items()
            if isinstance(v, (dict, deque, list))}
    sequences = [x for values in held.values() for x in values if isinstance(x, sequence)]
    out: Probes = {}
    for name, values in held.items():
        found = [_probe_of(v, sequence, sequences) for v in values]
        if not values or None in found:
            continue
        patterns: dict[tuple[Any, ...], Probe] = {}
        for kind in found:
            patterns.setdefault(_pattern(kind), kind)  # type: ignore[arg-type]
        out[name] = tuple(patterns.values())
    return out


def _probe_of(value: Any, sequence: type, sequences: list[Any]) -> Probe | None:
    """What `value` is of its request: the sequence itself, or the attribute of a sequence it is; None if neither."""
    if isinstance(value, sequence):
        return Probe(None, value)
    found = [(f.name, q) for q in sequences for f in dataclasses.fields(q) if getattr(q, f.name) is value]
    return Probe(*found[0]) if found else None


def _pattern(kind: Probe) -> tuple[Any, ...]:
    """What the frame's own request takes of a probe's: the attribute held, and which fields are None."""
    seq = kind.sequence
    return (kind.attribute, *(getattr(seq, f.name) is None for f in dataclasses.fields(seq)
                              if f.init and f.name != "request"))


def own_request(cls: type, kind: Probe, fields: dict[str, z3.ArithRef], ex: Explorer, rid: Rid) -> tuple[Any, Any]:
    """(the value the walked container holds for the own request, its sequence): the scheduler's own
    Sequence, its lengths symbolic, None where the probe's is None, its rid `rid`."""
    sym = {k: Int(t, ex) for k, t in fields.items() if k != PATTERN}
    request = _unchecked(Request, rid=rid, **{f.name: sym[f"request.{f.name}"] for f in dataclasses.fields(Request)
                                              if f.name != "rid"})
    seq = home(cls).Sequence(request)
    for f in dataclasses.fields(seq):
        if f.init and f.name != "request":
            setattr(seq, f.name, None if getattr(kind.sequence, f.name) is None else sym[f"seq.{f.name}"])
    return (seq if kind.attribute is None else getattr(seq, kind.attribute)), seq


def _views(phase: Phase, source: Source, ins: Inputs, ex: Explorer, rid: Rid, own: Any,
           mode: str) -> tuple[dict[str, Any], dict[str, str], set[str]]:
    """The attributes `FramedSelf` shows in `mode` ("T": one iteration; "L1": the loop on one request;
    "empty": a while's test on its empty line), why it hides the others, and the integers it carries."""
    views: dict[str, Any] = {}
    why: dict[str, str] = {}
    scalars: set[str] = set()
    for a in sorted(phase.attributes):
        kind = source.kinds.get(a, "other")
        if kind == "config":
            views[a] = _unchecked(Config, **{k: Int(t, ex) for k, t in ins.config.items()})
        elif kind == "scalar":
            views[a], _ = Int(ins.carried[f"self.{a}"], ex), scalars.add(a)
        elif kind == "container" and a == phase.walked:
            if mode == "empty":
                views[a] = LineOfOne()
            elif mode == "L1":
                views[a] = _line_of_one(own, rid) if phase.kind == "while" else Holding(a, own)
            elif phase.kind == "while":
                views[a] = Line(a, own, rid)
            else:
                why[a] = "the container its loop walks (its requests come one at a time, as the loop's variable)"
        elif kind == "container" and a in phase.earlier:
            views[a] = Counted(a, Int(ins.carried[f"len.{a}"], ex), rid, own)
        elif kind == "container":
            why[a] = "a container of requests no phase before this one walks"
        else:
            why[a] = "a method or property of the scheduler" if kind == "method" else "not a value of its frame"
    return views, why, scalars


def _term(value: Any, want: str, what: str) -> z3.ExprRef:
    """`value` as a Z3 term of sort `want` ("int" or "bool"); FrameError if it is neither."""
    if isinstance(value, Int | Bool):
        term = value.term
    elif isinstance(value, bool | int):
        term = z3.BoolVal(value) if isinstance(value, bool) else z3.IntVal(value)
    else:
        raise FrameError(f"one iteration leaves {what} a {type(value).__name__}, no integer or truth value")
    if want == "int" and z3.is_bool(term):
        return z3.If(term, z3.IntVal(1), z3.IntVal(0))
    if want == "bool" and not z3.is_bool(term):
        return term != 0
    return term


def _value(v: Any, depth: int = 0) -> Any:
    """`v` by value, not identity, as far as a container or an instance's fields go (a list a class
    holds, filled in place, reads changed)."""
    if depth > 8 or isinstance(v, type) or (callable(v) and not hasattr(v, "__dict__")):
        return ("is", id(v))
    if isinstance(v, list | tuple | deque):
        return (type(v), tuple(_value(x, depth + 1) for x in v))
    if isinstance(v, dict):
        return (dict, tuple((repr(k), _value(x, depth + 1)) for k, x in v.items()))
    if isinstance(v, set | frozenset):
        return (type(v), frozenset(map(repr, v)))
    if hasattr(v, "__dict__") and not callable(v):
        return (type(v), _value(dict(vars(v)), depth + 1))
    return ("is", id(v))


def _class_state(cls: type, config: Any = None) -> list[Any]:
    """The scheduler's, its sequence's, the request's and the config's classes, each attribute by
    value, and the frame's config, each field by identity: what an iteration must leave as it found."""
    classes = {c for k in (cls, home(cls).Sequence, Request, Config) for c in k.__mro__ if c is not object}
    held = [(c.__qualname__, k, _value(v)) for c in sorted(classes, key=lambda c: c.__qualname__)
            for k, v in vars(c).items() if k not in ("__dict__", "__weakref__", "__doc__")]
    fields = [] if config is None else [id(getattr(config, f.name)) for f in dataclasses.fields(Config)]
    return [held, fields]


def _own_state(seq: Any) -> list[Any]:
    return [getattr(seq, f.name) for f in dataclasses.fields(seq)] + [getattr(seq.request, f.name)
                                                                      for f in dataclasses.fields(seq.request)]


def entry_keys(phase: Phase) -> list[str]:
    """What an iteration writes of its own request: planned, its entry's n, taken off the line, placed."""
    return [PLANNED, N, TAKEN, *(f"placed.{c}" for c in phase.earlier if c in phase.attributes)]


def sort_of(key: str) -> str:
    return "int" if key == N or key.split(".")[0] in ("local", "self", "len") else "bool"


def _run(ex: Explorer, cls: type, source: Source, phase: Phase, fn: Callable[..., Any], ins: Inputs,
         kind: Probe, mode: str) -> dict[str, z3.ExprRef]:
    """One path of `fn` (an iteration, or the loop on one request) in the frame: its record, as terms."""
    rid = Rid()
    own, seq = own_request(cls, kind, ins.fields, ex, rid)
    views, why, scalars = _views(phase, source, ins, ex, rid, own, mode)
    plans = {p: Appends(p, rid) for p in phase.plans}
    args = [plans[c] if c in plans else Int(ins.carried[f"local.{c}"], ex) for c in phase.carried]
    config = next((v for v in views.values() if isinstance(v, Config)), None)
    seq_before, class_before = _own_state(seq), _class_state(cls, config)
    try:
        out = fn(FramedSelf(views, why, scalars), *args, *([own] if mode == "T" and phase.kind == "for" else []))
        if mode == "empty":  # the test alone, on the emptied line: whether it holds, what it leaves
            kept = [k for k in carried_keys(phase, source.kinds) if not k.startswith("local.")]
            return {"holds": z3.BoolVal(bool(out)), **_record(phase, source, views, {}, {}, False, False, kept)}
    except FrameError:
        raise
    except Exception as error:  # an UnboundLocalError (a local carried over), a super() with no cell, ...
        raise FrameError(f"`{phase.label}`: one iteration alone raises {type(error).__name__}: {error}") from None
    if any(a is not b for a, b in zip(_own_state(seq), seq_before, strict=True)):
        raise FrameError(f"`{phase.label}`: an iteration changes its own request's sequence")
    if _class_state(cls, config) != class_before:
        raise FrameError(f"`{phase.label}`: an iteration changes the config, or a class of the scheduler, its "
                         "sequence, request or config")
    returned = {} if phase.kind == "map" else dict(zip(phase.carried, out[1:], strict=True))
    taken = views[phase.walked].taken if mode == "T" and phase.kind == "while" else (
        phase.kind == "while" and len(views[phase.walked]) == 0)
    if phase.kind == "map":  # the list it builds holds the own request's entry, alone
        entries = out[1]
        plans = {"": Appends(phase.target, rid)}
        for value in entries:
            plans[""].append(value)
        done: Any = False
    elif mode == "T":
        if out[0] == "round" and phase.kind == "while" and not taken:
            raise FrameError(f"`{phase.label}`: a path goes round without taking its request off self.{phase.walked}")
        done = out[0] != "round"
    else:
        done = not out[0] or (phase.kind == "while" and not taken)
    return _record(phase, source, views, returned, plans, taken, done)


def _record(phase: Phase, source: Source, views: dict[str, Any], returned: dict[str, Any],
            plans: dict[str, Appends], taken: bool, done: bool, keys: list[str] | None = None) -> dict[str, z3.ExprRef]:
    values: dict[str, Any] = {}
    for key in carried_keys(phase, source.kinds) if keys is None else keys:
        where, name = key.split(".", 1)
        values[key] = returned[name] if where == "local" else views[name] if where == "self" else views[name].count
    entries = [e for p in plans.values() for e in p.entries]
    if len(entries) > 1:
        raise FrameError(f"`{phase.label}`: an iteration appends more than one entry")
    values |= {DONE: done, PLANNED: bool(entries), N: entries[0][1] if entries else 0, TAKEN: taken}
    values |= {k: views[k.split(".", 1)[1]].placed for k in entry_keys(phase) if k.startswith("placed.")}
    return {k: _term(v, sort_of(k), k) for k, v in values.items()}


MAX_PATHS = 64  # an iteration with more feasible paths is refused (a count, not seconds)


def terms(cls: type, source: Source, phase: Phase, fn: Callable[..., Any] | None, ins: Inputs,
          kinds: Probes, mode: str) -> dict[str, z3.ExprRef]:
    """Every path of `fn` in the frame, folded into one term per record key (If(path 1, ..., If(path 2,
    ...))), once for each pattern of None fields the walked container's values show (`probe`), chosen
    by the own request's `PATTERN` (any value: one of them); for a map's iteration (`fn` None), by
    list()'s semantics: its own value appended."""
    found = kinds.get(phase.walked)
    if not found:
        raise FrameError(f"`{phase.label}`: the probe run holds no request in self.{phase.walked}")
    each = [_terms(cls, source, phase, fn, ins, kind, mode) for kind in found]
    out = each[-1]
    for i in reversed(range(len(each) - 1)):
        if each[i].keys() != out.keys():
            raise FrameError(f"`{phase.label}`: its iteration leaves other values for another kind of request")
        out = {k: z3.If(ins.fields[PATTERN] == i, each[i][k], t) for k, t in out.items()}
    return out


def _terms(cls: type, source: Source, phase: Phase, fn: Callable[..., Any] | None, ins: Inputs, kind: Probe,
           mode: str) -> dict[str, z3.ExprRef]:
    """`terms` for an own request like `kind`'s."""
    if fn is None:
        own = own_request(cls, kind, ins.fields, Explorer(z3.Solver(), z3.Model()), Rid())[0]
        if not (isinstance(own, tuple) and len(own) == 2):
            raise FrameError(f"`{phase.label}`: self.{phase.walked} holds no plan entries")
        return {DONE: z3.BoolVal(False), PLANNED: z3.BoolVal(True), N: _term(own[1], "int", N),
                TAKEN: z3.BoolVal(False)}
    try:
        found = paths(lambda ex: _run(ex, cls, source, phase, fn, ins, kind, mode), max_paths=MAX_PATHS)
    except Refused as error:
        raise FrameError(f"`{phase.label}`: its iteration cannot be run symbolically ({error})") from None
    out = dict(found[-1].result)
    for o in reversed(found[:-1]):
        out = {k: z3.If(o.condition, o.result[k], t) for k, t in out.items()}
    return out
