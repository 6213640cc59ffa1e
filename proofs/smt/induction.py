"""Each phase of the step as a loop over any number N of requests, proved by induction in Z3: no
step of the argument is left on paper.

The requests are Z3 arrays indexed by request number (prompt, max_new, progress, phase; N an
unbounded integer), and the loop's state is the budget left, the running count, the free KV and
whether admission has stopped, plus what the loop wrote so far (arrays: decoded, chunk, admitted,
what each finishing request returned). The loop body is the policy's own phase code
(`Policy.plan_decodes`, `plan_partials`, `admit`, and the completion of `Policy.step`) run on one
request, the one at index i, exactly as the N = 12 theorems unroll it. For each loop three
obligations are discharged:

- **initiation**: the loop invariant holds at i = 0;
- **consecution**: invariant at i, 0 <= i < N, and one iteration imply the invariant at i + 1;
- **exit**: the invariant at i = N implies the rule.

So the rule holds for every N. The rules: DECODE-FIRST and BUDGET (decodes), PARTIAL-NEXT (partial
prompts), FCFS, SLOTS, KV and WORK-CONSERVING's admission part (admissions), KV's return (finishing:
the free KV after is the free KV before plus the reservations of exactly the requests that emit
their last token, the sum a prefix-sum array defined by its recurrence), and PROGRESS (a busy step
plans something). A policy with an admission cap fails the admissions' exit; a stalling policy
fails PROGRESS's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import z3

from stallfree.spec.verdict import Verdict

from .context import fresh_context, solver_for
from .fold import fold
from .obligation import Obligation
from .phase_guard import foreign_writes, unjudged
from .policy import Draft, Policy, SymEntry, smin
from .symbolic import SymConfig, SymRequest, SymState, check
from .theorems import TheoremResult

INT = z3.IntSort()
BOOL = z3.BoolSort()


@dataclass(frozen=True)
class Requests:
    """N requests as arrays over their index."""

    prompt: z3.ArrayRef
    max_new: z3.ArrayRef
    prefilled: z3.ArrayRef
    emitted: z3.ArrayRef
    arrived: z3.ArrayRef
    admitted: z3.ArrayRef

    @classmethod
    def fresh(cls) -> Requests:
        return cls(*(z3.Array(name, INT, s) for name, s in (("prompt", INT), ("max_new", INT), ("prefilled", INT),
                                                           ("emitted", INT), ("arrived", BOOL), ("admitted", BOOL))))

    def at(self, i: z3.ArithRef) -> SymRequest:
        return SymRequest(self.arrived[i], self.admitted[i], self.prompt[i], self.max_new[i], self.prefilled[i],
                          self.emitted[i])

    def valid(self, n: z3.ArithRef, config: SymConfig) -> z3.BoolRef:
        """Every request satisfies the step invariant's per-request parts (TYPES, FIRST-TOKEN,
        NEVER-FIT), and admitted requests come before waiting ones (FCFS)."""
        j, k = z3.Ints("j k")
        order = z3.Implies(z3.And(j >= 0, j < k, k < n, self.at(k).admitted, self.at(j).arrived), self.at(j).admitted)
        return z3.And(z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < n), self.valid_at(j, config))),
                      z3.ForAll([j, k], order))

    def valid_at(self, j: z3.ArithRef, config: SymConfig) -> z3.BoolRef:
        """The per-request parts of the invariant for request `j`."""
        return valid_request(self.at(j), config)


def valid_request(r: SymRequest, config: SymConfig) -> z3.BoolRef:
    """The per-request parts of the invariant (TYPES, FIRST-TOKEN, NEVER-FIT) for one request."""
    return z3.And(r.prompt_len >= 1, r.max_new >= 1, r.num_prefilled >= 0, r.num_prefilled <= r.prompt_len,
                  r.num_emitted >= 0, r.num_emitted <= r.max_new,
                  z3.Implies(z3.Not(r.admitted), z3.And(r.num_prefilled == 0, r.num_emitted == 0)),
                  z3.Implies(r.admitted, r.arrived),
                  z3.Implies(r.admitted, (r.num_emitted > 0) == (r.num_prefilled == r.prompt_len)),
                  r.reservation <= config.kv_tokens)


def _iteration(policy: Policy, phase: str, r: SymRequest, config: SymConfig, left: z3.ArithRef,
               running: z3.ArithRef, free: z3.ArithRef, stopped: z3.BoolRef,
               admitted: z3.ArithRef | None = None) -> Draft:
    """One iteration of `phase` of `policy` on request `r`, entered with the loop's state."""
    s = SymState(config, (r,), z3.Int("free_at_entry"))
    d = Draft(s)
    d.left, d.num_running, d.free_kv, d.stopped = left, running, free, stopped
    d.num_admitted = z3.Int("num_admitted") if admitted is None else admitted
    getattr(policy, phase)(s, d)
    return d


