"""FOLD (code): the scheduler's own `schedule()` is a fold over its requests, checked on the code that
runs, with symbolic values, every path, at N = 3.

The loop inductions reason about one request at a time (`fold`, about the transcription): they are
sound for a policy whose decision about a request depends on it and the requests before it in the
order the policy visits them (ready, then partial, then waiting: admission order, then arrival order),
never on one after it. A policy with that property is a fold (its state: what the requests before left)
and a fold has it, so this is what is checked, of the code: from every state of at most N requests
the post-conditions allow, for every k < N, `schedule()` on the state cut to its first k requests plans
exactly the entries the whole state's plan gives those k, in the same order. The cut state is the same
symbolic values less the requests after k (a running one's reservation back in the free KV, so that it
is a state of the scheduler too: the post-conditions are checked of it). Lengths, B, S, K, the free KV
and the step count unbounded; N bounds only the requests, so a look-ahead past the third request is
not seen here (`fold_stepwise` checks N = 12 on concrete states).

A path outside the fragment, a branch Z3 could not decide, a cut state the post-conditions refuse
(which would be a flaw of the cut, not of the scheduler), or schedule() raising on an allowed state
(a guard on a count: no plan to compare) leaves the theorem unknown, never holding.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from stallfree.reference import postconditions
from stallfree.spec.verdict import Verdict

from .code_theorems import Outcome, allowed_state
from .symexec import Explorer, explore, variables
from .symstate import Shape, build, names, shapes, type_assumptions

NAME = "FOLD (code)"
DEFAULT_N = 3
MAX_PATHS = 200_000  # per shape: past it the theorem is unknown (a count, not seconds)
CUT_REFUSED = "CUT"  # a path whose cut state the post-conditions refuse: undecided


def cut(shape: Shape, k: int) -> Shape:
    """The shape of the first `k` requests (rids 0..k-1: the ready, then the partial, then the waiting)."""
    ready = min(shape.ready, k)
    partial = min(shape.partial, k - ready)
    return Shape(ready, partial, k - ready - partial)


def cut_values(shape: Shape, k: int, v: dict[str, z3.ArithRef]) -> dict[str, Any]:
    """The values of the cut state: the same, the free KV plus the reservations of the running requests cut."""
    freed = [v[f"prompt_len{rid}"] + v[f"max_new{rid}"] for rid in range(k, shape.size) if shape.role(rid) != "waiting"]
    return {**v, "free_kv": v["free_kv"] + z3.Sum(freed) if freed else v["free_kv"]}


def same_prefix(plan: Any, cut_plan: Any, k: int) -> str | None:
    """None if the plan's entries for rids < k are `cut_plan`'s, in order; else what differs."""
    mine = [(rid, n) for rid, n in plan if rid < k]
    theirs = [(rid, n) for rid, n in cut_plan]
    if len(mine) != len(theirs) or any(a[0] != b[0] or bool(a[1] != b[1]) for a, b in zip(mine, theirs, strict=True)):
        return f"the first {k} request(s) get {mine} of the whole plan, {theirs} planned alone"
    return None


def _path(ex: Explorer, cls: type, shape: Shape, v: dict[str, z3.ArithRef]) -> Any:
    """One run: None if the state is none of the scheduler's, else the breaks found (rule, message, values)."""
    s = allowed_state(lambda: build(cls, shape, v, ex))
    if s is None:
        return None
    plan = s.schedule()
    found = []
    for k in range(1, shape.size):
        t = build(cls, cut(shape, k), cut_values(shape, k, v), ex)
        if postconditions.broken(t) is not None:
            found.append((CUT_REFUSED, f"the state cut to {k} request(s) is none of the scheduler's"))
            continue
        message = same_prefix(plan, t.schedule(), k)
        if message is not None:
            found.append(("FOLD", message))
    values = {n: ex.model.eval(term, model_completion=True).as_long() for n, term in v.items()}
    return [(rule, message, values) for rule, message in found]


_DONE: dict[tuple[Any, Any, int], Outcome] = {}  # (class, its schedule, N) -> the outcome proved in this process


def proved(cls: type, n: int = DEFAULT_N) -> Outcome:
    """`prove(cls, n)`, once per process: the outcome the FOLD (code) row already found, if it ran here."""
    key = (cls, getattr(cls, "schedule", None), n)
    if key not in _DONE:
        prove(cls, n)
    return _DONE[key]


def prove(cls: type, n: int = DEFAULT_N, max_paths: int = MAX_PATHS) -> Outcome:
    """Every path of `cls`'s schedule(), whole and cut, from every state of at most `n` requests."""
    out = _prove(cls, n, max_paths)
    if max_paths == MAX_PATHS:
        _DONE[(cls, getattr(cls, "schedule", None), n)] = out
    return out


def _prove(cls: type, n: int, max_paths: int) -> Outcome:
    started = time.perf_counter()
    out = Outcome(NAME, Verdict.UNKNOWN, 0.0)
    if n < 2:
        out.verdict, out.detail = Verdict.NOT_JUDGED, f"vacuous: a state of {n} request(s) has no cut"
        return out
    undecided: list[str] = []
    for shape in shapes(n):
        v = variables(names(shape))
        try:
            runs, ex, complete = explore(lambda ex, s=shape, v=v: _path(ex, cls, s, v), type_assumptions(v, shape),
                                         max_paths)
        except TypeError as error:  # an operation symbolic values do not support: nothing is claimed
            undecided.append(f"{shape.label()}: the code cannot run symbolically ({error})")
            continue
        except Exception as error:  # schedule() raising on a state the post-conditions allow (a guard on a
            # count, say): no plan to compare, so nothing is claimed of that shape
            undecided.append(f"{shape.label()}: the code raises {type(error).__name__}: {error}")
            continue
        out.tally(undecided, shape.label(), runs, ex, complete)
        _record(out, undecided, shape, [f for r in runs if r for f in r])
    out.seconds = time.perf_counter() - started
    if out.counterexample is not None:
        out.verdict = Verdict.BROKEN
    elif undecided or out.states == 0:
        out.detail = "; ".join(undecided[:3]) or "no state satisfied the hypothesis"
    else:
        out.verdict = Verdict.HOLDS
        out.detail = f"{out.paths} paths, {out.states} from states the post-conditions allow, every cut kept"
    return out


def _record(out: Outcome, undecided: list[str], shape: Shape, found: list[tuple[str, str, dict[str, int]]]) -> None:
    for rule, message, values in found:
        if rule == CUT_REFUSED:
            undecided.append(f"{shape.label()}: {message}")
            continue
        out.found(rule, message, values, shape.label())
