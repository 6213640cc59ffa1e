"""The three phases of a step chained, for any N: READY-WITHIN-BUDGET, ONE-PARTIAL, KV, the plan
rules, PARTIAL-YOUNGEST and FCFS's order of the state after the step, by induction.

`induction` proves each phase's loop on its own. Here the loops run in the order the policy's
`phases()` gives, each entered with the budget the one before left (`entered`, a constant that is
the previous loop's `left` at i = N; the first is entered with B), and each records what it decides
for request i in one array of the whole plan (DEC, CH, ADM, FC: decode, chunk, admission, first
chunk). Counts over the requests are prefix-sum functions, each defined by its recurrence (F(0) = 0,
F(j + 1) = F(j) + [fact about request j]), asserted at the one index a consecution is about, so no
obligation holds a formula for the whole step and none grows with N.

Each loop's invariant (initiation at i = 0, consecution i -> i + 1) relates what it has spent of the
budget it was entered with to what it counted: the decodes loop decodes every ready request until
the budget is spent; a chunk that completes a prompt, or an admission whose first chunk is the whole
prompt, costs at least one token; a chunk that leaves a prompt unfinished, or a first chunk shorter
than its prompt, leaves no budget; nothing is admitted once the budget is spent. A fourth loop, over
the state after the step, bounds each request's share: ready after means ready before or completed
this step; partial after means a short chunk or a short first chunk. The admission loop also
carries the free KV (what it was entered with, less the reservations admitted), and a completion
loop over the plan returns reservations as the policy's `releases` says. The rule is then one
obligation over the loops' exits and the rule before the step (ready <= B, partial <= 1, free =
K - reserved), with none of them in any invariant. Phases in another order (`AdmitBeforePartial`,
`PartialsBeforeDecodes`) or a budget that changes (`ChangingBudget`) fail it; so do admitting with
no budget left (`AdmitWithoutBudget`: a second partial), past the free KV (`IgnoreKV`) and an early
release (`EarlyRelease`).

PARTIAL-YOUNGEST and FCFS are about adjacent requests i and i + 1, so their chains (`Chain.order`)
carry order facts too: per request met (`Phase.tied`: a short chunk or short first chunk leaves no
budget, an admission needs budget entered, a refused waiting request stops admission, the flag
carried) and per pair met (`Phase.pair`: no admission right after a refusal or a short first
chunk). The rule is one obligation about an arbitrary pair i, i + 1 < N. Admission before the
partials (`AdmitBeforePartial`) fails PARTIAL-YOUNGEST's rule; skipping a refused head (`SkipAhead`)
fails FCFS's admission consecution. Every chain's first obligations are FOLD (`fold`): the policy's
phases are the fold the loops run, checked at three requests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

from .fold import folds
from .induction import INT, LoopInduction, Obligation, Requests, _iteration, _plan_ok
from .policy import Policy, SymEntry
from .symbolic import SymConfig, SymRequest

COUNTS = ("decoded", "missed", "ready", "partial", "completed_chunk", "completed_admit", "short_chunk",
          "short_admit", "ready_after", "partial_after", "running_kv", "admitted_kv", "held_after_kv")
WEIGHED = ("running_kv", "admitted_kv", "held_after_kv")  # sums of reservations, not counts
SPEND, FCFS = "spend", "fcfs"  # the order facts: a short chunk spends the budget; admission stops at a refusal
NOT_STOPPED = z3.BoolVal(False)  # admission starts not stopped
FREE_BEFORE, FREE_AFTER = z3.Int("F0"), z3.Int("free_after")  # the free KV before and after the step


@dataclass(frozen=True)
class Chain:
    """The symbols every obligation of the chain shares: the requests, N, the plan's arrays, the counts."""

    policy: Policy
    config: SymConfig
    reqs: Requests
    n: z3.ArithRef
    i: z3.ArithRef
    plan: dict[str, z3.ArrayRef]
    count: dict[str, z3.FuncDeclRef]
    order: frozenset[str] = frozenset()  # the order facts the loops also carry (`Phase.tied`, `Phase.pair`)

    @classmethod
    def fresh(cls, policy: Policy, order: frozenset[str] = frozenset()) -> Chain:
        plan = {"DEC": z3.Array("DEC", INT, z3.BoolSort()), "CH": z3.Array("CH", INT, INT),
                "ADM": z3.Array("ADM", INT, z3.BoolSort()), "FC": z3.Array("FC", INT, INT)}
        count = {name: z3.Function(f"count_{name}", INT, INT) for name in COUNTS}
        return cls(policy, SymConfig.fresh(), Requests.fresh(), z3.Int("N"), z3.Int("i"), plan, count, order)

    def facts(self, j: z3.ArithRef) -> dict[str, z3.BoolRef]:
        """What each count counts, about request j and its entry in the plan."""
        r, p = self.reqs.at(j), self.plan
        rem = r.prompt_len - r.num_prefilled
        after = self.after(j)
        return {
            "decoded": p["DEC"][j], "missed": z3.And(r.ready, z3.Not(p["DEC"][j])), "ready": r.ready,
            "partial": r.partial, "completed_chunk": z3.And(r.partial, p["CH"][j] > 0, p["CH"][j] == rem),
            "completed_admit": z3.And(p["ADM"][j], p["FC"][j] == r.prompt_len),
            "short_chunk": z3.And(r.partial, p["CH"][j] < rem),
            "short_admit": z3.And(p["ADM"][j], p["FC"][j] < r.prompt_len),
            "ready_after": after.ready, "partial_after": after.partial,
            "running_kv": r.running, "admitted_kv": p["ADM"][j], "held_after_kv": after.running,
        }

    def entry(self, j: z3.ArithRef) -> SymEntry:
        p = self.plan
        return SymEntry(p["DEC"][j], p["CH"][j], p["ADM"][j], p["FC"][j])

    def after(self, j: z3.ArithRef) -> SymRequest:
        """Request j after the step, completed by the policy from its entry in the plan."""
        r, entry = self.reqs.at(j), self.entry(j)
        num_prefilled = r.num_prefilled + entry.prefill
        tokens = self.policy.emitted(entry, r, num_prefilled)
        return SymRequest(r.arrived, z3.Or(r.admitted, entry.admit), r.prompt_len, r.max_new, num_prefilled,
                          r.num_emitted + tokens)

    def c(self, name: str, at: z3.ArithRef) -> z3.ArithRef:
        return self.count[name](at)

    def recurrences(self, names: tuple[str, ...], at: z3.ArithRef) -> z3.BoolRef:
        """The definitions of the named counts, at index `at`."""
        facts = self.facts(at)
        weight = self.reqs.at(at).reservation
        return z3.And([self.c(k, at + 1) == self.c(k, at) + z3.If(facts[k], weight if k in WEIGHED else 1, 0)
                       for k in names])

    def base(self) -> z3.BoolRef:
        return z3.And(self.config.valid(), self.n >= 0, *(self.c(k, z3.IntVal(0)) == 0 for k in COUNTS))