def _prove(obligations: list[Obligation], name: str, policy: Policy, timeout_ms: int) -> TheoremResult:
    """Each obligation in a Z3 context of its own (`context.fresh_context`): its answer is the same
    whatever the process proved before it."""
    began = time.perf_counter()
    for ob in obligations:
        ctx = fresh_context()
        solver = solver_for(ctx, timeout_ms, ob.hypothesis)
        if not _satisfiable(ob, timeout_ms, ctx) and check(solver) == z3.unsat:  # it would prove anything
            return TheoremResult(name, policy.name, 0, Verdict.UNKNOWN, time.perf_counter() - began,
                                 {"obligation": ob.name, "vacuous": "its hypothesis is unsatisfiable"})
        solver.add(z3.Not(ob.goal).translate(ctx))
        verdict = check(solver)
        if verdict == z3.sat:
            model = solver.model()
            shown = {str(d): str(model[d]) for d in model.decls() if d.arity() == 0}
            if ob.premise:
                return TheoremResult(name, policy.name, 0, Verdict.UNKNOWN, time.perf_counter() - began,
                                     {"obligation": ob.name, "premise": "not met: the theorem is not about this "
                                      "policy", "values": shown})
            return TheoremResult(name, policy.name, 0, Verdict.BROKEN, time.perf_counter() - began,
                                 {"obligation": ob.name, "values": shown})
        if verdict != z3.unsat:
            return TheoremResult(name, policy.name, 0, Verdict.UNKNOWN, time.perf_counter() - began,
                                 {"obligation": ob.name, "reason": str(solver.reason_unknown())})
    return TheoremResult(name, policy.name, 0, Verdict.HOLDS, time.perf_counter() - began)


def _satisfiable(ob: Obligation, timeout_ms: int, ctx: z3.Context) -> bool:
    """Whether a model of the hypothesis with `ob.witness` is found (one with quantifiers can take
    Z3 seconds to satisfy; with the witness, such as i = 0, it takes milliseconds)."""
    if ob.witness is None:
        return False
    return check(solver_for(ctx, timeout_ms, ob.hypothesis, ob.witness)) == z3.sat


def _common() -> tuple[SymConfig, Requests, z3.ArithRef, z3.ArithRef]:
    config = SymConfig.fresh()
    reqs = Requests.fresh()
    n, i = z3.Ints("N i")
    return config, reqs, n, i


def decodes(policy: Policy) -> list[Obligation]:
    """DECODE-FIRST and BUDGET over the decode loop: left = B - (decodes so far) >= 0, and a ready
    request goes without only once left is 0, which then stays 0."""
    config, reqs, n, i = _common()
    dec = z3.Array("decoded", INT, BOOL)
    left, count = z3.Ints("left count")
    j = z3.Int("j")

    def inv(at: z3.ArithRef, dec_: z3.ArrayRef, left_: z3.ArithRef, count_: z3.ArithRef) -> z3.BoolRef:
        return z3.And(at >= 0, at <= n, left_ >= 0, left_ == config.token_budget - count_,
                      z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < at), z3.And(
                          z3.Implies(dec_[j], reqs.at(j).ready),
                          z3.Implies(z3.And(reqs.at(j).ready, z3.Not(dec_[j])), left_ == 0)))))

    base = z3.And(config.valid(), n >= 0, reqs.valid(n, config))
    d = _iteration(policy, "plan_decodes", reqs.at(i), config, left, z3.Int("nr"), z3.Int("fk"), z3.BoolVal(False))
    took = d.decode[0]
    step = z3.And(d.defs)
    after = inv(i + 1, z3.Store(dec, i, took), d.left, count + z3.If(took, 1, 0))
    exit_goal = z3.And(left >= 0, z3.ForAll([j], z3.Implies(
        z3.And(j >= 0, j < n, reqs.at(j).ready, z3.Not(dec[j])), left == 0)))
    return [
        Obligation("initiation", base, inv(z3.IntVal(0), z3.K(INT, z3.BoolVal(False)), config.token_budget,
                                           z3.IntVal(0))),
        Obligation("consecution", z3.And(base, inv(i, dec, left, count), i < n, step), after, i == 0),
        Obligation("exit", z3.And(base, inv(n, dec, left, count)), exit_goal),
    ]


