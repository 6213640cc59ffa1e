"""The rules' three encodings in code, the monitor's predicates (spec/reservation/rules.py), the Z3 claims
(proofs/smt/claims.py) and the CrossHair contracts' postconditions (proofs/contracts/contracts.py),
agree on concrete steps of the reference and of every fault; a weakened encoding of any disagrees."""

from __future__ import annotations

import z3

from stallfree.proofs.smt import claims, encodings
from stallfree.spec.reservation import rules

WORKLOADS = 40
WEAKENED_WORKLOADS = 20


def test_the_monitor_and_the_z3_claims_agree_on_every_step() -> None:
    tallies = encodings.compare(WORKLOADS)
    for rule, tally in tallies.items():
        assert not tally.disagreements, f"{rule}: {tally.disagreements[0]}"
        assert tally.both_hold > 1_000, rule
    # Each is seen broken, by both encodings alike, on well-formed steps; ONE-ENTRY and TOKENS only
    # on ill-formed ones (a rid twice, a token out of turn), which the per-request Z3 plan cannot list.
    seen_broken = {rule for rule, tally in tallies.items() if tally.both_broken}
    assert seen_broken == set(tallies) - {"ONE-ENTRY", "TOKENS", "ONE-ENTRY" + encodings.CROSSHAIR}, seen_broken
    assert {r + encodings.CROSSHAIR for r in encodings.CROSSHAIR_RULES} <= set(tallies)


def fcfs_head_only(t):  # type: ignore[no-untyped-def]
    """FCFS weakened: an admission needs the oldest waiting request admitted, but a later one may
    still jump the second."""
    rs, plan = t.before.requests, t.plan
    head = [z3.And(r.waiting, *[z3.Not(q.waiting) for q in rs[:i]]) for i, r in enumerate(rs)]
    anyone = z3.Or([e.admit for e in plan])
    return z3.And([z3.Implies(z3.And(anyone, h), e.admit) for h, e in zip(head, plan, strict=True)])


def decode_first_oldest_only(t):  # type: ignore[no-untyped-def]
    """DECODE-FIRST weakened: only the oldest ready request must get a decode."""
    facts, older_ready = [], z3.BoolVal(False)
    for e, r in zip(t.plan, t.before.requests, strict=True):
        facts.append(z3.Implies(z3.And(r.ready, z3.Not(older_ready)), e.decode))
        older_ready = z3.Or(older_ready, r.ready)
    return z3.And(facts)


def test_a_weakened_z3_claim_disagrees() -> None:
    for rule, weaker in (("FCFS", fcfs_head_only), ("DECODE-FIRST", decode_first_oldest_only),
                         ("BUDGET", lambda t: t.num_tokens <= t.before.config.token_budget + 1)):
        tallies = encodings.compare(WEAKENED_WORKLOADS, {**encodings.Z3_CLAIMS, rule: weaker})
        assert tallies[rule].disagreements, f"the weakened {rule} claim agreed with the monitor"
    assert claims.fcfs is encodings.Z3_CLAIMS["FCFS"]


def test_a_weakened_monitor_predicate_disagrees() -> None:
    def budget_plus_one(s, f):  # type: ignore[no-untyped-def]
        return None if f.num_tokens <= s.config.token_budget + 1 else "over"

    tallies = encodings.compare(WEAKENED_WORKLOADS, spec={**encodings.SPEC, "BUDGET": (budget_plus_one,)})
    assert tallies["BUDGET"].disagreements
    assert encodings.SPEC["BUDGET"] == (rules.budget,)


def test_a_weakened_crosshair_postcondition_disagrees(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The contracts' own postconditions are what is compared: weakened where the contracts define
    them (FCFS and WORK-CONSERVING never broken), the comparison disagrees on both."""
    from stallfree.proofs.contracts import contracts

    limits, policy = contracts.limits, contracts.policy
    monkeypatch.setattr(contracts, "limits", lambda *a: {**limits(*a), "FCFS": True})
    monkeypatch.setattr(contracts, "policy", lambda *a: {**policy(*a), "WORK-CONSERVING": True})
    tallies = encodings.compare(WEAKENED_WORKLOADS)
    for rule in ("FCFS", "WORK-CONSERVING"):
        assert tallies[rule + encodings.CROSSHAIR].disagreements, f"the weakened {rule} postcondition agreed"
        assert not tallies[rule].disagreements  # the Z3 claim, unchanged, still agrees