Tied = Callable[[Chain, z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.BoolRef], z3.BoolRef]
Pair = tuple[z3.ArithRef, z3.ArithRef]  # the budget left and the free KV


@dataclass(frozen=True)
class Phase:
    """One phase's loop: the array it writes, the counts it defines, its invariant in two parts: what
    holds of the loop's state (`scalar`: chain, i, entered, left) and of each request it has met
    (`each`: chain, j); and what it does to the free KV (`kv`: chain, i, free entered with, free;
    default: nothing); the order facts, only in a chain that carries them: of each request met with
    the loop's state (`tied`: chain, j, entered, left, stopped) and of each pair j, j + 1 met (`pair`)."""

    array: str
    counts: tuple[str, ...]
    scalar: Callable[[Chain, z3.ArithRef, z3.ArithRef, z3.ArithRef], z3.BoolRef]
    each: Callable[[Chain, z3.ArithRef], z3.BoolRef]
    kv: Callable[[Chain, z3.ArithRef, z3.ArithRef, z3.ArithRef], z3.BoolRef] = lambda c, at, fin, free: free == fin
    tied: Tied = lambda c, j, entered, left, stopped: z3.BoolVal(True)
    pair: Callable[[Chain, z3.ArithRef], z3.BoolRef] = lambda c, j: z3.BoolVal(True)

    def state(self, c: Chain, at: z3.ArithRef, entered: tuple[z3.ArithRef, z3.ArithRef],
              now: tuple[z3.ArithRef, z3.ArithRef]) -> z3.BoolRef:
        """The loop's state part at `at`: budget and free KV `now`, entered with `entered`."""
        return z3.And(self.scalar(c, at, entered[0], now[0]), self.kv(c, at, entered[1], now[1]))

    def met(self, c: Chain, j: z3.ArithRef, entered: z3.ArithRef, left: z3.ArithRef,
            stopped: z3.BoolRef) -> z3.BoolRef:
        """What the loop's invariant says of request j once met (the order facts only in a chain that
        carries them), with the budget it was entered with,
        the budget `left` and whether admission has `stopped` (at the exit: what the loop left)."""
        if not c.order:
            return self.each(c, j)
        return z3.And(self.each(c, j), self.tied(c, j, entered, left, stopped))

    def pairs(self, c: Chain, j: z3.ArithRef) -> z3.BoolRef:
        """What the invariant says of requests j and j + 1, both met (only in an ordered chain)."""
        return self.pair(c, j) if c.order else z3.BoolVal(True)

    def invariant(self, c: Chain, at: z3.ArithRef, entered: tuple[z3.ArithRef, z3.ArithRef],
                  now: tuple[z3.ArithRef, z3.ArithRef], stopped: z3.BoolRef = NOT_STOPPED) -> z3.BoolRef:
        j = z3.Int("j")
        return z3.And(self.state(c, at, entered, now),
                      z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < at), self.met(c, j, entered[0], now[0], stopped))),
                      z3.ForAll([j], z3.Implies(z3.And(j >= 0, j + 1 < at), self.pairs(c, j))))