def partials(policy: Policy) -> list[Obligation]:
    """PARTIAL-NEXT over the partial loop: each partial prompt gets its remaining prompt, or the
    budget left, which is then all spent: min(remaining, left)."""
    config, reqs, n, i = _common()
    chunk = z3.Array("chunk", INT, INT)
    left, entered = z3.Ints("left entered")
    j = z3.Int("j")

    def owed_ok(j_: z3.ArithRef, chunk_: z3.ArrayRef, left_: z3.ArithRef) -> z3.BoolRef:
        r = reqs.at(j_)
        rem = r.prompt_len - r.num_prefilled
        return z3.And(chunk_[j_] >= 0, z3.Implies(z3.Not(r.partial), chunk_[j_] == 0),
                      z3.Implies(r.partial, z3.And(chunk_[j_] <= rem, z3.Or(chunk_[j_] == rem, left_ == 0))))

    def inv(at: z3.ArithRef, chunk_: z3.ArrayRef, left_: z3.ArithRef) -> z3.BoolRef:
        return z3.And(at >= 0, at <= n, left_ >= 0, left_ <= entered,
                      z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < at), owed_ok(j, chunk_, left_))))

    base = z3.And(config.valid(), n >= 0, reqs.valid(n, config), entered >= 0, entered <= config.token_budget)
    d = _iteration(policy, "plan_partials", reqs.at(i), config, left, z3.Int("nr"), z3.Int("fk"), z3.BoolVal(False))
    after = inv(i + 1, z3.Store(chunk, i, d.chunk[0]), d.left)
    exit_goal = z3.And(left >= 0, z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < n), owed_ok(j, chunk, left))))
    return [
        Obligation("initiation", base, inv(z3.IntVal(0), z3.K(INT, z3.IntVal(0)), entered)),
        Obligation("consecution", z3.And(base, inv(i, chunk, left), i < n, z3.And(d.defs)), after, i == 0),
        Obligation("exit", z3.And(base, inv(n, chunk, left)), exit_goal),
    ]


