"""Symbolic execution of a scheduler's own arithmetic methods, every path exhausted (as CrossHair runs
code, but to the end): the method runs on `Sym` values, which hold Z3 terms. Each comparison the code
branches on asks the path for a decision; a run records its decisions, and the search runs the method
again down every untried branch until none is left. Each path yields its condition and its result, so
a theorem about the method is proved of the very code that runs, for all values, by Z3.

Only what the methods use is supported: + - * // with ints or Syms, comparisons, min and max of two
(through the comparisons). Anything else (a Sym as a list index, a range bound) raises TypeError, so a
method outside the fragment is refused, never half-proved. Paths are bounded by `MAX_PATHS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

MAX_PATHS = 256  # a method with more paths than this is refused


class Refused(Exception):
    """The method left the fragment, or has too many paths: nothing is claimed of it."""


class _Path:
    """The decisions of one run: those forced by a prefix, then the first branch of each new one."""

    def __init__(self, forced: list[bool]) -> None:
        self.forced = forced
        self.taken: list[bool] = []
        self.conditions: list[z3.BoolRef] = []

    def decide(self, condition: z3.BoolRef) -> bool:
        choice = self.forced[len(self.taken)] if len(self.taken) < len(self.forced) else True
        self.taken.append(choice)
        self.conditions.append(condition if choice else z3.Not(condition))
        return choice


_current: list[_Path] = []  # the path being run (a stack of one while `explore` runs)


def _term(value: Any) -> z3.ArithRef:
    if isinstance(value, Sym):
        return value.term
    if isinstance(value, int) and not isinstance(value, bool):
        return z3.IntVal(value)
    raise TypeError(f"symbolic execution: {type(value).__name__} {value!r} is outside the fragment")


class SymBool:
    """A comparison's outcome: a decision of the path when the code branches on it."""

    __slots__ = ("term",)

    def __init__(self, term: z3.BoolRef) -> None:
        self.term = term

    def __bool__(self) -> bool:
        if not _current:
            raise TypeError("symbolic execution: a branch outside `explore`")
        return _current[-1].decide(self.term)


class Sym:
    """An integer the code computes with, held as a Z3 term."""

    __slots__ = ("term",)

    def __init__(self, term: z3.ArithRef) -> None:
        self.term = term

    def __add__(self, other: Any) -> Sym:
        return Sym(self.term + _term(other))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Sym:
        return Sym(self.term - _term(other))

    def __rsub__(self, other: Any) -> Sym:
        return Sym(_term(other) - self.term)

    def __mul__(self, other: Any) -> Sym:
        return Sym(self.term * _term(other))

    __rmul__ = __mul__

    def __neg__(self) -> Sym:
        return Sym(-self.term)

    def __floordiv__(self, other: Any) -> Sym:
        if not isinstance(other, int):
            raise TypeError("symbolic execution: // by a symbolic value is outside the fragment")
        return Sym(_floor_div(self.term, other))

    def __rfloordiv__(self, other: Any) -> Sym:
        raise TypeError("symbolic execution: // by a symbolic value is outside the fragment")

    def __lt__(self, other: Any) -> SymBool:
        return SymBool(self.term < _term(other))

    def __le__(self, other: Any) -> SymBool:
        return SymBool(self.term <= _term(other))

    def __gt__(self, other: Any) -> SymBool:
        return SymBool(self.term > _term(other))

    def __ge__(self, other: Any) -> SymBool:
        return SymBool(self.term >= _term(other))

    def __eq__(self, other: object) -> SymBool:  # type: ignore[override]
        return SymBool(self.term == _term(other))

    def __ne__(self, other: object) -> SymBool:  # type: ignore[override]
        return SymBool(self.term != _term(other))

    __hash__ = None  # type: ignore[assignment]

    def __index__(self) -> int:
        raise TypeError("symbolic execution: a symbolic value used as an index or range bound")


def _floor_div(term: z3.ArithRef, divisor: int) -> z3.ArithRef:
    """Python's // by a constant (rounds toward minus infinity; Z3's div rounds so for a positive divisor)."""
    if divisor == 0:
        raise TypeError("symbolic execution: // by zero")
    return term / divisor if divisor > 0 else -term / -divisor


@dataclass(frozen=True, slots=True)
class Outcome:
    condition: z3.BoolRef  # the path's condition
    result: Any  # what the method returned on it: a z3 term (from a Sym or SymBool) or a concrete value


def value(result: Any) -> Any:
    """A method's result as a Z3 term where it is symbolic."""
    if isinstance(result, Sym | SymBool):
        return result.term
    if isinstance(result, bool):
        return z3.BoolVal(result)
    if isinstance(result, int):
        return z3.IntVal(result)
    return result


def explore(run: Callable[[], Any]) -> list[Outcome]:
    """Every path of `run()` (which calls the method on Syms): its condition and its result."""
    out: list[Outcome] = []
    todo: list[list[bool]] = [[]]
    while todo:
        if len(out) >= MAX_PATHS:
            raise Refused(f"more than {MAX_PATHS} paths")
        forced = todo.pop()
        path = _Path(forced)
        _current.append(path)
        try:
            result = run()
        except TypeError as error:
            raise Refused(str(error)) from None
        finally:
            _current.pop()
        out.append(Outcome(z3.And(path.conditions) if path.conditions else z3.BoolVal(True), value(result)))
        for i in range(len(forced), len(path.taken)):  # each new decision's other branch
            todo.append([*path.taken[:i], not path.taken[i]])
    return out


def as_term(outcomes: list[Outcome]) -> Any:
    """The method's result as one term: If(path 1, result 1, If(path 2, ...)) (the paths partition)."""
    term = outcomes[-1].result
    for o in reversed(outcomes[:-1]):
        term = z3.If(o.condition, o.result, term)
    return term
