"""A symbolic state of a reference-shaped scheduler: its own class, its own containers, Z3 values.

`build` makes an instance of the scheduler class checked (the reference, or a copy of it) by its own
constructor, then fills the fields it declares (`reference/views.py`) with N requests, each waiting,
partial or ready as the shape says, whose lengths, progress and first-token step are unbounded
symbolic integers, as are B, S, K, the free KV and the step count. Nothing of the policy is written
here: which of these states are states of the scheduler is left to the reference's own
post-conditions (`reference.postconditions.broken`, run symbolically as the hypothesis), and what the
scheduler does from them to its own code.

Two things are not the code's own. Validation is skipped (`Request` and `Config` refuse anything but
an int): the types' minimums are assumed instead (`TYPE_ASSUMPTIONS`), and a waiting request is put
through `admissible` (add()'s NEVER-FIT check), so it is one add() would take. And the finishing
calendar is keyed by symbolic steps, which a dict cannot hash: `KeyedBySteps` is a dict whose keys are
compared with `==`, so each lookup branches on which key, if any, equals the one asked for.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import z3

from stallfree.spec.types import Config, Request, admissible

from .symexec import Explorer, Int

ROLES = ("ready", "partial", "waiting")  # the order of the requests: admission order, then arrival order
MISSING = object()


class KeyedBySteps:
    """A dict with symbolic keys (the reference's `_finishing`: step -> the requests it ends): each
    access compares the key asked for with every key held, in insertion order, so that the code's
    lookups branch on equality instead of hashing. Distinct keys stay distinct on every path."""

    def __init__(self) -> None:
        self._items: list[list[Any]] = []

    def _find(self, key: object) -> int | None:
        for i, (held, _) in enumerate(self._items):
            if held == key:
                return i
        return None

    def setdefault(self, key: object, default: Any) -> Any:
        i = self._find(key)
        if i is None:
            self._items.append([key, default])
            return default
        return self._items[i][1]

    def pop(self, key: object, default: Any = MISSING) -> Any:
        i = self._find(key)
        if i is None:
            if default is MISSING:
                raise KeyError(key)
            return default
        return self._items.pop(i)[1]

    def get(self, key: object, default: Any = None) -> Any:
        i = self._find(key)
        return default if i is None else self._items[i][1]

    def __getitem__(self, key: object) -> Any:
        i = self._find(key)
        if i is None:
            raise KeyError(key)
        return self._items[i][1]

    def __delitem__(self, key: object) -> None:
        self.pop(key)

    def __contains__(self, key: object) -> bool:
        return self._find(key) is not None

    def items(self) -> list[tuple[Any, Any]]:
        return [(k, v) for k, v in self._items]

    def values(self) -> list[Any]:
        return [v for _, v in self._items]

    def __iter__(self) -> Iterator[Any]:
        return iter([k for k, _ in self._items])

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True, slots=True)
class Shape:
    """How many requests are ready, partial and waiting (rids 0.. in that order: arrival order)."""

    ready: int
    partial: int
    waiting: int

    @property
    def size(self) -> int:
        return self.ready + self.partial + self.waiting

    def role(self, rid: int) -> str:
        return ROLES[(rid >= self.ready) + (rid >= self.ready + self.partial)]

    def label(self) -> str:
        return f"{self.ready} ready, {self.partial} partial, {self.waiting} waiting"


def shapes(n: int) -> list[Shape]:
    """Every shape of at most `n` requests (more than one partial included: the post-conditions refuse it)."""
    return [Shape(r, p, n_ - r - p) for n_ in range(n + 1) for r in range(n_ + 1) for p in range(n_ - r + 1)]


def names(shape: Shape) -> list[str]:
    """The symbolic integers of a shape's state: the config, the free KV, the steps, each request's."""
    out = ["B", "S", "K", "free_kv", "num_steps"]
    for rid in range(shape.size):
        out += [f"prompt_len{rid}", f"max_new{rid}"]
        out += {"ready": [f"first_token_step{rid}"], "partial": [f"num_prefilled{rid}"], "waiting": []}[shape.role(rid)]
    return out


def type_assumptions(v: dict[str, z3.ArithRef], shape: Shape) -> list[z3.BoolRef]:
    """What `Config`'s and `Request`'s validation guarantees (every limit and length at least 1) and
    what a step number is (at least 0): assumed, since the symbolic values skip that validation."""
    facts = [v["B"] >= 1, v["S"] >= 1, v["K"] >= 1, v["num_steps"] >= 0]
    for rid in range(shape.size):
        facts += [v[f"prompt_len{rid}"] >= 1, v[f"max_new{rid}"] >= 1]
        if shape.role(rid) == "ready":
            facts.append(v[f"first_token_step{rid}"] >= 0)
    return facts


def _unchecked(cls: type, **fields: object) -> Any:
    """A frozen value of `cls` with `fields`, its validation skipped (see the module's docstring)."""
    value = object.__new__(cls)
    for name, field_value in fields.items():
        object.__setattr__(value, name, field_value)
    return value


def home(cls: type) -> Any:
    """The module of `cls` or of the nearest class it derives from that holds a `Sequence` (the
    request class its code builds), or None: a subclass defined elsewhere uses its base's."""
    for base in cls.__mro__:
        module = sys.modules.get(base.__module__)
        if module is not None and hasattr(module, "Sequence"):
            return module
    return None


def build(cls: type, shape: Shape, v: dict[str, z3.ArithRef], ex: Explorer) -> Any:
    """An instance of `cls` in the symbolic state of `shape`; raises the scheduler's own error if a
    waiting request is one add() refuses (that path is no state of the scheduler)."""
    module = home(cls)
    sym = {name: Int(term, ex) for name, term in v.items()}
    s = cls.__new__(cls)
    cls.__init__(s, 1, 1, 1)
    s.config = _unchecked(Config, token_budget=sym["B"], max_seqs=sym["S"], kv_tokens=sym["K"])
    s._step.number, s._free_kv, s._finishing = sym["num_steps"], sym["free_kv"], KeyedBySteps()
    for rid in range(shape.size):
        request = _unchecked(Request, rid=rid, prompt_len=sym[f"prompt_len{rid}"], max_new=sym[f"max_new{rid}"])
        seq = module.Sequence(request)
        role = shape.role(rid)
        if role == "waiting":
            getattr(module, "admissible", admissible)(request, s.config)
            s._waiting[rid] = seq
            continue
        s._running[rid] = seq
        if role == "partial":
            seq.num_prefilled = sym[f"num_prefilled{rid}"]
        else:
            seq.num_prefilled, seq.first_token_step = request.prompt_len, sym[f"first_token_step{rid}"]
            s._ready[rid] = seq.decode
            s._finishing.setdefault(seq.first_token_step + request.max_new - 1, []).append(seq)
    return s