def admissions(policy: Policy) -> list[Obligation]:
    """FCFS, SLOTS, KV and the admission part of WORK-CONSERVING over the admission loop: admitted
    requests are a prefix of those waiting; once one is refused none after it is admitted, and it
    stays refused for want of budget, a slot or KV; running <= S; free >= 0."""
    config, reqs, n, i = _common()
    adm = z3.Array("admitted_now", INT, BOOL)
    left, running, free = z3.Ints("left running free")
    stopped = z3.Bool("stopped")
    head = z3.Int("head")  # the first request refused, once admission has stopped
    j, k = z3.Ints("j k")

    def refused(h: z3.ArithRef, left_: z3.ArithRef, running_: z3.ArithRef, free_: z3.ArithRef) -> z3.BoolRef:
        return z3.Or(left_ == 0, running_ >= config.max_seqs, reqs.at(h).reservation > free_)

    def inv(at: z3.ArithRef, adm_: z3.ArrayRef, left_: z3.ArithRef, running_: z3.ArithRef, free_: z3.ArithRef,
            stopped_: z3.BoolRef, head_: z3.ArithRef) -> z3.BoolRef:
        def within(x: z3.ArithRef, end: z3.ArithRef) -> z3.BoolRef:
            return z3.And(x >= 0, x < end)

        return z3.And(
            at >= 0, at <= n, left_ >= 0, running_ <= config.max_seqs, free_ >= 0,
            # only requests already met, and waiting ones, are admitted
            z3.ForAll([j], z3.Implies(adm_[j], z3.And(within(j, at), reqs.at(j).waiting))),
            # not stopped: every waiting request met so far is admitted
            z3.Implies(z3.Not(stopped_), z3.ForAll([j], z3.Implies(z3.And(within(j, at), reqs.at(j).waiting),
                                                                   adm_[j]))),
            # stopped: `head` is the first waiting request refused, it stays refused, all before it are
            # admitted and none after it
            z3.Implies(stopped_, z3.And(
                within(head_, at), reqs.at(head_).waiting, z3.Not(adm_[head_]), refused(head_, left_, running_, free_),
                z3.ForAll([j], z3.Implies(z3.And(within(j, head_), reqs.at(j).waiting), adm_[j])),
                z3.ForAll([j], z3.Implies(adm_[j], j < head_)))),
        )

    base = z3.And(config.valid(), n >= 0)
    entry = z3.And(left >= 0, left <= config.token_budget, running >= 0, running <= config.max_seqs, free >= 0,
                   free <= config.kv_tokens)
    count = z3.Int("admitted_so_far")
    d = _iteration(policy, "admit", reqs.at(i), config, left, running, free, stopped, count)
    go = d.admit[0]
    new_head = z3.If(stopped, head, i)
    after = inv(i + 1, z3.Store(adm, i, go), d.left, d.num_running, d.free_kv, d.stopped, new_head)
    exit_goal = z3.And(
        left >= 0, running <= config.max_seqs, free >= 0,  # BUDGET, SLOTS, KV
        z3.ForAll([j, k], z3.Implies(z3.And(j >= 0, j < k, k < n, adm[k], reqs.at(j).waiting), adm[j])),  # FCFS
        z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < n, reqs.at(j).waiting, z3.Not(adm[j])),  # WORK-CONSERVING
                                  z3.And(stopped, head <= j, reqs.at(head).waiting, z3.Not(adm[head]),
                                         refused(head, left, running, free)))),
    )
    # Consecution needs only request i's own facts (every request has them): an instance, not a quantifier.
    return [
        Obligation("initiation", z3.And(base, entry),
                   inv(z3.IntVal(0), z3.K(INT, z3.BoolVal(False)), left, running, free, z3.BoolVal(False), head)),
        Obligation("consecution", z3.And(base, inv(i, adm, left, running, free, stopped, head), i >= 0, i < n,
                                         reqs.valid_at(i, config), count >= 0, z3.And(d.defs)), after, i == 0),
        Obligation("exit", z3.And(base, inv(n, adm, left, running, free, stopped, head)), exit_goal),
    ]


def _completion(policy: Policy, reqs: Requests, planned: z3.ArrayRef, prefill: z3.ArrayRef,
                j: z3.ArithRef) -> tuple[SymEntry, z3.ArithRef, z3.ArithRef]:
    """Request j's entry in any plan (`planned`, `prefill`), its prefill after the step and the tokens
    the policy's completion has it emit."""
    r = reqs.at(j)
    entry = SymEntry(z3.And(planned[j], prefill[j] == 0, r.ready), z3.If(r.admitted, prefill[j], 0),
                     z3.And(planned[j], z3.Not(r.admitted)), z3.If(r.admitted, 0, prefill[j]))
    num_prefilled = r.num_prefilled + entry.prefill
    return entry, num_prefilled, policy.emitted(entry, r, num_prefilled)


def _plan_ok(reqs: Requests, planned: z3.ArrayRef, prefill: z3.ArrayRef, at: z3.ArithRef) -> z3.BoolRef:
    """Any plan the rules allow, for request `at`: a chunk within its prompt, only for a request that
    is ready (a decode: no prefill), partial or waiting."""
    r = reqs.at(at)
    return z3.And(prefill[at] >= 0, r.num_prefilled + prefill[at] <= r.prompt_len,
                  z3.Implies(prefill[at] > 0, planned[at]),
                  z3.Implies(planned[at], z3.Or(r.ready, r.partial, r.waiting)),
                  z3.Implies(z3.And(planned[at], r.ready), prefill[at] == 0))