def _spent(c: Chain, at: z3.ArithRef, entered: z3.ArithRef, left: z3.ArithRef, count: str) -> z3.BoolRef:
    return z3.And(at >= 0, at <= c.n, left >= 0, left <= entered, c.c(count, at) <= entered - left)


def _decodes(c: Chain, at: z3.ArithRef, entered: z3.ArithRef, left: z3.ArithRef) -> z3.BoolRef:
    missed = c.c("missed", at)
    return z3.And(_spent(c, at, entered, left, "decoded"), c.c("ready", at) == c.c("decoded", at) + missed,
                  missed >= 0, z3.Implies(missed > 0, left == 0))


def _decode_ok(c: Chain, j: z3.ArithRef) -> z3.BoolRef:
    return z3.Implies(c.plan["DEC"][j], c.reqs.at(j).ready)


def _partials(c: Chain, at: z3.ArithRef, entered: z3.ArithRef, left: z3.ArithRef) -> z3.BoolRef:
    short = c.c("short_chunk", at)
    return z3.And(_spent(c, at, entered, left, "completed_chunk"), short <= c.c("partial", at),
                  z3.Implies(short > 0, left == 0))


def _chunk_ok(c: Chain, j: z3.ArithRef) -> z3.BoolRef:
    r, ch = c.reqs.at(j), c.plan["CH"][j]
    return z3.And(ch >= 0, ch <= r.prompt_len - r.num_prefilled, z3.Implies(ch > 0, r.partial))


