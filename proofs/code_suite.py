"""The rows of the code theorems (`smt.code_theorems`, `smt.code_add`, `smt.code_fold`): Z3 over the
scheduler's own code, run on symbolic values, every path (method `symbolic` of `stallfree prove`);
FOLD of the same code for any N, by induction over its phase loops (`smt.code_fold_induction`); and
FOLD on the states of stepped runs (`explicit.fold_stepwise`, a sample). They speak of
the scheduler checked, the reference or a `--scheduler` kept in the reference's fields (a copy of it
with a bug planted, say); of any other the rows read n/a."""

from __future__ import annotations

from functools import partial
from typing import Any

from stallfree.spec.verdict import Verdict

from .suite import Options, Part, Row, Say, run_parts

# Requests per state for each theorem: STEP and ADD at 3, the stops (every subset) and cancels (every
# victim, two moments) at 2, so that the four take about 15 s of CPU; `--profile deep` (and
# --code-requests) raise them. FOLD (code) is at `code_fold.DEFAULT_N` (3) unless --code-requests.
REQUESTS = {"STEP (code)": 3, "STOPS (code)": 2, "CANCEL (code)": 2, "ADD (code)": 3}
DEEP_REQUESTS = {"STEP (code)": 4, "STOPS (code)": 3, "CANCEL (code)": 3, "ADD (code)": 3}
# ADD (code) with a plan pending (schedule() before the add, complete() after): states of at most this many.
PENDING_REQUESTS, DEEP_PENDING_REQUESTS = 1, 2


def code_rows(o: Options, say: Say) -> list[Row]:
    return run_parts(code_parts(o), o, say)


def code_parts(o: Options) -> list[Part]:
    """The code theorems' rows in pieces, one theorem each (`suite_jobs` spreads them over its workers)."""
    from .explicit import fold_stepwise
    from .smt import code_add, code_fold, code_fold_induction, code_theorems

    why = code_theorems.not_applicable(o.factory)
    if why is not None:
        return [("symbolic n/a", lambda o, say: [
            Row(claim, "Z3 symbolic execution", "-", f"n/a ({why[:60]})", 0.0, why)
            for claim in (*(t.name for t in code_theorems.THEOREMS), code_add.NAME, code_fold.NAME,
                          code_fold_induction.NAME, fold_stepwise.NAME)])]
    return [*((f"symbolic {t.name}", partial(_theorem_row, theorem=t)) for t in code_theorems.THEOREMS),
            ("symbolic ADD (code)", _add_row), ("symbolic FOLD (code)", _fold_row),
            ("symbolic FOLD (code, induction, any N)", _fold_any_n_row),
            ("symbolic FOLD (code, stepwise)", _stepwise_row)]


def _name(o: Options) -> str:
    cls = o.factory
    return "reference" if cls is code_theorems_reference() else getattr(cls, "__qualname__", str(cls))


def _theorem_row(o: Options, say: Say, theorem: Any) -> list[Row]:
    from .smt import code_theorems

    n = o.code_requests or (DEEP_REQUESTS if o.deep else REQUESTS)[theorem.name]
    say(f"z3: {theorem.name} of {_name(o)}'s code (every state of at most {n} requests)")
    outcome = code_theorems.prove(theorem, o.factory, n)
    return [_row(outcome, f"Z3 symbolic execution ({_name(o)})", n)]


def _fold_row(o: Options, say: Say) -> list[Row]:
    """FOLD of the code, symbolic at N = 3 (`code_fold`)."""
    from .smt import code_fold

    n = o.code_requests or code_fold.DEFAULT_N
    say(f"z3: {code_fold.NAME} of {_name(o)}'s schedule() (every state of at most {n} requests, every cut)")
    return [_row(code_fold.prove(o.factory, n), f"Z3 symbolic execution ({_name(o)})", n)]


def _fold_any_n_row(o: Options, say: Say) -> list[Row]:
    """FOLD of the code for any N: the induction over schedule()'s phase loops (`code_fold_induction`)."""
    from .smt import code_fold_induction

    say(f"z3: {code_fold_induction.NAME} of {_name(o)}'s schedule() (each phase loop, from its source)")
    out = code_fold_induction.prove(o.factory)
    return [Row(out.theorem, f"Z3 loop induction over the code ({_name(o)})", "any N", out.verdict, out.seconds,
                out.detail, out.counterexample)]


def _stepwise_row(o: Options, say: Say) -> list[Row]:
    """FOLD of the code on the states of stepped runs at N = 12 (`explicit.fold_stepwise`)."""
    from .explicit import fold_stepwise

    name = _name(o)
    say(f"{fold_stepwise.NAME}: {fold_stepwise.RUNS} seeded runs of {name}, up to {fold_stepwise.REQUESTS} requests")
    out = fold_stepwise.check(o.factory)
    return [Row(fold_stepwise.NAME, f"stepped runs ({name})", f"N<={fold_stepwise.REQUESTS}, "
                f"{fold_stepwise.RUNS} runs of {fold_stepwise.STEPS} steps", out.verdict, out.seconds,
                out.detail, out.counterexample)]


def _add_row(o: Options, say: Say) -> list[Row]:
    from .smt import code_add

    n = o.code_requests or (DEEP_REQUESTS if o.deep else REQUESTS)[code_add.NAME]
    pending = min(n, DEEP_PENDING_REQUESTS if o.deep else PENDING_REQUESTS)
    say(f"z3: {code_add.NAME} of {_name(o)}'s code (every state of at most {n} requests, {pending} with a plan "
        f"pending)")
    outcome = code_add.prove(o.factory, n, pending)
    return [_row(outcome, f"Z3 symbolic execution ({_name(o)})", n,
                 f"N<={n} (plan pending: N<={pending}), lengths unbounded")]


def code_theorems_reference() -> Any:
    from stallfree.reference import Scheduler

    return Scheduler


def _row(outcome: Any, method: str, n: int, bound: str | None = None) -> Row:
    result = outcome.verdict
    bound = bound or f"N<={n}, lengths unbounded"
    if result is Verdict.BROKEN:
        detail = f"broken: {', '.join(outcome.broken)}; first: {outcome.detail}"
    else:
        detail = outcome.detail
    return Row(outcome.theorem, method, bound, result, outcome.seconds, detail, outcome.counterexample)