def per_request(policy: Policy) -> list[Obligation]:
    """The per-request parts of the invariant (`Requests.valid_at`: lengths, progress within them,
    nothing before admission, FIRST-TOKEN's "emitted exactly when the prompt is done", NEVER-FIT),
    for any N: a request as add() queues it has them, and one step keeps them for a request that has
    them, whatever entry a plan keeping PREFILL-ONCE and ONE-ENTRY gives it (a chunk within its
    prompt, n >= 1 for a chunk or an admission, a decode only once its prompt is done). No other
    request enters the obligation, so it holds for every N; the plan's rules it assumes are proved of
    the policy's chained phases for any N (`chain.plan_rules`) and of the code by the code theorems."""
    config, reqs, n, i = _common()
    planned, prefill = z3.Array("planned", INT, BOOL), z3.Array("prefill", INT, INT)
    r = reqs.at(i)
    _entry, num_prefilled, tokens = _completion(policy, reqs, planned, prefill, i)
    after = SymRequest(r.arrived, z3.Or(r.admitted, planned[i]), r.prompt_len, r.max_new, num_prefilled,
                       r.num_emitted + tokens)
    after_reqs = Requests(*(z3.Store(a, i, v) for a, v in (
        (reqs.prompt, after.prompt_len), (reqs.max_new, after.max_new), (reqs.prefilled, after.num_prefilled),
        (reqs.emitted, after.num_emitted), (reqs.arrived, after.arrived), (reqs.admitted, after.admitted))))
    one_entry = z3.Implies(z3.And(planned[i], z3.Not(r.ready)), prefill[i] >= 1)
    added = z3.And(r.arrived, z3.Not(r.admitted), r.num_prefilled == 0, r.num_emitted == 0, r.prompt_len >= 1,
                   r.max_new >= 1, r.reservation <= config.kv_tokens)
    return [
        Obligation("initiation", z3.And(config.valid(), added), reqs.valid_at(i, config)),
        Obligation("consecution", z3.And(config.valid(), n >= 1, i >= 0, i < n, reqs.valid_at(i, config),
                                         _plan_ok(reqs, planned, prefill, i), one_entry),
                   after_reqs.valid_at(i, config)),
    ]


def finishing(policy: Policy) -> list[Obligation]:
    """KV conservation over the completion loop, for any N: if the free KV before completion is K
    less the reservations held (`held_before`: the requests running or admitted in the step), the free
    KV after is K less the reservations still held after it (`held_after`: admitted, tokens left, read
    off each request's state after the step). Both are prefix sums defined by their own recurrences;
    the loop invariant only relates the free KV so far to them, so the exit (KV of the state after)
    follows from the invariant and the premise, and is no part of the invariant."""
    config, reqs, n, i = _common()
    held_before = z3.Function("held_before", INT, INT)  # reservations held by requests 0..j-1 before
    held_after = z3.Function("held_after", INT, INT)  # and after the step
    planned = z3.Array("planned", INT, BOOL)  # the plan, any: which requests got an entry
    prefill = z3.Array("prefill", INT, INT)
    free, free0 = z3.Ints("free free0")

    def step_of(j_: z3.ArithRef) -> tuple[SymEntry, z3.ArithRef, z3.ArithRef]:
        return _completion(policy, reqs, planned, prefill, j_)

    def holds_before(j_: z3.ArithRef) -> z3.BoolRef:
        r = reqs.at(j_)
        return z3.And(z3.Or(r.admitted, planned[j_]), r.num_emitted < r.max_new)

    def holds_after(j_: z3.ArithRef) -> z3.BoolRef:
        r = reqs.at(j_)
        return z3.And(z3.Or(r.admitted, planned[j_]), r.num_emitted + step_of(j_)[2] < r.max_new)

    def recurrences(at: z3.ArithRef) -> z3.BoolRef:  # the definitions of the two sums, at one index
        reservation = reqs.at(at).reservation
        return z3.And(held_before(at + 1) == held_before(at) + z3.If(holds_before(at), reservation, 0),
                      held_after(at + 1) == held_after(at) + z3.If(holds_after(at), reservation, 0))

    def plan_ok(at: z3.ArithRef) -> z3.BoolRef:
        return _plan_ok(reqs, planned, prefill, at)

    # Only request i's facts are needed (every request has them): instances keep this quantifier-free.
    base = z3.And(config.valid(), n >= 0, held_before(0) == 0, held_after(0) == 0)

    def inv(at: z3.ArithRef, free_: z3.ArithRef) -> z3.BoolRef:
        return z3.And(at >= 0, at <= n, free_ == free0 + held_before(at) - held_after(at))

    r = reqs.at(i)
    entry, num_prefilled, tokens = step_of(i)
    released = policy.releases(entry, r, num_prefilled, r.num_emitted + tokens, tokens)
    after = inv(i + 1, free + z3.If(released, r.reservation, 0))
    kv_before = free0 == config.kv_tokens - held_before(n)
    return [
        Obligation("initiation", base, inv(z3.IntVal(0), free0)),
        Obligation("consecution", z3.And(base, inv(i, free), i < n, reqs.valid_at(i, config), plan_ok(i),
                                         recurrences(i)), after),
        Obligation("exit", z3.And(base, inv(n, free), kv_before), free == config.kv_tokens - held_after(n)),
    ]