def _admissions(c: Chain, at: z3.ArithRef, entered: z3.ArithRef, left: z3.ArithRef) -> z3.BoolRef:
    short = c.c("short_admit", at)
    return z3.And(_spent(c, at, entered, left, "completed_admit"), short <= 1, z3.Implies(short > 0, left == 0),
                  z3.Implies(entered == 0, short == 0))


def _admit_ok(c: Chain, j: z3.ArithRef) -> z3.BoolRef:
    r, adm, fc = c.reqs.at(j), c.plan["ADM"][j], c.plan["FC"][j]
    return z3.And(fc >= 0, fc <= r.prompt_len, z3.Implies(adm, z3.And(r.waiting, fc >= 1)),
                  z3.Implies(z3.Not(adm), fc == 0))


def _admitted_kv(c: Chain, at: z3.ArithRef, fin: z3.ArithRef, free: z3.ArithRef) -> z3.BoolRef:
    return z3.And(free == fin - c.c("admitted_kv", at), free >= 0)


def _short_chunk_spends(c: Chain, j: z3.ArithRef, entered: z3.ArithRef, left: z3.ArithRef,
                       stopped: z3.BoolRef) -> z3.BoolRef:
    """A chunk that leaves request j's prompt unfinished has left no budget, from then on (SPEND)."""
    return z3.Implies(c.facts(j)["short_chunk"], left == 0) if SPEND in c.order else z3.BoolVal(True)


def _admitted_in_order(c: Chain, j: z3.ArithRef, entered: z3.ArithRef, left: z3.ArithRef,
                       stopped: z3.BoolRef) -> z3.BoolRef:
    """Request j, once met by admission: admitted only if the loop was entered with budget; a first
    chunk short of its prompt has left no budget (SPEND); a waiting request refused has stopped
    admission (FCFS)."""
    r, adm = c.reqs.at(j), c.plan["ADM"][j]
    facts = [z3.Implies(adm, entered > 0), z3.Implies(c.facts(j)["short_admit"], left == 0)] if SPEND in c.order else []
    if FCFS in c.order:
        facts.append(z3.Implies(z3.And(r.waiting, z3.Not(adm)), stopped))
    return z3.And(facts)


def _admission_pair(c: Chain, j: z3.ArithRef) -> z3.BoolRef:
    """Requests j and j + 1, both met by admission: j + 1 is not admitted after j was refused while
    waiting (FCFS) or after j's first chunk fell short of its prompt (SPEND: it took the rest of the
    budget)."""
    r, adm = c.reqs.at(j), c.plan["ADM"]
    blocks = {FCFS: z3.And(r.waiting, z3.Not(adm[j])), SPEND: c.facts(j)["short_admit"]}
    return z3.Implies(z3.Or([blocks[k] for k in sorted(c.order)]), z3.Not(adm[j + 1]))


PHASES: dict[str, Phase] = {
    "plan_decodes": Phase("DEC", ("decoded", "missed", "ready"), _decodes, _decode_ok),
    "plan_partials": Phase("CH", ("completed_chunk", "short_chunk", "partial"), _partials, _chunk_ok,
                           tied=_short_chunk_spends),
    "admit": Phase("ADM", ("completed_admit", "short_admit", "admitted_kv"), _admissions, _admit_ok, _admitted_kv,
                   _admitted_in_order, _admission_pair),
}




