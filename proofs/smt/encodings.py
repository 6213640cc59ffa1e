"""The rules are written three times in code: as the monitor's predicates (`spec.reservation.rules`), as the Z3
theorems' claims (`claims`) and as the CrossHair contracts' postconditions (`contracts.contracts`:
`limits` and `policy`). This compares them on concrete steps, so that a weakened encoding of any is
caught: for each rule, on each step, the rule's predicates and its claim must agree, and so must the
contracts' postcondition where one states the rule of a step (the plan rules below; KV's contract
part reads the free KV right after schedule(), a narrower fact than the rule's, so it is left out).

The steps come from the reference and from every scheduler of `stallfree.faults`, on random
workloads, each played until its first step that one encoding judges broken (so every state
compared is one the rules allow, which is what the claims assume). A step the per-request Z3 plan
cannot express (a rid listed twice or unknown, an entry of n < 1, a decode of more than one token)
is left out. The claims are compiled once (`compiled`) over a free step: the state before (its
running requests in admission order, then waiting ones in arrival order), the plan per request,
what each emitted, the state after, and the free KV.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import z3

from stallfree.faults import FAULTS, MORE_FAULTS
from stallfree.reference import Scheduler
from stallfree.spec import RULES, Config
from stallfree.spec.reservation.facts import StepFacts, apply, observe, observe_emitted
from stallfree.spec.reservation.shadow import Shadow
from stallfree.spec.types import Entry, Plan, Request
from stallfree.testing.generate import Ranges, random_workload

from ..contracts import contracts
from ..explicit.clone import clone
from .compiled import compile_terms
from .policy import SymEntry, SymStep
from .symbolic import SymConfig, SymRequest, SymState
from .theorems import THEOREMS

# A step that breaks one of these is ill-formed (a position run twice or past the prompt's end, a
# request listed twice or for no tokens, a token out of turn): the other rules are not compared on it.
WELL_FORMED = ("ONE-ENTRY", "PREFILL-ONCE", "TOKENS")
PERTURBATIONS = 2  # perturbed plans judged per step of the reference
SIZE = 8  # requests in the compiled claims; workloads have at most this many
RANGES = Ranges(max_budget=6, max_seqs=4, max_prompt=5, max_new=8, max_requests=SIZE, max_gap=2,
                never_fit_share=0.0)
SpecCheck = Callable[[Shadow, StepFacts], "str | None"]
ZClaim = Callable[[SymStep], z3.BoolRef]
SPEC: dict[str, tuple[SpecCheck, ...]] = {
    r.id: tuple(c for c in (r.plan_check, r.done_check) if c is not None) for r in RULES if r.plan_check or r.done_check
}
Z3_CLAIMS: dict[str, ZClaim] = {t.name: t.claim for t in THEOREMS if t.name in SPEC}


@dataclass
class Tally:
    both_hold: int = 0
    both_broken: int = 0
    confounded: int = 0  # ill-formed steps (another of WELL_FORMED broken): not compared
    disagreements: list[str] = field(default_factory=list)


class CompiledClaims:
    """The claims of `by_rule`, over a free step of SIZE requests, compiled to one Python function."""

    def __init__(self, by_rule: dict[str, ZClaim]) -> None:
        config = SymConfig.fresh()
        before = SymState.fresh("b", SIZE, config)
        after = SymState(config, tuple(
            SymRequest(b.arrived, z3.Bool(f"a.r{i}.admitted"), b.prompt_len, b.max_new,
                       z3.Int(f"a.r{i}.num_prefilled"), z3.Int(f"a.r{i}.num_emitted"))
            for i, b in enumerate(before.requests)), z3.Int("a.free_kv"))
        plan = tuple(SymEntry(z3.Bool(f"p{i}.decode"), z3.Int(f"p{i}.chunk"), z3.Bool(f"p{i}.admit"),
                              z3.Int(f"p{i}.first_chunk")) for i in range(SIZE))
        emits = tuple(z3.Bool(f"e{i}") for i in range(SIZE))
        free_after_admission = z3.Int("free_after_admission")
        step = SymStep(before, plan, emits, after, free_after_admission, z3.BoolVal(True))
        self.inputs: list[Any] = [config.token_budget, config.max_seqs, config.kv_tokens, before.free_kv,
                                  after.free_kv, free_after_admission]
        for b, a, e, emitted in zip(before.requests, after.requests, plan, emits, strict=True):
            self.inputs += [b.arrived, b.admitted, b.prompt_len, b.max_new, b.num_prefilled, b.num_emitted,
                            a.admitted, a.num_prefilled, a.num_emitted, e.decode, e.chunk, e.admit, e.first_chunk,
                            emitted]
        self.rules = list(by_rule)
        defs: list[z3.BoolRef] = []
        bodies = []
        for rule in self.rules:
            claim = by_rule[rule](step)
            if z3.is_implies(claim) and z3.is_and(claim.arg(0)):  # `claims.Names`: definitions -> body
                defs += claim.arg(0).children()
                claim = claim.arg(1)
            bodies.append(claim)
        self.run = compile_terms(self.inputs, z3.And(defs) if defs else z3.BoolVal(True), bodies)

    def judge(self, values: list[Any]) -> dict[str, bool]:
        return dict(zip(self.rules, self.run(values), strict=True))


@dataclass(frozen=True, slots=True)
class Step:
    """One concrete step: the shadow before it, its facts (emitted included), the shadow after, the
    scheduler's shown free KV before and after (the shadow's where it shows none), and what the
    spec's predicates said of it (judged, as the monitor judges, before the shadow advances)."""

    before: Shadow
    facts: StepFacts
    after: Shadow
    free_before: int
    free_after: int
    by_spec: dict[str, bool]


