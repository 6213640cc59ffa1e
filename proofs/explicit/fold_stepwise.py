"""FOLD (code, stepwise): the check of `smt.code_fold` at N = 12, on the concrete states a stepped run
of the scheduler's own code reaches, since symbolic execution past a few requests has too many paths.

Seeded random runs (`RUNS` of `STEPS` steps, arrivals in bursts while fewer than `REQUESTS` requests
wait or run) drive the scheduler; before every step, every cut of its state (its first k requests in
the order the policy visits them: the ready, the partial, then the line; the rest removed, a running
one's reservation back) is planned alone, and must plan exactly the entries the whole state's plan
gives those k. A sample, never a proof: the reference reads `not refuted`; a scheduler whose plan for
a request depends on one after it (`LateLookAhead`, looking three places behind the head) is BROKEN
with the state. It speaks of schedulers in the reference's fields (the cut edits them), as the code
theorems do; no run reaching more than three requests at once reads `not judged`. A run reaching a
state that breaks a post-condition is BROKEN on the rule it cites, with the run; a state one of whose
cuts the post-conditions refuse is not judged, and the row reads unknown: never a crash of prove.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import random
import time
from dataclasses import dataclass, field
from typing import Any

from stallfree.reference import postconditions
from stallfree.spec.verdict import Verdict

NAME = "FOLD (code, stepwise)"
REQUESTS = 12  # the most requests waiting or running at once
RUNS, STEPS, SEED = 12, 30, 0  # about 3 s of the default prove; the reference reaches 12 requests in most runs


@dataclass(slots=True)
class Outcome:
    verdict: Verdict = Verdict.NOT_JUDGED
    seconds: float = 0.0
    states: int = 0  # states checked (every cut of each)
    full: int = 0  # of them, states of REQUESTS requests
    detail: str = ""
    counterexample: dict[str, Any] | None = field(default=None)
    broken: list[str] = field(default_factory=list)


def order(s: Any) -> list[int]:
    """The requests in the order the policy visits them: ready, partial, then the line."""
    return [*s._running, *s._waiting]  # the running ones: the ready, then the partial (PARTIAL-NEXT)


def cut(s: Any, k: int) -> Any:
    """A copy of `s` holding only its first `k` requests (`order`); a cut running one's KV is back."""
    t = copy.deepcopy(s)
    for rid in order(t)[k:]:
        seq = t._running.pop(rid, None)
        if seq is not None:
            t._ready.pop(rid, None)
            t._free_kv += seq.request.reservation
        else:
            seq = t._waiting.pop(rid)
        for due, seqs in list(t._finishing.items()):
            if seq in seqs:
                seqs.remove(seq)
                if not seqs:
                    del t._finishing[due]
    return t


@dataclass(frozen=True, slots=True)
class Found:
    """What one state shows: a cut planned otherwise than the whole (BROKEN, FOLD), the state itself
    breaking a post-condition (BROKEN on the rule it cites: a run reached it), or a cut the
    post-conditions refuse (unknown: that state is not judged)."""

    verdict: Verdict
    rule: str
    message: str


def check_state(s: Any) -> Found | None:
    """None if every cut of `s` plans what the whole plan gives its requests; else what differs, or why
    `s` is not judged."""
    reached = postconditions.broken(s)
    if reached is not None:
        return Found(Verdict.BROKEN, reached[0], f"the run reached a state that breaks {reached[0]}: {reached[1]}")
    plan = [(rid, n) for rid, n in copy.deepcopy(s).schedule()]
    for k in range(1, len(order(s))):
        t = cut(s, k)
        broken = postconditions.broken(t)
        if broken is not None:
            return Found(Verdict.UNKNOWN, "FOLD", f"the cut to {k} request(s) is no state of the scheduler "
                         f"({broken[0]}: {broken[1]}): not judged")
        kept = set(order(s)[:k])
        mine = [(rid, n) for rid, n in plan if rid in kept]
        theirs = [(rid, n) for rid, n in t.schedule()]
        if mine != theirs:
            return Found(Verdict.BROKEN, "FOLD", f"the first {k} request(s) get {mine} of the whole plan, "
                         f"{theirs} planned alone")
    return None


def _run(factory: Any, rng: random.Random, out: Outcome) -> Found | None:
    config = (rng.randint(1, 8), rng.randint(1, 8), rng.randint(8, 96))
    s = factory(*config)
    rid = 0
    for step in range(STEPS):
        for _ in range(rng.choice((0, 0, 1, 2, 5))):
            if len(order(s)) < REQUESTS:
                with contextlib.suppress(ValueError, TypeError):  # a refusal (one that never fits, say)
                    s.add(rid, rng.randint(1, 24), rng.randint(1, 6))
                rid += 1
        if len(order(s)) >= 2:
            out.states += 1
            out.full += len(order(s)) == REQUESTS
            found = check_state(s)
            if found is not None:
                lines = [(r.rid, r.prompt_len, r.max_new) for r in s.waiting]
                where = f"B,S,K = {config}, before step {step}, line (rid, prompt_len, max_new) {lines}"
                return dataclasses.replace(found, message=f"{where}: {found.message}")
        s.complete(s.schedule())
    return None


def check(factory: Any) -> Outcome:
    """Every state of RUNS seeded runs of `factory`'s scheduler, every cut of each."""
    started = time.perf_counter()
    out = Outcome()
    for run in range(RUNS):
        found = _run(factory, random.Random(SEED + run), out)
        if found is not None:
            out.verdict, out.detail = found.verdict, f"{found.rule}: run {run}: {found.message}"
            out.broken = [found.rule] if found.verdict is Verdict.BROKEN else []
            if found.verdict is Verdict.BROKEN:
                out.counterexample = {"rule": found.rule, "run": run, "seed": SEED + run, "detail": found.message}
            break
    out.seconds = time.perf_counter() - started
    if out.verdict is not Verdict.NOT_JUDGED:
        return out
    if out.full == 0:
        out.detail = f"vacuous: no run reached {REQUESTS} requests at once ({out.states} states)"
        return out
    out.verdict = Verdict.NOT_REFUTED
    out.detail = (f"{out.states} states of {RUNS} seeded runs, {out.full} of them with {REQUESTS} requests, every "
                  "cut kept (a sample: nothing proved)")
    return out
