"""Symbolic execution of plain Python code with Z3 values, every path exhausted.

`Int` wraps a Z3 integer term: arithmetic gives another `Int`, a comparison gives a `Bool`, and
Python asks a `Bool` for its truth whenever the code branches (`if`, `while`, `and`, `min`, ...). The
`Explorer` answers that question: it follows one path at a time, taking at each branch the side the
current model of the path condition satisfies (so every path it follows is feasible, and its model is
a concrete witness), and records the branch. After each run it backtracks to the deepest branch whose
other side is still open, asks Z3 whether that side is feasible under the path prefix, and if so runs
the code again with the recorded decisions forced up to it. When no open branch is left, every
feasible path of the code has run once: a property asserted on every path holds for all values.

This is how `code_theorems` proves the rules of the code that runs (the reference's own `schedule()`,
`complete()`, `cancel()` and views), not of a transcription of it. The code needs no change as long as
it only adds, subtracts, multiplies, divides by a constant (`//`, `%`), compares and branches on the values
(which the reference does); anything else (hashing a value, `range` of it or an index, an `int()`, `//` by
a symbolic value) raises `TypeError` rather than guessing.

`paths` is the same search for one method's result (the prefix design's theorems, `prefix`): each
feasible path's condition and what the method returned on it, and `as_term` folds them into one term. A
method that leaves the fragment, or has more than `MAX_PATHS` paths, is `Refused`: nothing is claimed
of it, never a half-proof.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import z3

TIMEOUT_MS = 20_000  # one feasibility check; past it the branch counts as unknown, never as infeasible
MAX_PATHS = 256  # `paths` refuses a method with more feasible paths than this


class Refused(Exception):
    """The method left the fragment, or has too many paths: nothing is claimed of it."""


class Int:
    """A symbolic integer of one exploration: a Z3 term and the explorer that decides its branches."""

    __slots__ = ("ex", "term")
    __hash__ = None  # type: ignore[assignment]  # a symbolic value as a dict key would hide a branch

    def __init__(self, term: z3.ArithRef, ex: Explorer) -> None:
        self.term, self.ex = term, ex

    def _wrap(self, other: object) -> z3.ArithRef | None:
        if isinstance(other, Int):
            return other.term
        if isinstance(other, int):  # a bool too, as Python's arithmetic takes it
            return z3.IntVal(int(other))
        if isinstance(other, Bool):
            return z3.If(other.term, z3.IntVal(1), z3.IntVal(0))
        return None

    def _arith(self, other: object, op: Callable[[Any, Any], Any]) -> Int:
        term = self._wrap(other)
        if term is None:
            return NotImplemented
        return Int(op(self.term, term), self.ex)

    def __add__(self, o: object) -> Int: return self._arith(o, lambda a, b: a + b)
    def __radd__(self, o: object) -> Int: return self._arith(o, lambda a, b: b + a)
    def __sub__(self, o: object) -> Int: return self._arith(o, lambda a, b: a - b)
    def __rsub__(self, o: object) -> Int: return self._arith(o, lambda a, b: b - a)
    def __mul__(self, o: object) -> Int: return self._arith(o, lambda a, b: a * b)
    def __rmul__(self, o: object) -> Int: return self._arith(o, lambda a, b: b * a)
    def __neg__(self) -> Int: return Int(-self.term, self.ex)

    def __floordiv__(self, other: object) -> Int:
        """Python's // by a constant (toward minus infinity; Z3's div rounds so for a positive divisor)."""
        if not isinstance(other, int) or isinstance(other, bool) or other == 0:
            raise TypeError(f"symbolic execution: // by {other!r} is outside the fragment (a nonzero int only)")
        return Int(self.term / other if other > 0 else -self.term / -other, self.ex)

    def __mod__(self, other: object) -> Int:
        """Python's % by a positive constant (the floor modulus, which Z3's mod is for a positive divisor):
        the aligned variant's whole blocks (`aligned_chunk`)."""
        if not isinstance(other, int) or isinstance(other, bool) or other <= 0:
            raise TypeError(f"symbolic execution: % by {other!r} is outside the fragment (a positive int only)")
        return Int(self.term % other, self.ex)

    def __rmod__(self, other: object) -> Int:
        raise TypeError("symbolic execution: % by a symbolic value is outside the fragment")

    def __rfloordiv__(self, other: object) -> Int:
        raise TypeError("symbolic execution: // by a symbolic value is outside the fragment")

    def __index__(self) -> int:
        raise TypeError("symbolic execution: a symbolic value used as an index or range bound")

    def _compare(self, other: object, op: Callable[[Any, Any], Any]) -> Bool:
        term = self._wrap(other)
        if term is None:
            return NotImplemented
        return Bool(op(self.term, term), self.ex)

    def __lt__(self, o: object) -> Bool: return self._compare(o, lambda a, b: a < b)
    def __le__(self, o: object) -> Bool: return self._compare(o, lambda a, b: a <= b)
    def __gt__(self, o: object) -> Bool: return self._compare(o, lambda a, b: a > b)
    def __ge__(self, o: object) -> Bool: return self._compare(o, lambda a, b: a >= b)

    def __eq__(self, o: object) -> Bool | bool:  # type: ignore[override]
        result = self._compare(o, lambda a, b: a == b)
        return False if result is NotImplemented else result  # never equal to None or a str

    def __ne__(self, o: object) -> Bool | bool:  # type: ignore[override]
        result = self._compare(o, lambda a, b: a != b)
        return True if result is NotImplemented else result

    def __bool__(self) -> bool:
        return self.ex.decide(self.term != 0)

    def __repr__(self) -> str:  # its value on the path being run (messages name concrete values)
        return str(self.ex.model.eval(self.term, model_completion=True))