def progress(policy: Policy) -> list[Obligation]:
    """PROGRESS for any N: a step with work pending plans something. Each phase's loop is entered as
    a step enters it when nothing earlier was planned: the whole budget left, and for admission
    nothing running (so all of K free); its invariant: once the loop has met a request with work of
    its kind (ready, partial, waiting), something is planned, and until then the budget is whole.
    So a ready request is decoded (B >= 1); with none ready, a partial prompt gets a chunk; with
    nothing running, the waiting head is admitted (it fits K: NEVER-FIT). Work pending means one of
    the three, so the plan is never empty while requests wait or run."""
    config, reqs, n, i = _common()
    j = z3.Int("j")
    planned = z3.Bool("planned_so_far")
    left = z3.Int("left")
    base = z3.And(config.valid(), n >= 0, reqs.valid(n, config))
    obligations = []
    for phase, pending in (("plan_decodes", lambda r: r.ready), ("plan_partials", lambda r: r.partial),
                           ("admit", lambda r: r.waiting)):
        def inv(at: z3.ArithRef, planned_: z3.BoolRef, left_: z3.ArithRef,
                pending: Callable[[SymRequest], z3.BoolRef] = pending) -> z3.BoolRef:
            seen = z3.Exists([j], z3.And(j >= 0, j < at, pending(reqs.at(j))))
            return z3.And(at >= 0, at <= n, z3.Implies(seen, planned_),
                          z3.Implies(z3.Not(planned_), left_ == config.token_budget))

        d = _iteration(policy, phase, reqs.at(i), config, left, z3.IntVal(0), config.kv_tokens, z3.BoolVal(False),
                       z3.IntVal(0))
        got = {"plan_decodes": d.decode[0], "plan_partials": d.chunk[0] > 0, "admit": d.admit[0]}[phase]
        after = inv(i + 1, z3.Or(planned, got), z3.If(planned, left, d.left))
        entered = base
        if phase == "admit":  # entered with nothing running
            entered = z3.And(base, z3.ForAll([j], z3.Not(reqs.at(j).running)))
        exit_goal = z3.Implies(z3.Exists([j], z3.And(j >= 0, j < n, pending(reqs.at(j)))), planned)
        obligations += [
            Obligation(f"{phase}: initiation", entered, inv(z3.IntVal(0), z3.BoolVal(False), config.token_budget)),
            Obligation(f"{phase}: consecution", z3.And(entered, inv(i, planned, left), i < n, z3.And(d.defs)), after,
                       i == 0),
            Obligation(f"{phase}: exit", z3.And(entered, inv(n, planned, left)), exit_goal),
        ]
    return obligations


class CappedAdmissions(Policy):
    """Admits at most 12 requests a step, however many fit: invisible to every theorem at N <= 12."""

    breaks = "WORK-CONSERVING"

    def fits(self, r: SymRequest, s: SymState, d: Draft) -> z3.BoolRef:
        return z3.And(super().fits(r, s, d), d.num_admitted < 12)


