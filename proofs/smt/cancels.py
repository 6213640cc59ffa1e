"""Z3 theorems for cancels: of a waiting, a partial or a ready request, between steps or while a plan
is pending, and rule CANCEL's own statement.

**The cancel step.** The reference removes a cancelled request from its line (a waiting one) or from
its running set (a partial or ready one): the requests behind it move up one index, and a running
one's reservation is back before the next `schedule()`. In the symbolic state that is, for each
request index c, a concrete renumbering: new index j holds old request `source[j]` (j < c: j; else
j + 1), and the last index is empty (nothing arrived there). Enumerating c keeps every obligation
free of symbolic indexing, so each is small. A cancel while a plan is pending takes effect when
`complete()` runs: it is the same cancel applied to the state after the step.

**The theorems** (each from any state satisfying the whole invariant, `inductive.invariant`):

- CANCEL-INVARIANT: cancelling any waiting or running request leaves a state satisfying the whole
  invariant (READY-WITHIN-BUDGET and ONE-PARTIAL among it).
- CANCEL: after the cancel, any adds and one step, no index holding the cancelled request is
  planned or emits (it is never planned after the cancel takes effect), and the free KV the step's
  `schedule()` starts from is K less the reservations of the other running requests (its
  reservation is returned by the next `schedule()`).
- FCFS (cancels): after cancelling a waiting request, any adds and one step, the old requests still
  waiting are admitted in arrival order, and the first of them left waiting is refused for its own
  reasons (no budget left, no slot, not enough KV): the cancelled one blocks nobody.
- READY-WITHIN-BUDGET and ONE-PARTIAL (stops, cancels): from the invariant, after any adds, one
  step, any stops (each request that emitted in the step and still runs may end) and a cancel of
  any waiting or running request (or none), the part holds: proved of that composed transition,
  with the step's own lemmas and parts as stepping stones, not assumed from the other theorems.
- PROGRESS (stops, cancels): over the same composed transition, with work pending after the adds,
  the remaining work falls and is never negative: stops and cancels only take work away.

**The negative controls**, each a wrong cancel step or a wrong policy that must be refuted:
`KeepsKV` (the reservation never comes back: CANCEL-INVARIANT on KV, CANCEL), `LeftInLine` (the
cancel changes nothing: the request is still planned and still blocks the line: CANCEL, FCFS),
`SwapRemove` (a cancelled waiting request's place goes to the last one waiting, as an O(1)
removal would: FCFS), and the mutants `ChangingBudget`, `AdmitBeforePartial` and `StrictFit` for
the composed READY-WITHIN-BUDGET, ONE-PARTIAL and PROGRESS.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

import z3

from stallfree.spec.verdict import Verdict

from . import lemmas
from .ends import end_early
from .in_turn import prove_in_turn
from .inductive import PARTS, invariant, one_partial, ready_within_budget
from .mutants import AdmitBeforePartial, ChangingBudget, StrictFit
from .policy import Policy, SymStep
from .symbolic import SymConfig, SymRequest, SymState, value
from .theorems import TIMEOUT_MS, TheoremResult, new_solver

CANCEL_N = 8  # symbolic requests in each cancel theorem (every index is cancelled in turn)

Source = tuple[int | None, ...]  # new index j holds old request source[j]; None: nothing arrived there


@dataclass(frozen=True, slots=True)
class Case:
    """One way a cancel of old index `cancelled` renumbers the requests, under `guard`."""

    cancelled: int
    guard: z3.BoolRef
    source: Source


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The state after a cancel, what it assumes (the empty index's lengths), and its case."""

    state: SymState
    facts: z3.BoolRef
    case: Case

    def index_of(self, old: int) -> int | None:
        """The new index holding old request `old`, or None."""
        return next((j for j, i in enumerate(self.case.source) if i == old), None)


class CancelStep:
    """The reference's cancel: the request leaves its line or the running set, those behind it move up,
    and a running request's reservation is back at once."""

    returns_kv = True

    @property
    def name(self) -> str:
        return "reference" if type(self) is CancelStep else type(self).__name__

    def cases(self, s: SymState, c: int) -> list[Case]:
        n = len(s.requests)
        return [Case(c, z3.BoolVal(True), (*range(c), *range(c + 1, n), None))]

    def apply(self, s: SymState, case: Case, name: str) -> Cancelled:
        requests, facts = [], []
        for j, i in enumerate(case.source):
            if i is None:
                empty = SymRequest(z3.BoolVal(False), z3.BoolVal(False), z3.Int(f"{name}.r{j}.prompt_len"),
                                   z3.Int(f"{name}.r{j}.max_new"), z3.IntVal(0), z3.IntVal(0))
                facts += [empty.prompt_len >= 1, empty.max_new >= 1]
                requests.append(empty)
            else:
                requests.append(s.requests[i])
        gone = s.requests[case.cancelled]
        free_kv = s.free_kv + z3.If(gone.running, gone.reservation, 0) if self.returns_kv else s.free_kv
        return Cancelled(SymState(s.config, tuple(requests), free_kv), z3.And(facts), case)


