"""LIVENESS (induction, any N)'s three links, proved in the row, not read (`proofs.smt.liveness_join`,
`liveness_init`): the sequence, zero work and the ranking over one behaviour's terms; the adds keeping
r's group; INIT for any N. For each link a planted policy the row used to pass (its part (a), its old
premises INIT at N = 12 and the any-N chains, all holding) is now refuted or left unknown, naming the
link's obligation; and each hypothesis the join gives the sequence is needed."""

from __future__ import annotations

import pytest
import z3

from stallfree.proofs.smt import induction, liveness_any_n, liveness_bound, liveness_init, liveness_join
from stallfree.proofs.smt.liveness_loops import ranking_chain
from stallfree.proofs.smt.liveness_planted import PLANTED
from stallfree.proofs.smt.policy import Policy
from stallfree.proofs.smt.theorems import THEOREMS
from stallfree.proofs.smt.theorems import prove as prove_theorem
from stallfree.spec.verdict import Verdict

OLD_PREMISES = ("INIT", *liveness_any_n.PREMISES)  # the row's premises before INIT (any N): INIT at N = 12


def _old_row_passes(policy: Policy) -> induction.TheoremResult:
    """What the row read before the links were proved: (a) holds, and so does every old premise."""
    ranked = induction.prove_induction(liveness_any_n.STEPS, policy)
    assert ranked.verdict is Verdict.HOLDS
    init = next(t for t in THEOREMS if t.name == "INIT")
    assert prove_theorem(init, policy).verdict is Verdict.HOLDS  # INIT at N = 12
    assert set(liveness_any_n.check_premises(policy).values()) == {Verdict.HOLDS}
    assert liveness_any_n.prove_own(policy)[liveness_any_n.FIXED] is Verdict.HOLDS
    return ranked


@pytest.mark.parametrize(("control", "obligation"), [
    ("ForgetOnAdd", "join: r stays arrived over the adds"),  # link 1: a waiting request taken back is no end
    ("JoinAhead", "join: the adds keep arrivals in index order"),  # link 2: a request placed ahead of r
])
def test_a_policy_whose_adds_break_the_join_is_refuted_at_part_b(control: str, obligation: str) -> None:
    policy = PLANTED[control]()
    outcome = liveness_any_n.prove(policy, _old_row_passes(policy))
    assert outcome.verdict is Verdict.BROKEN, (control, outcome.verdict, outcome.detail)
    assert outcome.counterexample is not None and outcome.counterexample["part"] == liveness_any_n.PART_B
    assert outcome.counterexample["obligation"] == obligation


def test_a_policy_whose_start_is_wrong_past_twelve_requests_breaks_init_for_any_n() -> None:
    """Link 3: BusyPastTwelve passes INIT at N = 12 and every old premise; INIT (any N) fails at the pair
    11, 12 (FCFS's admitted prefix: 12 admitted, 11 not), and, that part taken away, at its KV consecution."""
    policy = PLANTED["BusyPastTwelve"]()
    outcome = liveness_any_n.prove(policy, _old_row_passes(policy))
    assert outcome.verdict is Verdict.UNKNOWN and outcome.counterexample is not None
    assert outcome.counterexample["premise"] == liveness_init.NAME and outcome.counterexample["verdict"] == "broken"
    result = induction._prove(liveness_init.init_any_n(policy), liveness_init.NAME, policy, 30_000)
    assert result.counterexample is not None
    assert result.counterexample["obligation"] == f"{liveness_init.NAME}: adjacent pair"
    kv = [ob for ob in liveness_init.init_any_n(policy) if "KV" in ob.name]
    result = induction._prove(kv, liveness_init.NAME, policy, 30_000)
    assert result.counterexample is not None
    assert result.counterexample["obligation"] == f"{liveness_init.NAME}: KV consecution"  # a running request


def test_init_for_any_n_and_the_join_hold_on_the_reference() -> None:
    policy = Policy()
    assert induction._prove(liveness_init.init_any_n(policy), liveness_init.NAME, policy, 30_000).holds
    assert induction._prove(liveness_join.join(policy), liveness_join.NAME, policy, 30_000).holds


def _broken(ob: induction.Obligation) -> bool:
    return induction._prove([ob], liveness_any_n.NAME, Policy(), 30_000).verdict is Verdict.BROKEN


def _without(ob: induction.Obligation, fact: z3.BoolRef) -> induction.Obligation:
    kept = [h for h in ob.hypothesis.children() if not h.eq(fact)]
    assert len(kept) == ob.hypothesis.num_args() - 1, f"{fact} is one conjunct of {ob.name}'s hypothesis"
    return induction.Obligation(ob.name, z3.And(kept), ob.goal)


def test_the_sequence_needs_each_instance_the_join_gives_it() -> None:
    """Link 1: the sequence's consecution without "the adds keep r's group" (P, D at t + 1 no longer
    the step's P1, D1 at t) or without "r stays arrived" is refuted: the terms are shared, not read."""
    b = liveness_join.Behaviour.fresh(Policy())
    t, m = liveness_join.STEP, liveness_join.M
    consecution = {ob.name: ob for ob in liveness_bound.sequence()}["sequence: consecution"]
    assert not _broken(consecution)
    assert _broken(_without(consecution, liveness_join.kept(b, t, m + 1)))
    assert _broken(_without(consecution, liveness_join.stays(b, t)))


def test_the_join_needs_the_group_arrived_and_the_adds() -> None:
    """The adds keep r's group only because r's group has arrived (else an add ahead of r would count)
    and because the requests at t + 1 are what the adds make of those at t."""
    b = liveness_join.Behaviour.fresh(Policy())
    t, m, j = liveness_join.STEP, liveness_join.M, b.chain(liveness_join.STEP).i
    walk = {ob.name: ob for ob in liveness_join.join(Policy())}["join: the adds keep r's group: consecution"]
    assert _broken(_without(walk, liveness_join.ahead(b, t, m - j)))
    assert _broken(_without(walk, liveness_join.adds(b, t, j)))


def test_init_for_any_n_needs_the_requests_add_accepts() -> None:
    """Without "each request one add() accepts" a request could never fit K (NEVER-FIT): the per-request
    obligation fails, so the hypothesis is doing work."""
    ob = liveness_init.init_any_n(Policy())[0]
    c = ranking_chain(Policy())
    accepted = Policy().accepts(c.reqs.at(z3.Int("j")), c.config)
    started = ob.hypothesis.children()[1]
    kept = [h for h in started.children() if not h.eq(accepted)]
    assert len(kept) == started.num_args() - 1
    assert _broken(induction.Obligation(ob.name, z3.And(ob.hypothesis.children()[0], *kept), ob.goal))