def values(step: Step) -> list[Any] | None:
    """The compiled claims' inputs for `step`, or None where the per-request plan cannot express it."""
    s, f = step.before, step.facts
    tracks = [*s.running.values(), *s.waiting]
    if len(tracks) > SIZE:
        return None
    index = {t.rid: i for i, t in enumerate(tracks)}
    entries: dict[int, tuple[bool, int, bool, int]] = {}
    for rid, n in f.plan:
        i = index.get(rid)
        if i is None or i in entries or n < 1:
            return None
        t = tracks[i]
        if t.admitted_at is None:
            entries[i] = (False, 0, True, n)
        elif t.is_ready:
            if n != 1:
                return None
            entries[i] = (True, 0, False, 0)
        else:
            entries[i] = (False, n, False, 0)
    emitted = [index.get(rid) for rid in f.emitted]
    if None in emitted or len(set(emitted)) != len(emitted):
        return None
    c = s.config
    out: list[Any] = [c.token_budget, c.max_seqs, c.kv_tokens, step.free_before, step.free_after,
                      step.free_before - f.admitted_reservation]
    for i in range(SIZE):
        if i >= len(tracks):
            out += [False, False, 1, 1, 0, 0, False, 0, 0, False, 0, False, 0, False]
            continue
        t = tracks[i]
        p, m = t.request.prompt_len, t.request.max_new
        later = step.after.tracks.get(t.rid)
        after = (True, p, m) if later is None else (later.admitted_at is not None, later.num_prefilled,
                                                    later.num_emitted)
        out += [True, t.admitted_at is not None, p, m, t.num_prefilled, t.num_emitted, *after,
                *entries.get(i, (False, 0, False, 0)), i in emitted]
    return out


def steps(factory: Callable[..., Any], config: Config, arrivals: Iterable[Any], max_steps: int,
          spec: dict[str, tuple[SpecCheck, ...]]) -> Iterable[Step]:
    """The steps of `factory` on a workload, with nothing judged: the shadow follows what it does."""
    scheduler = factory(token_budget=config.token_budget, max_seqs=config.max_seqs, kv_tokens=config.kv_tokens)
    shadow = Shadow(config)
    pending = sorted(arrivals, key=lambda a: a.arrival_step)

    for number in range(max_steps):
        while pending and pending[0].arrival_step <= number:
            a = pending.pop(0)
            scheduler.add(a.rid, a.prompt_len, a.max_new)
            shadow.accept(Request(a.rid, a.prompt_len, a.max_new))
        if not pending and shadow.is_idle:
            return
        before = clone(shadow)
        free_before = _free(scheduler, shadow)
        try:
            plan = scheduler.schedule()
            facts = observe(shadow, plan)
            emitted = scheduler.complete(plan)
            observe_emitted(shadow, facts, emitted, getattr(scheduler, "free_kv", None))
            by_spec = {rule: all(check(shadow, facts) is None for check in checks) for rule, checks in spec.items()}
            apply(shadow, facts)
        except Exception:  # malformed beyond what either encoding judges (RuleViolation: PROTOCOL)
            return
        yield Step(before, facts, shadow, free_before, _free(scheduler, shadow), by_spec)
        shadow = clone(shadow)