def _phase_loop(c: Chain, name: str, entered: Pair, exited: Pair) -> tuple[list[Obligation], z3.BoolRef]:
    """Initiation and consecution of phase `name`'s loop, entered with `entered` (budget, free KV);
    and its exit's state part (the invariant at i = N, leaving `exited`), which later obligations
    assume. The running count is left any value each iteration; whether admission has stopped is
    carried from one iteration to the next (admission starts not stopped)."""
    phase = PHASES[name]
    left, free = z3.Int(f"{name}.left"), z3.Int(f"{name}.free")
    d = _iteration(c.policy, name, c.reqs.at(c.i), c.config, left, z3.Int(f"{name}.running"),
                   free, z3.Bool(f"{name}.stopped"), z3.Int(f"{name}.admitted"))
    i = c.i
    writes = {"DEC": c.plan["DEC"][i] == d.decode[0], "CH": c.plan["CH"][i] == d.chunk[0],
              "ADM": z3.And(c.plan["ADM"][i] == d.admit[0], c.plan["FC"][i] == d.first_chunk[0])}[phase.array]
    entry = z3.And(c.base(), entered[0] >= 0, entered[1] >= 0)
    stopped = z3.Bool(f"{name}.stopped")
    step = z3.And(entry, phase.invariant(c, i, entered, (left, free), stopped), i < c.n,
                  c.reqs.valid_at(i, c.config), z3.And(d.defs), writes, c.recurrences(phase.counts, i))
    return [
        Obligation(f"{name}: initiation", entry, phase.invariant(c, z3.IntVal(0), entered, entered)),
        Obligation(f"{name}: consecution", step, phase.invariant(c, i + 1, entered, (d.left, d.free_kv), d.stopped),
                   i == 0),
    ], phase.state(c, c.n, entered, exited)


def _after(c: Chain, at: z3.ArithRef) -> z3.BoolRef:
    """The loop over the state after the step: each request's share of the counts after."""
    return z3.And(at >= 0, at <= c.n,
                  c.c("ready_after", at) <= c.c("ready", at) + c.c("completed_chunk", at) + c.c("completed_admit", at),
                  c.c("partial_after", at) <= c.c("short_chunk", at) + c.c("short_admit", at))


def _completion(c: Chain, free_admitted: z3.ArithRef, met: list[z3.BoolRef]) -> tuple[list[Obligation], z3.BoolRef]:
    """The completion loop over the plan, entered with the free KV admission left: a reservation
    comes back as the policy's `releases` says, and the free KV so far is what admission left, plus
    the reservations held before (running, or admitted now), less those held after, over the
    requests met; it leaves FREE_AFTER."""
    def inv(at: z3.ArithRef, free: z3.ArithRef) -> z3.BoolRef:
        held = c.c("running_kv", at) + c.c("admitted_kv", at) - c.c("held_after_kv", at)
        return z3.And(at >= 0, at <= c.n, free == free_admitted + held, free >= free_admitted)

    i, free = c.i, z3.Int("complete.free")
    r, entry, after = c.reqs.at(i), c.entry(i), c.after(i)
    tokens = after.num_emitted - r.num_emitted
    released = c.policy.releases(entry, r, after.num_prefilled, after.num_emitted, tokens)
    step = z3.And(c.base(), inv(i, free), *met, i < c.n, c.reqs.valid_at(i, c.config),
                  c.recurrences(("running_kv", "admitted_kv", "held_after_kv"), i))
    return [Obligation("complete: initiation", c.base(), inv(z3.IntVal(0), free_admitted)),
            Obligation("complete: consecution", step, inv(i + 1, free + z3.If(released, r.reservation, 0)))
            ], inv(c.n, FREE_AFTER)


def chain(c: Chain) -> tuple[list[Obligation], z3.BoolRef]:
    """Every loop's obligations, in the policy's phase order, and what their exits give together."""
    obligations: list[Obligation] = folds(c.policy)  # the premise: each phase is the fold the loops run
    exits = []
    entered: Pair = (c.config.token_budget, FREE_BEFORE)
    for k, phase in enumerate(c.policy.phases()):
        exited = (z3.Int(f"L{k + 1}"), z3.Int(f"F{k + 1}"))
        obs, exit_ = _phase_loop(c, phase.__name__, entered, exited)
        obligations += obs
        exits.append(exit_)
        entered = exited
    i = c.i
    sums = ("ready_after", "partial_after", "ready", "completed_chunk", "completed_admit", "short_chunk",
            "short_admit")
    # Each loop's exit gives its per-request fact for every j < N; the consecution takes it at j = i.
    met = [PHASES[phase.__name__].each(c, i) for phase in c.policy.phases()]
    step = z3.And(c.base(), *exits, *met, _after(c, i), i >= 0, i < c.n, c.reqs.valid_at(i, c.config),
                  c.recurrences(sums, i))
    obligations += [Obligation("after: initiation", c.base(), _after(c, z3.IntVal(0))),
                    Obligation("after: consecution", step, _after(c, i + 1))]
    completion, done = _completion(c, entered[1], met)
    return obligations + completion, z3.And(c.base(), *exits, _after(c, c.n), done)


