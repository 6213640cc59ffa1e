"""FOLD (code, induction, any N): each phase loop of the scheduler's own `schedule()`, on any number of
requests, plans and leaves what the in-order fold of that loop run on one request does, by induction
on the number of requests k, in Z3.

FOLD (code) checks the whole of schedule() at N <= 3 by symbolic execution; this proves its loops for
every N, from their source (`code_phases`), as `fold_induction` does for the transcription. First the
frame (`code_frame`): each loop's body, compiled from schedule()'s own source, runs once on symbolic
values, every path, seeing only its own request, the config and the carried values (budget left, free
KV, the counts of the containers an earlier phase walks, the plan list it appends to), so that by
Python's `for` and `while` (a `while` whose every iteration that goes round takes its line's head) the
loop on k + 1 requests is the loop on the first k, then that iteration T on request k with what they
left, unless the loop ended (a break, or the test failing). Then, with the requests' fields and the
carried values functions of k (W: the whole loop after k requests; F: the fold, k runs of the loop
statement itself, as written, on a container holding one request, each entered with what the run
before left):

- **initiation**: W(0) = F(0), the values the loop is entered with, not ended, no entry yet;
- **consecution**: W(k) = F(k) and the entries of the requests before k agreeing, with W(k + 1) =
  T(W(k), request k) and F(k + 1) the loop on request k alone from F(k), give W(k + 1) = F(k + 1) and
  request k's entry (planned, its n, taken off the line, placed in a container) agreeing;
- **exit**: at k = N, the whole loop's entries and left values are the fold's, for every N >= 0 (a
  `while`'s test is checked false on an empty line, on every path, so that the loop ends there).

A loop the frame cannot read, or whose body steps outside it (a look-ahead at `self._waiting[1]`,
newest-first admission, a skip-ahead that keeps the requests it passes, a partial loop reading the
line), proves nothing here: FOLD (code) is then run at N = 2 .. `REFUTE_UP_TO` (one N refutes "any
N"): BROKEN with its counterexample, else unknown, naming the frame's refusal.

Where every loop is proved, the row holds only if FOLD (code) at N = 3 holds of the same class too
(`code_fold.proved`: that row's outcome if it ran in this process): BROKEN if it is refuted there,
unknown if it is undecided (a guard that raises on a count, say).

Assumed, not checked: Python's semantics of `for` over a dict's values, of `while`, of `list()` of a
dict's values (a map phase is the fold that appends each value) and of `len`; that a rid written into
a container is not yet in it (kept by the post-conditions); that each request of a container has the
None fields of one of that container's values in the probe run (the iteration runs once for each
pattern they show: `_running`'s ready and partial requests); that the classes the code builds read no
frame and no module state; that a tail's requests, C past the requests of an earlier phase's container
(its count held to `len(self.C) - R` and its guard to `len(self.C) > R` by `code_phases`, R that
phase's count), are the requests of C not in that container, which holds if that container's are the
first of C (the reference's post-condition `ready_first`, checked at N <= 3 by the code theorems: the
row's text says so); and the statements outside the loops are held to a shape (`code_straight`) and
read, not proved: with that shape and the tail so read, schedule() is these folds in sequence, which
FOLD (code) at N = 3 checks once more. The consecution ties the compiled iteration to the loop
statement run on one request, two compilations of one body: the frame carries the proof.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import z3

from stallfree.spec.verdict import Verdict

from . import code_fold
from .code_frame import DONE, Probes, carried_keys, entry_keys, inputs, probe, sort_of, terms
from .code_phases import Phase, Source, iteration, read, test_of, whole
from .fold_frame import FrameError
from .induction import _prove
from .obligation import Obligation

NAME = "FOLD (code, induction, any N)"
REFUTE_UP_TO = 4  # the largest N FOLD (code) is tried at for a loop outside the frame (a count, not seconds)
HELD = "holds: initiation, consecution, exit"
SORTS = {"int": z3.IntSort(), "bool": z3.BoolSort()}


@dataclass
class Outcome:
    theorem: str
    verdict: Verdict
    seconds: float
    detail: str = ""
    counterexample: dict[str, Any] | None = None
    phases: dict[str, str] = field(default_factory=dict)  # each loop's header: its verdict, and why
    broken: list[str] = field(default_factory=list)


def _default(key: str) -> z3.ExprRef:
    return z3.IntVal(0) if sort_of(key) == "int" else z3.BoolVal(False)


def _run(prefix: str, name: str, state: list[str], entries: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run's carried values and end, as functions of k, and its entries, as functions of the index."""
    return ({key: z3.Function(f"{prefix}{name}.{key}", z3.IntSort(), SORTS[sort_of(key)]) for key in state},
            {key: z3.Function(f"{prefix}{name}.entry.{key}", z3.IntSort(), SORTS[sort_of(key)]) for key in entries})