def _free(scheduler: Any, shadow: Shadow) -> int:
    shown = getattr(scheduler, "free_kv", None)
    return shown if type(shown) is int else shadow.free_kv


SCHEDULERS: tuple[Callable[..., Any], ...] = (Scheduler, *FAULTS.values(), *MORE_FAULTS)
# The rules judged on the plan alone, by both encodings: these are also compared on plans perturbed
# from the reference's (an entry dropped, one token more or less, a later request admitted instead
# or as well, two entries swapped, the youngest ready request's decode dropped), which break one
# rule at a time far more often than a fault does.
PLAN_RULES = ("BUDGET", "ONE-ENTRY", "SLOTS", "PREFILL-ONCE", "FCFS", "DECODE-FIRST", "PARTIAL-NEXT",
              "WORK-CONSERVING")


def perturbed(step: Step, rng: random.Random, spec: dict[str, tuple[SpecCheck, ...]]) -> Step | None:
    """`step` with its plan changed one way at random, judged by the spec's plan predicates only (the
    step is not run: the state after is left as before, which no plan rule reads)."""
    entries = list(step.facts.plan)
    waiting = [t.rid for t in step.before.waiting if t.rid not in {rid for rid, _ in entries}]
    decodes = [i for i, (rid, _) in enumerate(entries) if step.before.tracks[rid].is_ready]
    how = rng.randrange(6)
    if how == 5 and len(decodes) > 1:  # the youngest ready request goes without
        entries.pop(decodes[-1])
    elif how == 0 and entries:
        entries.pop(rng.randrange(len(entries)))
    elif how == 1 and entries:
        i = rng.randrange(len(entries))
        entries[i] = (entries[i][0], entries[i][1] + rng.choice((-1, 1)))
    elif how == 2 and waiting:
        admitted = [i for i, (rid, _) in enumerate(entries) if step.before.tracks[rid].admitted_at is None]
        if admitted:
            i = rng.choice(admitted)
            entries[i] = (rng.choice(waiting), entries[i][1])
        else:
            entries.append((rng.choice(waiting), 1))
    elif how == 3 and waiting:
        entries.append((rng.choice(waiting), rng.randint(1, 3)))
    elif how == 4 and len(entries) > 1:
        i, j = rng.sample(range(len(entries)), 2)
        entries[i], entries[j] = entries[j], entries[i]
    else:
        return None
    shadow = clone(step.before)
    try:
        facts = observe(shadow, Plan(shadow.step, tuple(Entry(rid, n) for rid, n in entries)))
    except Exception:  # not a plan either encoding reads (n < 1 is one: ONE-ENTRY's first check)
        return None
    by_spec = {rule: all(check(shadow, facts) is None for check in spec[rule]) for rule in PLAN_RULES}
    return Step(shadow, facts, shadow, step.free_before, step.free_before, by_spec)


CrossHairEncoding = Callable[[Step], dict[str, bool]]
CROSSHAIR_RULES = ("BUDGET", "ONE-ENTRY", "SLOTS", "FCFS", "DECODE-FIRST", "PARTIAL-NEXT", "WORK-CONSERVING")
CROSSHAIR = " (CrossHair)"  # the suffix of a CrossHair encoding's tally