class KeepsKV(CancelStep):
    """A cancelled running request's reservation is never returned."""

    breaks = "KV"
    returns_kv = False


class LeftInLine(CancelStep):
    """The cancel is acknowledged but changes nothing: the request stays in line or in the batch."""

    breaks = "CANCEL"

    def cases(self, s: SymState, c: int) -> list[Case]:
        return [Case(c, z3.BoolVal(True), tuple(range(len(s.requests))))]

    def apply(self, s: SymState, case: Case, name: str) -> Cancelled:
        return Cancelled(s, z3.BoolVal(True), case)


class SwapRemove(CancelStep):
    """A cancelled waiting request's place goes to the last one waiting (an O(1) removal)."""

    breaks = "FCFS"

    def cases(self, s: SymState, c: int) -> list[Case]:
        rs, n = s.requests, len(s.requests)
        out = [Case(c, z3.Not(rs[c].waiting), super().cases(s, c)[0].source)]
        for last in range(c, n):  # the last request that arrived is at index `last`
            is_last = z3.And(rs[last].arrived, z3.BoolVal(True) if last == n - 1 else z3.Not(rs[last + 1].arrived))
            source = [None if j == last else last if j == c else j for j in range(n)]
            out.append(Case(c, z3.And(rs[c].waiting, is_last), tuple(source)))
        return out


def cancellable(r: SymRequest) -> z3.BoolRef:
    return z3.Or(r.waiting, r.running)


# -- the claims ------------------------------------------------------------------------------------


def cancel_claim(before: SymState, after: Cancelled, t: SymStep) -> z3.BoolRef:
    """CANCEL: nothing planned or emitted for the cancelled request in the step after it took effect;
    that step starts from K less the other running requests' reservations."""
    c = after.case.cancelled
    facts = [z3.And(z3.Not(t.plan[j].planned), z3.Not(t.emits[j]))
             for j, i in enumerate(after.case.source) if i == c]
    others = z3.Sum([z3.If(r.running, r.reservation, 0) for i, r in enumerate(before.requests) if i != c])
    facts.append(t.before.free_kv == before.config.kv_tokens - others)
    return z3.And(facts)


def fcfs_claim(before: SymState, after: Cancelled, t: SymStep) -> z3.BoolRef:
    """FCFS (cancels): over the old requests still waiting, the cancelled one aside, admission goes in
    arrival order, and the first one left waiting is refused for want of budget, a slot or KV."""
    c = after.case.cancelled
    old = [i for i, r in enumerate(before.requests) if i != c]
    admitted = {i: t.plan[j].admit for i in old if (j := after.index_of(i)) is not None}
    waiting = {i: before.requests[i].waiting for i in admitted}
    facts = []
    num_running = t.before.count("running") + z3.Sum([z3.If(e.admit, 1, 0) for e in t.plan])
    for j in admitted:
        earlier = [i for i in admitted if i < j]
        for i in earlier:
            facts.append(z3.Implies(z3.And(waiting[i], waiting[j], admitted[j]), admitted[i]))
        is_head = z3.And(waiting[j], z3.Not(admitted[j]),
                         *[z3.Implies(waiting[i], admitted[i]) for i in earlier])
        refused = z3.Or(t.num_tokens >= t.before.config.token_budget,
                        num_running >= t.before.config.max_seqs,
                        before.requests[j].reservation > t.free_after_admission)
        facts.append(z3.Implies(is_head, refused))
    return z3.And(facts)


# -- the obligations -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Obligation:
    """hypothesis -> each goal under its own extra hypothesis, with stepping stones proved first
    (under the hypothesis) and then assumed; if the solver cannot prove a stone, the stones are
    dropped and the goals judged without them."""

    hypothesis: z3.BoolRef
    goals: tuple[tuple[str, z3.BoolRef, z3.BoolRef], ...]  # (what it is about, extra hypothesis, goal)
    state: SymState  # the state it starts from, shown in a counterexample
    stones: tuple[z3.BoolRef, ...] = ()


def _start(num_requests: int, name: str = "s0") -> tuple[SymConfig, SymState]:
    config = SymConfig.fresh()
    return config, SymState.fresh(name, num_requests, config)