def _step(run: dict[str, z3.ExprRef], s: dict[str, Any], e: dict[str, Any], subst: list[tuple[Any, Any]],
          k: z3.ArithRef) -> list[z3.BoolRef]:
    """One request more: the run's `run` terms on request k from s(k), unless the loop has ended."""
    ended = s[DONE](k)
    after = {key: z3.substitute(term, *subst) for key, term in run.items()}
    facts = [s[key](k + 1) == z3.If(ended, s[key](k), after[key]) for key in s if key != DONE]
    facts.append(s[DONE](k + 1) == z3.Or(ended, after[DONE]))
    return facts + [e[key](k) == z3.If(ended, _default(key), after[key]) for key in e]


def obligations(cls: type, source: Source, phase: Phase, kinds: Probes) -> list[Obligation]:
    """The induction on k for `phase`; FrameError if its body is no function of one iteration."""
    prefix = f"fold_code_any.{phase.walked}."
    ins = inputs(prefix, phase, source, cls)
    one = terms(cls, source, phase, None if phase.kind == "map" else iteration(source, phase), ins, kinds, "T")
    if phase.kind == "while":
        _ends_on_an_empty_line(cls, source, phase, ins, kinds)
    alone = terms(cls, source, phase, whole(source, phase), ins, kinds, "L1")
    state, entries = [*carried_keys(phase, source.kinds), DONE], entry_keys(phase)
    (ws, we), (fs, fe) = _run(prefix, "whole", state, entries), _run(prefix, "fold", state, entries)
    n, k, j = z3.Int("N"), z3.Int("k"), z3.Int("j")
    fields = {f: z3.Function(f"{prefix}request.{f}", z3.IntSort(), z3.IntSort()) for f in ins.fields}
    entered = {key: z3.Const(f"{prefix}entered.{key}", SORTS[sort_of(key)]) for key in state if key != DONE}

    def substitution(s: dict[str, Any]) -> list[tuple[Any, Any]]:
        return [(ins.carried[key], s[key](k)) for key in ins.carried] + [(ins.fields[f], fields[f](k)) for f in fields]

    def agree(at: z3.ArithRef) -> z3.BoolRef:
        return z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < at), z3.And([we[e](j) == fe[e](j) for e in entries])))

    def inv(at: z3.ArithRef) -> z3.BoolRef:
        return z3.And(at >= 0, at <= n, *(ws[key](at) == fs[key](at) for key in state), agree(at))

    base = z3.And(n >= 0, z3.Not(ws[DONE](0)), z3.Not(fs[DONE](0)),
                  *(s[key](0) == entered[key] for s in (ws, fs) for key in entered))
    steps = [*_step(one, ws, we, substitution(ws), k), *_step(alone, fs, fe, substitution(fs), k)]
    return [
        Obligation(f"{phase.label}: initiation", base, inv(z3.IntVal(0))),
        Obligation(f"{phase.label}: consecution", z3.And(base, inv(k), k >= 0, k < n, *steps), inv(k + 1), k == 0),
        Obligation(f"{phase.label}: exit", z3.And(base, inv(n)),
                   z3.And(*(ws[key](n) == fs[key](n) for key in state), agree(n))),
    ]


def _ends_on_an_empty_line(cls: type, source: Source, phase: Phase, ins: Any, kinds: Probes) -> None:
    """A while's test, on its line emptied, is false on every path and moves no carried value: the loop
    ends once it took the last request, with what that iteration left."""
    found = terms(cls, source, phase, test_of(source, phase), ins, kinds, "empty")
    moved = [found[key] != ins.carried[key] for key in found if key in ins.carried]
    solver = z3.Solver()
    solver.add(z3.Or(found["holds"], *moved))
    if solver.check() != z3.unsat:
        raise FrameError(f"`{phase.label}`: its test can hold, or move a carried value, with self.{phase.walked} empty")