def ready_within_budget(policy: Policy) -> list[Obligation]:
    """READY-WITHIN-BUDGET for any N: ready <= B before the step implies ready <= B after it (the
    budget of the state after: `Policy.after_config`)."""
    c = Chain.fresh(policy)
    obligations, exits = chain(c)
    before = c.c("ready", c.n) <= c.config.token_budget
    goal = c.c("ready_after", c.n) <= policy.after_config(c.config).token_budget
    return [*obligations, Obligation("chain: the rule", z3.And(exits, before), goal)]


def one_partial(policy: Policy) -> list[Obligation]:
    """ONE-PARTIAL for any N: at most one partial before the step implies at most one after it."""
    c = Chain.fresh(policy)
    obligations, exits = chain(c)
    before = c.c("partial", c.n) <= 1
    return [*obligations, Obligation("chain: the rule", z3.And(exits, before), c.c("partial_after", c.n) <= 1)]


def kv(policy: Policy) -> list[Obligation]:
    """KV through the whole step for any N: free = K - (reservations of the running requests) before
    the step implies the same of the state after it, and free >= 0, through admission (which
    takes reservations) and completion (which returns them)."""
    c = Chain.fresh(policy)
    obligations, exits = chain(c)
    before = z3.And(c.config.kv_tokens - c.c("running_kv", c.n) == FREE_BEFORE, FREE_BEFORE >= 0)
    goal = z3.And(c.config.kv_tokens - c.c("held_after_kv", c.n) == FREE_AFTER, FREE_AFTER >= 0)
    return [*obligations, Obligation("chain: the rule", z3.And(exits, before), goal)]


def plan_rules(policy: Policy) -> list[Obligation]:
    """The plan rules PER-REQUEST and FINISH assume of any plan (`induction._plan_ok`: a chunk
    within the prompt, an entry only for a ready, partial or waiting request, a decode with no
    prefill; ONE-ENTRY: a chunk or an admission of at least one token), for every request of the
    chained phases' plan, any N: each loop's exit gives its per-request fact for every j < N, and
    together they give the rules at any i < N."""
    c = Chain.fresh(policy)
    obligations, _exits = chain(c)
    i, j, p = c.i, z3.Int("j"), c.plan
    planned = z3.Lambda([j], z3.Or(p["DEC"][j], p["CH"][j] > 0, p["ADM"][j]))
    prefill = z3.Lambda([j], p["CH"][j] + p["FC"][j])
    met = [PHASES[phase.__name__].each(c, i) for phase in policy.phases()]
    one_entry = z3.Implies(z3.And(planned[i], z3.Not(c.reqs.at(i).ready)), prefill[i] >= 1)
    hypothesis = z3.And(c.base(), *met, i >= 0, i < c.n, c.reqs.valid_at(i, c.config))
    return [*obligations, Obligation("chain: the plan rules", hypothesis,
                                     z3.And(_plan_ok(c.reqs, planned, prefill, i), one_entry))]


def _met_at_exits(c: Chain, j: z3.ArithRef) -> z3.BoolRef:
    """What each phase's invariant at its exit (i = N) says of request j, and of j and j + 1 as a pair
    (the instances the adjacent rules need; the invariants quantify over every j < N)."""
    facts = []
    entered = c.config.token_budget
    for k, phase in enumerate(c.policy.phases()):
        ph, left = PHASES[phase.__name__], z3.Int(f"L{k + 1}")
        stopped = z3.Bool(f"S{k + 1}")
        facts += [ph.met(c, j, entered, left, stopped), ph.met(c, j + 1, entered, left, stopped), ph.pairs(c, j)]
        entered = left
    return z3.And(facts)