def invariant_obligations(num_requests: int, cancel: CancelStep) -> Iterator[Obligation]:
    """CANCEL-INVARIANT: each part of the invariant after a cancel of any waiting or running request."""
    config, s = _start(num_requests)
    for c in range(num_requests):
        for case in cancel.cases(s, c):
            after = cancel.apply(s, case, f"x{c}")
            hypothesis = z3.And(config.valid(), invariant(s), cancellable(s.requests[c]), case.guard, after.facts)
            parts = z3.And([part(after.state) for part in PARTS.values()])
            yield Obligation(hypothesis, ((f"a cancel of request index {c}", z3.BoolVal(True), parts),), s)


def step_obligations(num_requests: int, cancel: CancelStep, claim: Callable[[SymState, Cancelled, SymStep], z3.BoolRef],
                     waiting_only: bool, policy: Policy | None = None) -> Iterator[Obligation]:
    """A cancel, any adds, one step of `policy`: `claim` of the cancelled request and that step."""
    policy = Policy() if policy is None else policy
    config, s = _start(num_requests)
    for c in range(num_requests):
        for case in cancel.cases(s, c):
            after = cancel.apply(s, case, f"x{c}")
            arrived, adds = policy.arrive(after.state, f"a{c}")
            t = policy.step(arrived)
            which = s.requests[c].waiting if waiting_only else cancellable(s.requests[c])
            hypothesis = z3.And(config.valid(), invariant(s), which, case.guard, after.facts, adds, t.defs,
                                t.after.config.valid())
            about = f"a cancel of request index {c}, then adds and a step"
            yield Obligation(hypothesis, ((about, z3.BoolVal(True), claim(s, after, t)),), s)


Composed = Callable[[SymState, SymState], z3.BoolRef]  # (the state after the adds, the state at the end)


def composed_obligations(num_requests: int, part: Composed, policy: Policy | None = None) -> Iterator[Obligation]:
    """Adds, one step, any stops, then a cancel of index c (or none): `part` holds of the state after
    the adds and the state at the end."""
    policy = Policy() if policy is None else policy
    config, s = _start(num_requests)
    arrived, adds = policy.arrive(s, "s1")
    t = policy.step(arrived)
    stopped = end_early(t.after, [z3.And(e, r.running) for e, r in zip(t.emits, t.after.requests, strict=True)],
                        "stop")
    base = z3.And(config.valid(), invariant(s), adds, t.defs, t.after.config.valid(), stopped.may_end)
    stones = (*lemmas.planned_per_slot(t), part(arrived, t.after), part(arrived, stopped.state))
    goals = [("adds, a step and stops, no cancel", z3.BoolVal(True), part(arrived, stopped.state))]
    cancel = CancelStep()
    for c in range(num_requests):
        for case in cancel.cases(stopped.state, c):
            after = cancel.apply(stopped.state, case, f"x{c}")
            goals.append((f"adds, a step, stops, then a cancel of request index {c}",
                          z3.And(cancellable(stopped.state.requests[c]), case.guard, after.facts),
                          part(arrived, after.state)))
    yield Obligation(base, tuple(goals), arrived, stones)


# -- proving ---------------------------------------------------------------------------------------


def shown(model: z3.ModelRef, s: SymState) -> str:
    """A state of a model, as a reader would write it: the config, the free KV, each arrived request."""
    val = partial(value, model)
    cfg = s.config
    rows = []
    for i, r in enumerate(s.requests):
        if val(r.arrived):
            phase = next((p for p in ("waiting", "partial", "ready", "finished") if val(getattr(r, p))), "?")
            rows.append(f"{i}: {phase} prompt_len={val(r.prompt_len)} max_new={val(r.max_new)} "
                        f"prefilled={val(r.num_prefilled)} emitted={val(r.num_emitted)}")
    return (f"B={val(cfg.token_budget)} S={val(cfg.max_seqs)} K={val(cfg.kv_tokens)} free_kv={val(s.free_kv)}; "
            f"requests {'; '.join(rows) or 'none'}")


def _judge(ob: Obligation, timeout_ms: int) -> tuple[Verdict, str]:
    """(holds | BROKEN | unknown, what the goal that decided it is about)."""
    solver = new_solver(ob.hypothesis, timeout_ms)
    if prove_in_turn(solver, ob.stones).verdict is not Verdict.HOLDS:  # a wrong policy breaks a stone
        solver = new_solver(ob.hypothesis, timeout_ms)  # judge the goals alone
    for about, extra, goal in ob.goals:
        solver.push()
        solver.add(extra)
        turn = prove_in_turn(solver, goal.children() if z3.is_and(goal) else [goal], keep_model=True)
        if turn.verdict is Verdict.BROKEN:
            return turn.verdict, f"{about}, from {shown(solver.model(), ob.state)}"
        if turn.verdict is not Verdict.HOLDS:
            return turn.verdict, about
        solver.pop()
    return Verdict.HOLDS, ""