class ShortChunk(Policy):
    """A partial prompt's chunk is one token short whenever more than one token remains."""

    breaks = "PARTIAL-NEXT"

    def chunk(self, r: SymRequest, left: z3.ArithRef) -> z3.ArithRef:
        rem = r.prompt_len - r.num_prefilled
        return smin(z3.If(rem > 1, rem - 1, rem), left)


class Stalls(Policy):
    """Never decodes: once every request is ready, it plans nothing, forever."""

    breaks = "PROGRESS"

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        return None


CONTROLS: dict[str, type[Policy]] = {cls.__name__: cls for cls in (CappedAdmissions, ShortChunk, Stalls)}


@dataclass(frozen=True, slots=True)
class LoopInduction:
    name: str  # the claim, as `stallfree prove` prints it
    rules: str  # what its exit proves
    obligations: Callable[[Policy], list[Obligation]]
    control: str  # the wrong policy (`mutants.MUTANTS`) it must fail on
    folds: tuple[str, ...] = ()  # the phases its loop runs on one request: their FOLD is its premise
    # a fixed-N obligation on the policy's own step, tried when a FOLD premise fails: a counterexample
    # there refutes the claim for every N (BROKEN); holding there proves nothing (unknown stays)
    refute: Callable[[Policy], Obligation] | None = None


INDUCTIONS: tuple[LoopInduction, ...] = (
    LoopInduction("DECODES (induction)", "DECODE-FIRST, BUDGET", decodes, "FreeDecodes", ("plan_decodes",)),
    LoopInduction("PARTIALS (induction)", "PARTIAL-NEXT", partials, "ShortChunk", ("plan_partials",)),
    LoopInduction("ADMITS (induction)", "FCFS, SLOTS, KV, WORK-CONSERVING (admission)", admissions,
                  "CappedAdmissions", ("admit",)),
    LoopInduction("FINISH (induction)", "KV (conservation)", finishing, "EarlyRelease"),
    LoopInduction("PER-REQUEST (induction)", "TYPES, FIRST-TOKEN, NEVER-FIT (per request)", per_request,
                  "LateFirstToken"),
    LoopInduction("PROGRESS (induction)", "PROGRESS", progress, "Stalls", ("plan_decodes", "plan_partials", "admit")),
)


def control(loop: LoopInduction) -> Policy:
    """The wrong policy `loop` must fail on."""
    from .mutants import MUTANTS

    return {**MUTANTS, **CONTROLS}[loop.control]()


def prove_induction(loop: LoopInduction, policy: Policy | None = None, timeout_ms: int = 30_000) -> TheoremResult:
    policy = Policy() if policy is None else policy
    guarded = _guard(loop, policy)
    if guarded is not None:
        return guarded
    obligations = loop.obligations(policy)  # built first: Z3's search on them is sensitive to the order terms are made
    premises = [fold(policy, phase) for phase in loop.folds]  # FOLD, checked before the loop's own obligations
    from .fold_induction import with_any_n  # it builds on this module's loops

    result = _prove(with_any_n(policy, premises + obligations), loop.name, policy, timeout_ms)
    if loop.refute is None or result.verdict is not Verdict.UNKNOWN or "premise" not in (result.counterexample or {}):
        return result
    refuted = _prove([loop.refute(policy)], loop.name, policy, timeout_ms)
    if refuted.verdict is not Verdict.BROKEN:
        return result
    unmet = (result.counterexample or {})["obligation"]
    refuted.counterexample = {**(refuted.counterexample or {}), "premise not met": unmet}
    refuted.seconds += result.seconds
    return refuted


def _guard(loop: LoopInduction, policy: Policy) -> TheoremResult | None:
    """Not judged where the phases run are not the methods the loops run, unknown where a phase writes
    another's plan entry (`phase_guard`); None: the loops may judge the policy."""
    why = unjudged(policy)
    if why is not None:
        return TheoremResult(loop.name, policy.name, 0, Verdict.NOT_JUDGED, 0.0, {"reason": why})
    foreign = foreign_writes(policy)
    if foreign:
        return TheoremResult(loop.name, policy.name, 0, Verdict.UNKNOWN, 0.0,
                             {"obligation": "each phase writes only its own plan entries", "foreign writes": foreign,
                              "reason": "; ".join(foreign.values())})
    return None