def _adjacent(policy: Policy, order: frozenset[str], before: Callable[[Chain, SymRequest, SymRequest], z3.BoolRef],
              after: Callable[[Chain, SymRequest, SymRequest], z3.BoolRef]) -> list[Obligation]:
    """A rule about requests i and i + 1 (any adjacent pair of any N): `before` of the state before
    the step implies `after` of the state after it, from the chain's exits; the rule is in no
    invariant."""
    c = Chain.fresh(policy, order)
    obligations, exits = chain(c)
    i = c.i
    where = z3.And(i >= 0, i + 1 < c.n, c.reqs.valid_at(i, c.config), c.reqs.valid_at(i + 1, c.config))
    pair = (c.reqs.at(i), c.reqs.at(i + 1))
    return [*obligations, Obligation("chain: the rule", z3.And(z3.And(exits, _met_at_exits(c, i), where),
                                                                before(c, *pair)),
                                     after(c, c.after(i), c.after(i + 1)))]


def _fcfs_order(c: Chain, r: SymRequest, s: SymRequest) -> z3.BoolRef:
    """FCFS (the state's part): request i + 1 arrived only if i did, and is admitted only if i is."""
    return z3.And(z3.Implies(s.arrived, r.arrived), z3.Implies(s.admitted, r.admitted))


def _partial_youngest(c: Chain, r: SymRequest, s: SymRequest) -> z3.BoolRef:
    """PARTIAL-YOUNGEST: with request i partway through its prompt, i + 1 is not admitted."""
    return z3.Implies(r.partial, z3.Not(s.admitted))


def fcfs_after(policy: Policy) -> list[Obligation]:
    """FCFS of the state after the step, for any N: the arrived requests a prefix of the indexes and
    the admitted a prefix of those before the step implies the same after it, for every adjacent
    pair: a request admitted now was waiting, and admission, once it refuses a waiting request,
    admits none after it (the admission loop's pair invariant, with `stopped` carried)."""
    return _adjacent(policy, frozenset({FCFS}), _fcfs_order, _fcfs_order)


def partial_youngest(policy: Policy) -> list[Obligation]:
    """PARTIAL-YOUNGEST for any N: a partial request is the last admitted, before the step (with
    FCFS) and after it. A partial after the step got a short chunk, which left no budget, so the
    admission loop after it admits nothing; or a short first chunk, after which admission admits no
    further request (the admission loop's pair invariant)."""
    def before(c: Chain, r: SymRequest, s: SymRequest) -> z3.BoolRef:
        return z3.And(_partial_youngest(c, r, s), _fcfs_order(c, r, s))

    return _adjacent(policy, frozenset({SPEND}), before, _partial_youngest)


CHAINS: tuple[LoopInduction, ...] = (
    LoopInduction("READY-WITHIN-BUDGET (induction, phases chained)", "READY-WITHIN-BUDGET", ready_within_budget,
                  "ChangingBudget"),
    LoopInduction("ONE-PARTIAL (induction, phases chained)", "ONE-PARTIAL", one_partial, "AdmitBeforePartial"),
    LoopInduction("KV (induction, phases chained)", "KV", kv, "IgnoreKV"),
    LoopInduction("PLAN RULES (induction, phases chained)",
                  "PREFILL-ONCE, ONE-ENTRY (the premise of PER-REQUEST, FINISH)", plan_rules, "AdmitWithoutBudget"),
    LoopInduction("PARTIAL-YOUNGEST (induction, phases chained)", "PARTIAL-YOUNGEST", partial_youngest,
                  "AdmitBeforePartial"),
    LoopInduction("FCFS (induction, phases chained)", "FCFS (the order of the state after the step)", fcfs_after,
                  "SkipAhead"),
)