def prove_cancel(name: str, obligations: Iterator[Obligation], control: str, num_requests: int,
                 timeout_ms: int = TIMEOUT_MS) -> TheoremResult:
    """Every obligation must hold; the first refuted one makes a counterexample, the first undecided
    one `unknown` (nothing claimed)."""
    began = time.perf_counter()
    for ob in obligations:
        verdict, about = _judge(ob, timeout_ms)
        if verdict is not Verdict.HOLDS:
            detail = {"refuted": about} if verdict is Verdict.BROKEN else None
            return TheoremResult(name, control, num_requests, verdict, time.perf_counter() - began, detail)
    return TheoremResult(name, control, num_requests, Verdict.HOLDS, time.perf_counter() - began)


def cancel_invariant(num_requests: int = CANCEL_N, cancel: CancelStep | None = None) -> TheoremResult:
    cancel = CancelStep() if cancel is None else cancel
    return prove_cancel("CANCEL-INVARIANT", invariant_obligations(num_requests, cancel), cancel.name, num_requests)


def cancel_rule(num_requests: int = CANCEL_N, cancel: CancelStep | None = None) -> TheoremResult:
    cancel = CancelStep() if cancel is None else cancel
    return prove_cancel("CANCEL", step_obligations(num_requests, cancel, cancel_claim, False), cancel.name,
                        num_requests)


def fcfs_cancels(num_requests: int = CANCEL_N, cancel: CancelStep | None = None) -> TheoremResult:
    cancel = CancelStep() if cancel is None else cancel
    return prove_cancel("FCFS (cancels)", step_obligations(num_requests, cancel, fcfs_claim, True), cancel.name,
                        num_requests)


def ready_within_budget_composed(num_requests: int = CANCEL_N, policy: Policy | None = None) -> TheoremResult:
    name = "reference" if policy is None else policy.name
    return prove_cancel("READY-WITHIN-BUDGET (stops, cancels)",
                        composed_obligations(num_requests, lambda _, end: ready_within_budget(end), policy), name,
                        num_requests)


def one_partial_composed(num_requests: int = CANCEL_N, policy: Policy | None = None) -> TheoremResult:
    name = "reference" if policy is None else policy.name
    return prove_cancel("ONE-PARTIAL (stops, cancels)",
                        composed_obligations(num_requests, lambda _, end: one_partial(end), policy), name,
                        num_requests)


def work_falls(arrived: SymState, end: SymState) -> z3.BoolRef:
    """PROGRESS: with work pending after the adds, the remaining work at the end is less, and never
    negative (stops and cancels only take work away)."""
    return z3.And(z3.Implies(z3.Not(arrived.idle), end.work < arrived.work), end.work >= 0)


def progress_composed(num_requests: int = CANCEL_N, policy: Policy | None = None) -> TheoremResult:
    name = "reference" if policy is None else policy.name
    return prove_cancel("PROGRESS (stops, cancels)", composed_obligations(num_requests, work_falls, policy), name,
                        num_requests)


def theorems(num_requests: int = CANCEL_N) -> list[TheoremResult]:
    """The cancel theorems of the reference, in the order `stallfree prove` lists them."""
    return [cancel_invariant(num_requests), cancel_rule(num_requests), fcfs_cancels(num_requests),
            ready_within_budget_composed(num_requests), one_partial_composed(num_requests),
            progress_composed(num_requests)]


@dataclass(frozen=True, slots=True)
class Control:
    """A negative control: a theorem run on a wrong cancel step or a wrong policy, made to break `rule`."""

    rule: str
    run: Callable[[int], TheoremResult]


CONTROLS: tuple[Control, ...] = (
    Control("KV", lambda n: cancel_invariant(n, KeepsKV())),
    Control("CANCEL", lambda n: cancel_rule(n, LeftInLine())),
    Control("CANCEL", lambda n: cancel_rule(n, KeepsKV())),
    Control("FCFS", lambda n: fcfs_cancels(n, SwapRemove())),
    Control("FCFS", lambda n: fcfs_cancels(n, LeftInLine())),
    Control("READY-WITHIN-BUDGET", lambda n: ready_within_budget_composed(n, ChangingBudget())),
    Control("ONE-PARTIAL", lambda n: one_partial_composed(n, AdmitBeforePartial())),
    Control("PROGRESS", lambda n: progress_composed(n, StrictFit())),
)
CANCEL_CONTROLS = {"CANCEL": LeftInLine, "KV": KeepsKV, "FCFS": SwapRemove}  # for the cancel differential


def controls(num_requests: int = CANCEL_N, rule: str | None = None) -> list[TheoremResult]:
    """Each theorem on its negative controls (those made to break `rule`; None: all): every one must
    be refuted."""
    return [c.run(num_requests) for c in CONTROLS if rule is None or c.rule == rule]