def _phase(cls: type, source: Source, phase: Phase, kinds: Probes, timeout_ms: int) -> str | None:
    """None if `phase` is a fold for any N; else why not (the frame's refusal, or the obligation that failed)."""
    try:
        result = _prove(obligations(cls, source, phase, kinds), NAME, SimpleNamespace(name=cls.__qualname__),
                        timeout_ms)
    except FrameError as error:
        return str(error)
    except Exception as error:  # a Sequence or Request that is no dataclass, say: the frame cannot be built
        return f"`{phase.label}`: its frame cannot be built ({type(error).__name__}: {error})"
    if result.verdict is Verdict.HOLDS:
        return None
    ob = (result.counterexample or {}).get("obligation", "?")
    if result.verdict is Verdict.BROKEN:
        return f"{ob}: the iteration and the loop run on one request differ"
    return f"{ob}: no answer (vacuous or out of time)"


def prove(cls: type, timeout_ms: int = 30_000, belt: bool = True) -> Outcome:
    """FOLD for any N of each phase loop of `cls.schedule`, in order; where one is not proved, FOLD
    (code) at N = 2 .. REFUTE_UP_TO; where all are, holds only if FOLD (code) at N = 3 holds too
    (`belt`: reused if that row ran in this process)."""
    began = time.perf_counter()
    out = Outcome(NAME, Verdict.HOLDS, 0.0)
    try:
        source, kinds = read(cls), probe(cls)
    except FrameError as error:
        why: list[str] = [str(error)]
    except Exception as error:  # the probe run of add/schedule/complete failed: nothing is read
        why = [f"the probe run raised {type(error).__name__}: {error}"]
    else:
        why = []
        for phase in source.phases:
            failed = _phase(cls, source, phase, kinds, timeout_ms)
            out.phases[phase.label] = held(phase) if failed is None else f"unproved: {failed}"
            why += [] if failed is None else [failed]
    if why:
        _refute(cls, why[0], out)
    elif belt:
        _also_at_three(cls, out)
    out.detail = "; ".join(f"`{label}` {v}" for label, v in out.phases.items()) or out.detail
    out.seconds = time.perf_counter() - began
    return out


def held(phase: Phase) -> str:
    """A proved phase's verdict; a tail's says what its count rests on, which the induction does not prove."""
    if not phase.tail:
        return HELD
    c, r = phase.walked, phase.past
    return (f"{HELD} (its tail's count, len(self.{c}) - {r}, read, not proved: it is the requests of "
            f"self.{c} not counted by {r}, an earlier phase's, if that phase's are the first of self.{c}, the "
            "reference's post-condition ready_first)")


def _also_at_three(cls: type, out: Outcome) -> None:
    """Every loop is proved a fold; the row holds only if FOLD (code) at N = 3 holds of the same class
    (what the straight-line reading of `code_phases` stands on, checked at one N)."""
    found = code_fold.proved(cls, code_fold.DEFAULT_N)
    n = code_fold.DEFAULT_N
    if found.verdict is Verdict.HOLDS:
        out.phases["schedule()"] = f"{code_fold.NAME} at N={n} holds too"
    elif found.verdict is Verdict.BROKEN:
        out.verdict, out.broken = Verdict.BROKEN, ["FOLD"]
        out.counterexample = found.counterexample
        out.phases["schedule()"] = (f"broken: each loop is proved a fold, but {code_fold.NAME} at N={n} refuted: "
                                    f"{found.detail}")
    else:
        out.verdict = Verdict.UNKNOWN
        out.phases["schedule()"] = (f"unknown: each loop is proved a fold, but {code_fold.NAME} at N={n} reads "
                                    f"{found.verdict.value}: {found.detail}")


def _refute(cls: type, why: str, out: Outcome) -> None:
    """FOLD (code) at N = 2 .. REFUTE_UP_TO: one N with a counterexample refutes "for any N"."""
    for n in range(2, REFUTE_UP_TO + 1):
        found = code_fold.prove(cls, n)
        if found.verdict is Verdict.BROKEN:
            out.verdict, out.broken = Verdict.BROKEN, ["FOLD"]
            out.counterexample = {**(found.counterexample or {}), "frame": why}
            out.phases["schedule()"] = f"broken: {why}; {code_fold.NAME} at N={n} refuted: {found.detail}"
            return
    out.verdict = Verdict.UNKNOWN
    out.phases["schedule()"] = f"unknown: {why}; {code_fold.NAME} not refuted at N <= {REFUTE_UP_TO}: nothing proved"
