"""LIVENESS (induction, any N): every request finishes within floor(P / B) + D steps of its arrival, for
any number of requests, from two parts, both proved in Z3:

- **(a) the ranking**: `LIVENESS-STEPS (induction, phases chained)` (`liveness_induction`), for any N:
  over a waiting or running r and the requests before it, P and D do not grow and D falls by 1 or P
  by B. Its result is reused when the caller has it (`stallfree prove` proves it once, for its own
  row), else its obligations are discharged here: never a second proof of the same thing.
- **(b) the bound from the ranking** (`liveness_bound`): that step repeated brings r to its end within
  floor(P / B) + D steps (the sequence theorem), zero tokens left over r's group is r's end (zero
  work), and the join (`liveness_join`): the adds between two steps keep arrivals in index order,
  r's group arrived, r arrived, and P and D of r's group as the step left them, the adds read one
  adjacent pair at a time (checked against the policy's arrive on three requests, assumed beyond:
  the row's detail says partial there). All three are stated
  over one behaviour's terms (the state at step t an array over the steps): the sequence's P(t),
  D(t) and U(t) are the ranking's P0, D0 over r's group and "r waiting or running" at step t, and
  its hypotheses are instances, at step t, of what the ranking, zero work and the join prove for any
  step. Nothing of the join is left on paper.

The row holds only if both hold **and its premises are established for the same policy**: the
other rows the argument stands on (`PREMISES`: the any-N chains that keep the ranking's premise,
PER-REQUEST, FCFS, PARTIAL-YOUNGEST, KV and FINISH), the config fixed (`config_fixed`, proved here of
the policy's `after_config`) and INIT for any N (`liveness_init`, proved here: the first state meets
the ranking's premise, however many requests). `stallfree prove` has those rows already: it passes
`premises={}` and settles the row from them once every row is in (`settle`); called alone, the row
proves them here. A premise broken, undecided or not checked makes the row unknown naming it, never
holds: a policy that breaks one (`liveness_planted.NeverRelease`, `ZeroStart`, `ShrinkingBudget`, `ShrinkingKV`;
`BusyPastTwelve`; `mutants.ChangingBudget`, `LeakyStart`) can starve or miss the bound while (a) and (b) hold.
BROKEN or unknown in (a) or (b) names the part, and its obligation, that failed.

Where FOLD's frame refuses a phase (`fold_induction.refused`), (a) rests on FOLD of it at N <= 4
only (`fold_induction.premises`' fallback): the row reads unknown naming the phase, never holds
(`liveness_planted.LifoPastFour`, `IdlePastFour`).

A policy that overrides `step` is not judged: no obligation runs it (the loops run its phase
methods, the completion is the shared `Chain.after`), so holding would say nothing of its own step
(`liveness_planted.IdleStep`, `IdleStepPastTwelve`). Likewise one that overrides `initial` (INIT (any N)
reads `initial_at` and `initial_free_kv`: `phase_planted.InitialDrained`), and one whose `phases()` are
not its own methods of their names, each once (`phase_guard.unjudged`: `AliasIdle`, `SpuriousAlias`,
`NoPartials`, `ExtraPhase`). A phase that writes another phase's plan entry reads unknown naming it
(`phase_guard.foreign_writes`: `EraseDecodes`, `EraseChunks`): the loops read each entry from its own
phase only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import z3

from stallfree.spec.verdict import Verdict

from .chain import CHAINS
from .fold_induction import REFUTE_UP_TO
from .fold_induction import refused as refused_phases
from .induction import INDUCTIONS, Obligation, _prove, prove_induction
from .liveness_bound import Falls, bound
from .liveness_induction import LIVENESS_INDUCTIONS
from .liveness_init import NAME as INIT_ANY_N
from .liveness_init import init_any_n
from .liveness_steps import falls
from .phase_guard import foreign_writes, unjudged
from .policy import Policy
from .symbolic import SymConfig
from .theorems import THEOREMS, TheoremResult
from .theorems import prove as prove_theorem

NAME = "LIVENESS (induction, any N)"
STEPS = LIVENESS_INDUCTIONS[0]  # part (a)
PART_A, PART_B = f"(a) {STEPS.name}", "(b) the bound from the ranking (sequence, zero work, join)"
CLAIM = ("every waiting or running request finishes within floor(P / B) + D steps of its arrival (P prompt "
         "positions, D tokens of it and the requests ahead of it then), for any N")
JOINED = ("the sequence, zero work and the ranking stated over one behaviour's terms (P, D, 'r waiting or "
          "running' at step t), the adds' order, r's group arrived, r kept (first or second of its pair) and its "
          "group's P and D kept over the adds proved for any step, the adds read pair by pair, that reading "
          "checked on three requests; the adds' own arrive shown to leave the config and the free KV and to keep "
          "the ranking's premise (the arrived requests as they were, none admitted, the per-request parts, FCFS's "
          "admitted prefix and PARTIAL-YOUNGEST), each on 1, 2 and 3 requests")
ASSUMES = ("assumes: the config fixed, B among it (checked: CONFIG FIXED over a step, the join over the adds); "
           "weak fairness of Step (always enabled: the executor keeps stepping; nothing of arrivals); the ranking's "
           "premise at every step (INIT (any N), checked; "
           "over a step, PER-REQUEST, FCFS, PARTIAL-YOUNGEST and KV, each kept for any N by its chain, checked as "
           "premises; over the adds, the join's obligations above); "
           "partial: the adds' facts for N requests read as those of each adjacent pair, the policy's arrive itself "
           "at N <= 2, checked against it at N = 3, assumed beyond 3 (the adds' config, free KV and premise carry to "
           "any N by that reading); instantiation: a statement proved for a free step t, or for the ranking's free "
           "arrays, holds at every step of the behaviour; scope: no stops or cancels (the Z3 policy has none; their "
           "rows are others), the policy's step() its phases then the shared completion, each phase the policy's own "
           "method of its name, once, and initial() the shared one (else not judged), every phase in FOLD's frame "
           "and writing only its own plan entries (else unknown); assumed, not checked: the adds always enabled "
           "(arrive's facts satisfiable from every state the ranking's premise allows), arrive depending on its name "
           "only through the symbols it names, and the policy's attributes unchanged by value over a run (FOLD's "
           "frame compares them by identity and refuses list, dict, set and bytearray values, not other mutable "
           "objects)")
TIMEOUT_MS = 30_000
# The rows whose claims the argument assumes at every step, each proved for the row's own policy:
# PER-REQUEST (each request's parts, any N), the FCFS, PARTIAL-YOUNGEST and KV chains (the ranking's
# premise, any N) and FINISH (a finished request's KV given back: KV's free = K - reserved kept by
# completion). Its first state is INIT (any N), which the row proves itself (`OWN`).
PREMISES = ("PER-REQUEST (induction)", "FCFS (induction, phases chained)",
            "PARTIAL-YOUNGEST (induction, phases chained)", "KV (induction, phases chained)", "FINISH (induction)")
FIXED = "CONFIG FIXED (after_config)"  # a premise this row proves itself: the config after a step is the one before
OWN = (FIXED, INIT_ANY_N)  # the premises this row proves itself, in order
PART_P = "the premises"
OWN_STEP = ("not judged: the policy overrides step(), which the row reads nowhere (its loops run the phase methods "
            "and its completion is the shared one, Chain.after, Policy.step's), so its own step is not judged")

OWN_INITIAL = ("not judged: the policy overrides initial(), which the row reads nowhere (INIT (any N) reads its "
               "initial_at and initial_free_kv), so its own first state is not judged")


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    seconds: float  # this row's own: part (b), and part (a) only where it was proved here
    detail: str
    counterexample: dict[str, Any] | None = None


def prove(policy: Policy | None = None, steps: TheoremResult | None = None, ranking: Falls = falls,
          timeout_ms: int = TIMEOUT_MS, premises: Mapping[str, Verdict] | None = None) -> Outcome:
    """The row for `policy` (default the reference's). `steps`: part (a)'s result, if already proved for
    this policy; `ranking`: the step part (b) starts from (a wrong one is a negative control);
    `premises`: the verdicts of the `PREMISES` rows for this policy, if the caller has them (one not
    named is not checked: the row reads unknown until `settle`); None: they are proved here."""
    policy = Policy() if policy is None else policy
    began = time.perf_counter()
    unread = _unread(policy)
    if unread is not None:
        return Outcome(Verdict.NOT_JUDGED, time.perf_counter() - began, f"{CLAIM}: {unread}",
                       {"part": PART_P, "reason": unread})
    foreign = foreign_writes(policy)
    if foreign:
        why = "; ".join(foreign.values())
        return Outcome(Verdict.UNKNOWN, time.perf_counter() - began, f"{PART_A}: not decided: {why}: the loops read "
                       "each entry from its own phase only, so nothing is proved of the bound",
                       {"part": PART_A, "foreign writes": foreign})
    if steps is None:
        steps = prove_induction(STEPS, policy, timeout_ms)
    elif steps.theorem != STEPS.name:
        raise ValueError(f"steps: a result of {steps.theorem!r}, not of part (a), {STEPS.name!r}")
    elif steps.policy != policy.name:
        raise ValueError(f"steps: a result for policy {steps.policy!r}, not {policy.name!r}")
    derived = _prove(bound(ranking, policy), NAME, policy, timeout_ms)
    for part, result in ((PART_A, steps), (PART_B, derived)):
        if result.verdict is not Verdict.HOLDS:
            failed = {"part": part, **(result.counterexample or {})}
            return Outcome(result.verdict, time.perf_counter() - began, _failed(part, result), failed)
    refused = refused_phases(policy)
    if refused:
        return Outcome(Verdict.UNKNOWN, time.perf_counter() - began, _fold_only(refused),
                       {"part": PART_A, "fold checked at N <=": REFUTE_UP_TO, "frame refuses": refused})
    own = prove_own(policy, timeout_ms)
    checked_here = premises is None and all(v is Verdict.HOLDS for v in own.values())  # none worth proving else
    known = check_premises(policy, timeout_ms) if checked_here else (premises or {})
    return judge({**known, **own}, time.perf_counter() - began)


def _unread(policy: Policy) -> str | None:
    """Why the row cannot judge `policy` (None: it can): a `step` or `initial` of its own, which no
    obligation runs, or phases that are not the methods its loops run (`phase_guard.unjudged`)."""
    if type(policy).step is not Policy.step:
        return OWN_STEP
    if type(policy).initial is not Policy.initial:
        return OWN_INITIAL
    return unjudged(policy)


def prove_own(policy: Policy, timeout_ms: int = TIMEOUT_MS) -> dict[str, Verdict]:
    """The premises the row proves itself (`OWN`), in order, up to the first that does not hold."""
    obligations = {FIXED: [config_fixed(policy)], INIT_ANY_N: init_any_n(policy)}
    out: dict[str, Verdict] = {}
    for name in OWN:
        out[name] = _prove(obligations[name], name, policy, timeout_ms).verdict
        if out[name] is not Verdict.HOLDS:
            break
    return out


def config_fixed(policy: Policy) -> Obligation:
    """The config a step leaves (`Policy.after_config`) is the one it started with, for any config: the
    behaviour has one config for every step, so a budget, slot count or K that a step changes is no run
    of it (`liveness_planted.ShrinkingBudget`, `ShrinkingKV`)."""
    config = SymConfig.fresh()
    after = policy.after_config(config)
    return Obligation(FIXED, config.valid(), z3.And(after.token_budget == config.token_budget,
                                                     after.max_seqs == config.max_seqs,
                                                     after.kv_tokens == config.kv_tokens))


def check_premises(policy: Policy, timeout_ms: int = TIMEOUT_MS) -> dict[str, Verdict]:
    """The `PREMISES` rows proved for `policy`, in order, up to the first that does not hold (the rest
    are left not checked: the row names the first)."""
    rows = {t.name: t for t in THEOREMS if t.name in PREMISES}
    loops = {i.name: i for i in (*INDUCTIONS, *CHAINS) if i.name in PREMISES}
    out: dict[str, Verdict] = {}
    for name in PREMISES:
        result = prove_theorem(rows[name], policy) if name in rows else prove_induction(loops[name], policy, timeout_ms)
        out[name] = result.verdict
        if result.verdict is not Verdict.HOLDS:
            break
    return out


def judge(premises: Mapping[str, Verdict], seconds: float) -> Outcome:
    """The row once (a) and (b) hold: holds if every premise (`OWN` and `PREMISES`) holds, else
    unknown naming the first that is broken, undecided or not checked."""
    for name in (*OWN, *PREMISES):
        said = premises.get(name)
        if said is not Verdict.HOLDS:
            state = "not checked" if said is None else str(said)
            unchecked = [n for n in (*OWN, *PREMISES) if n not in premises]
            return Outcome(Verdict.UNKNOWN, seconds, f"{PART_P}: {name} {state} for this policy, so the bound is "
                           f"not proved ({PART_A} and {PART_B} hold, but the argument rests on {name})",
                           {"part": PART_P, "premise": name, "verdict": state, "not checked": unchecked})
    return Outcome(Verdict.HOLDS, seconds, f"{CLAIM}: {PART_A} holds, {PART_B} holds (initiation, consecution, "
                   f"exit of each; {JOINED}); {PART_P} hold for this policy: {', '.join((*OWN, *PREMISES))}; "
                   f"{ASSUMES}")


def settle(outcome: Outcome, rows: Mapping[str, Verdict]) -> Outcome:
    """The row `prove(..., premises={})` gave, judged again once the run has its premise rows
    (`rows`: claim -> verdict, of the same policy); any other outcome is returned as it is."""
    why = outcome.counterexample or {}
    if outcome.verdict is not Verdict.UNKNOWN or why.get("part") != PART_P or why.get("verdict") != "not checked":
        return outcome
    own = {n: Verdict.HOLDS for n in OWN if n not in why["not checked"]}  # proved by the row: it was named first
    return judge({**own, **{n: rows[n] for n in PREMISES if n in rows}}, outcome.seconds)


def _fold_only(refused: Mapping[str, str]) -> str:
    """Why (a) and (b) holding proves nothing for any N when FOLD's frame refuses a phase."""
    why = "; ".join(f"{phase}: {reason}" for phase, reason in refused.items())
    return (f"{PART_A} holds only with FOLD of {', '.join(refused)} checked at N <= {REFUTE_UP_TO} (its frame refuses "
            f"it: {why}): past {REFUTE_UP_TO} requests nothing ties that phase to the loops the ranking runs, so "
            "the bound is not proved for any N")


def _failed(part: str, result: TheoremResult) -> str:
    """Why the row is not `holds`: the part, its verdict and the obligation that failed or went undecided."""
    why = result.counterexample or {}
    where = why.get("obligation", "?")
    extra = [f"its premise {why['premise not met']} not met"] if "premise not met" in why else []
    extra += [f"{k} {why[k]}" for k in ("premise", "vacuous", "reason") if k in why]
    said = "not decided" if result.verdict is Verdict.UNKNOWN else "refuted"
    return f"{part}: {said} at {where}" + (f" ({'; '.join(extra)})" if extra else "") + ": nothing proved of the bound"