def crosshair_verdicts(step: Step) -> dict[str, bool]:
    """The CrossHair contracts' postconditions (`contracts.limits`, `contracts.policy`) of `step`,
    read from the shadow before it and its plan: the running and waiting requests and the free KV
    right after schedule() are the ones before, with the plan's admissions moved across."""
    s, f = step.before, step.facts
    config = (s.config.token_budget, s.config.max_seqs, s.config.kv_tokens)
    admitted = [rid for rid, _ in f.plan if rid in s.tracks and s.tracks[rid].admitted_at is None]
    running = [t.request for t in s.running.values()] + [s.tracks[rid].request for rid in dict.fromkeys(admitted)]
    waiting_before = [t.request for t in s.waiting]
    moved = set(admitted)
    waiting = [r for r in waiting_before if r.rid not in moved]
    free_kv = step.free_before - f.admitted_reservation
    arrival = {rid: i for i, rid in enumerate(s.tracks)}
    ready = [rid for rid, t in s.running.items() if t.is_ready]
    remaining = {rid: t.num_remaining_prompt for rid, t in s.prefilling.items()}
    kept = contracts.limits(config, f.plan, running, waiting, free_kv, arrival.__getitem__)
    kept |= contracts.policy(config, ready, remaining, waiting_before, f.plan, len(running), free_kv)
    return {rule: kept[rule] for rule in CROSSHAIR_RULES}


def compare(num_workloads: int, z3_claims: dict[str, ZClaim] | None = None,
            spec: dict[str, tuple[SpecCheck, ...]] | None = None, seed: int = 7,
            crosshair: CrossHairEncoding = crosshair_verdicts) -> dict[str, Tally]:
    """Judge every step (until the first one judged broken) of every scheduler on `num_workloads`
    random workloads with every encoding; per rule, how often the Z3 claim and the spec agree and
    where they do not, on steps that break none of the other WELL_FORMED rules (by either encoding);
    and likewise for the CrossHair postcondition against the spec (tallies named RULE (CrossHair))."""
    compiled = CompiledClaims(Z3_CLAIMS if z3_claims is None else z3_claims)
    spec = SPEC if spec is None else spec
    tallies = {rule: Tally() for rule in compiled.rules}
    tallies |= {rule + CROSSHAIR: Tally() for rule in CROSSHAIR_RULES}
    rng = random.Random(seed)
    for _ in range(num_workloads):
        workload = random_workload(rng, RANGES)
        bound = sum(a.prompt_len + a.max_new for a in workload.requests) + 20
        for factory in SCHEDULERS:
            for step in steps(factory, workload.config, workload.requests, bound, spec):
                if not _judge(compiled, step, tallies, factory, workload, compiled.rules, crosshair):
                    break
                if factory is Scheduler:
                    for _ in range(PERTURBATIONS):
                        changed = perturbed(step, rng, spec)
                        if changed is not None:
                            _judge(compiled, changed, tallies, "the reference, plan perturbed", workload,
                                   [r for r in PLAN_RULES if r in tallies], crosshair)
    return tallies


def _judge(compiled: CompiledClaims, step: Step, tallies: dict[str, Tally], source: Any, workload: Any,
           rules: list[str], crosshair: CrossHairEncoding) -> bool:
    """Judge `step` by every encoding for `rules` and tally. False when the step is not expressible
    or one encoding judged it broken (the run it came from goes no further)."""
    inputs = values(step)
    if inputs is None:
        return False
    by_z3, by_spec, by_crosshair = compiled.judge(inputs), step.by_spec, crosshair(step)
    for rule in rules:
        well_formed = all(by_spec[r] and by_z3[r] for r in WELL_FORMED if r != rule and r in rules)
        where = f"{getattr(source, '__name__', source)}, step {step.facts.step} of {workload.dumps()}"
        _tally(tallies[rule], well_formed, by_z3[rule], by_spec[rule], f"{where}: the Z3 claim")
        if rule in by_crosshair:
            _tally(tallies[rule + CROSSHAIR], well_formed, by_crosshair[rule], by_spec[rule],
                   f"{where}: the CrossHair postcondition")
    judged = [by_z3[r] and by_spec[r] and by_crosshair.get(r, True) for r in rules]
    return all(judged)


def _tally(tally: Tally, well_formed: bool, encoded: bool, by_spec: bool, what: str) -> None:
    if not well_formed:
        tally.confounded += 1  # an ill-formed step: how an encoding reads it is not what it is about
    elif encoded == by_spec:
        if encoded:
            tally.both_hold += 1
        else:
            tally.both_broken += 1
    elif len(tally.disagreements) < 3:
        tally.disagreements.append(f"{what} says {'holds' if encoded else 'broken'}, spec.reservation.rules "
                                   f"{'holds' if by_spec else 'broken'}")