class Bool:
    """A symbolic condition: its truth, asked by a branch, is the explorer's decision."""

    __slots__ = ("ex", "term")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, term: z3.BoolRef, ex: Explorer) -> None:
        self.term, self.ex = term, ex

    def __bool__(self) -> bool:
        return self.ex.decide(self.term)

    def __eq__(self, o: object) -> bool:  # type: ignore[override]  # identity would answer silently wrong
        raise TypeError("comparing two symbolic conditions is not supported: branch on each instead")

    def __ne__(self, o: object) -> bool:  # type: ignore[override]
        raise TypeError("comparing two symbolic conditions is not supported: branch on each instead")

    def __radd__(self, o: object) -> Int:
        return Int(z3.If(self.term, 1, 0), self.ex) + o  # type: ignore[operator]

    def __rsub__(self, o: object) -> Int:
        return o - Int(z3.If(self.term, 1, 0), self.ex)  # type: ignore[operator]

    def __repr__(self) -> str:
        return str(self.ex.model.eval(self.term, model_completion=True))


@dataclass(slots=True)
class Branch:
    taken: bool
    open: bool  # the other side is not yet explored (it may be infeasible: checked on backtracking)
    condition: z3.BoolRef


@dataclass(slots=True)
class Explorer:
    """Decides every branch of one run and, across runs, walks every feasible path once. The solver
    holds the assumptions, then one scope per branch of the current path with the side taken."""

    solver: z3.Solver
    model: z3.ModelRef
    branches: list[Branch] = field(default_factory=list)
    forced: int = 0  # how many of `branches` the current run replays
    depth: int = 0  # branches taken in the current run
    unknown: int = 0  # branches whose other side Z3 could not decide (explored as if feasible)
    checks: int = 0

    def decide(self, condition: z3.BoolRef) -> bool:
        if self.depth < self.forced:
            branch = self.branches[self.depth]
        else:
            taken = z3.is_true(self.model.eval(condition, model_completion=True))
            branch = Branch(taken, True, condition)
            self.branches.append(branch)
            self.solver.push()
            self.solver.add(condition if taken else z3.Not(condition))
        self.depth += 1
        return branch.taken

    def backtrack(self) -> bool:
        """Make the next run take the deepest open branch's other side, if feasible; False when none is left."""
        while self.branches:
            branch = self.branches[-1]
            self.solver.pop()
            if not branch.open:
                self.branches.pop()
                continue
            branch.open, branch.taken = False, not branch.taken
            self.solver.push()
            self.solver.add(branch.condition if branch.taken else z3.Not(branch.condition))
            self.checks += 1
            result = self.solver.check()
            if result == z3.sat:
                self.model, self.forced, self.depth = self.solver.model(), len(self.branches), 0
                return True
            if result == z3.unknown:
                self.unknown += 1
            self.solver.pop()
            self.branches.pop()
        return False


def variables(names: list[str]) -> dict[str, z3.ArithRef]:
    return {name: z3.Int(name) for name in names}


def explore(program: Callable[[Explorer], Any], assumptions: list[z3.BoolRef],
            max_paths: int) -> tuple[list[Any], Explorer | None, bool]:
    """Run `program(explorer)` once per feasible path of it under `assumptions`; return what each run
    returned (with its model: see `Explorer.model`), the explorer, and whether every path was run (False:
    `max_paths` reached first). With unsatisfiable assumptions nothing runs and the explorer is None."""
    solver = z3.Solver()
    solver.set("timeout", TIMEOUT_MS)
    solver.add(*assumptions)
    if solver.check() != z3.sat:
        return [], None, True
    ex = Explorer(solver, solver.model())
    results = []
    while True:
        ex.depth = 0
        results.append(program(ex))
        if len(results) >= max_paths:
            return results, ex, not ex.backtrack()
        if not ex.backtrack():
            return results, ex, True


@dataclass(frozen=True, slots=True)
class Outcome:
    condition: z3.BoolRef  # the path's condition
    result: Any  # what the method returned on it: a Z3 term where it was symbolic, else the value itself


def value(result: Any) -> Any:
    """A method's result as a Z3 term where it is symbolic (or a plain int or bool)."""
    if isinstance(result, Int | Bool):
        return result.term
    if isinstance(result, bool):
        return z3.BoolVal(result)
    if isinstance(result, int):
        return z3.IntVal(result)
    return result


def paths(run: Callable[[Explorer], Any], assumptions: tuple[z3.BoolRef, ...] = (),
          max_paths: int = MAX_PATHS) -> list[Outcome]:
    """Every feasible path of `run(explorer)` (which calls a method on `Int`s of that explorer): its
    condition and its result. Raises `Refused` if the method leaves the fragment or has more than
    `max_paths` paths, or if a branch could not be decided."""

    def program(ex: Explorer) -> Outcome:
        result = value(run(ex))
        taken = [b.condition if b.taken else z3.Not(b.condition) for b in ex.branches[:ex.depth]]
        return Outcome(z3.And(taken) if taken else z3.BoolVal(True), result)

    try:
        outcomes, ex, complete = explore(program, list(assumptions), max_paths)
    except TypeError as error:
        raise Refused(str(error)) from None
    if not complete:
        raise Refused(f"more than {max_paths} paths")
    if ex is not None and ex.unknown:
        raise Refused(f"{ex.unknown} branch(es) Z3 could not decide")
    return outcomes


def as_term(outcomes: list[Outcome]) -> Any:
    """The method's result as one term: If(path 1, result 1, If(path 2, ...)); the feasible paths cover
    every value, so the last is the rest."""
    term = outcomes[-1].result
    for o in reversed(outcomes[:-1]):
        term = z3.If(o.condition, o.result, term)
    return term
