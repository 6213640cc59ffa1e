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
from stallfree.proofs.smt.symbolic import SymConfig
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
    ("ForgetLast", "join: r stays arrived over the adds"),  # link 1, r the second of its pair: r last in line
    ("WideJoinAhead", "join: the adds on three requests are their pairs'"),  # link 2, only from three requests
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


def _swap(ob: induction.Obligation, old: z3.BoolRef, new: z3.BoolRef) -> induction.Obligation:
    """`ob` with one conjunct of its hypothesis, `old`, replaced by `new`."""
    parts = ob.hypothesis.children()
    assert sum(h.eq(old) for h in parts) == 1, f"{old} is one conjunct of {ob.name}'s hypothesis"
    return induction.Obligation(ob.name, z3.And([new if h.eq(old) else h for h in parts]), ob.goal, ob.witness)


def _first_only(policy: Policy) -> list[induction.Obligation]:
    """The join as it was before r was read at both places of a pair and the adds on three requests:
    no pairwise obligation, and request j read only as the first of the pair (j, j + 1)."""
    b = liveness_join.Behaviour.fresh(policy)
    t, m, j = liveness_join.STEP, liveness_join.M, b.chain(liveness_join.STEP).i
    swaps = {"join: r stays arrived over the adds": m, "join: the adds keep r's group: consecution": j}
    obs = liveness_join.join(policy)
    assert obs[0].name == liveness_join.pairwise(policy, b.config).name
    return [_swap(ob, liveness_join.adds(b, t, swaps[ob.name]), liveness_join.at_place(b, t, swaps[ob.name], 0))
            if ob.name in swaps else ob for ob in obs[1:]]


def _join(obligations: list[induction.Obligation], policy: Policy) -> induction.TheoremResult:
    return induction._prove(obligations, liveness_join.NAME, policy, 30_000)


def test_an_add_that_forgets_the_last_request_is_refuted_only_with_r_second_of_its_pair() -> None:
    """ForgetLast's fault is at a pair's second place: the join that read r only first of (m, m + 1)
    (for m = N - 1 a pair past the requests) held; read from (m - 1, m) as well, r stays arrived is
    refuted with r last in line."""
    policy = PLANTED["ForgetLast"]()
    assert _join(_first_only(policy), policy).holds  # the control: the old reading misses it
    result = _join(liveness_join.join(policy), policy)
    assert result.verdict is Verdict.BROKEN and result.counterexample is not None
    assert result.counterexample["obligation"] == "join: r stays arrived over the adds"
    values = result.counterexample["values"]
    assert int(values["m"]) == int(values["N"]) - 1  # r the last in line
    assert _join(_first_only(Policy()), Policy()).holds and _join(liveness_join.join(Policy()), Policy()).holds


def test_adds_that_leave_index_order_only_on_three_requests_are_refuted_by_the_pairwise_reading() -> None:
    """WideJoinAhead's pairs are the reference's: every other obligation of the join holds (the control),
    its arrive on three requests allows what its pairs do not."""
    policy = PLANTED["WideJoinAhead"]()
    assert _join(liveness_join.join(policy)[1:], policy).holds
    assert _join(_first_only(policy), policy).holds
    result = _join(liveness_join.join(policy), policy)
    assert result.verdict is Verdict.BROKEN and result.counterexample is not None
    assert result.counterexample["obligation"] == "join: the adds on three requests are their pairs'"


def test_the_pairwise_reading_compares_what_each_request_is_made() -> None:
    """Not only the facts: an add that, on three requests, makes the middle one's prompt other than its
    pairs make it is refuted too (the reading `adds` takes a request's fields from its pairs)."""
    class MiddleGrows(Policy):
        def arrive(self, before, name):  # type: ignore[no-untyped-def]
            after, facts = super().arrive(before, name)
            if len(after.requests) < 3:
                return after, facts
            reqs = list(after.requests)
            r = reqs[1]
            reqs[1] = type(r)(r.arrived, r.admitted, r.prompt_len + 1, r.max_new, r.num_prefilled, r.num_emitted)
            return type(after)(after.config, tuple(reqs), after.free_kv), facts
    policy = MiddleGrows()
    result = _join([liveness_join.pairwise(policy, SymConfig.fresh())], policy)
    assert result.verdict is Verdict.BROKEN


def _places() -> dict[str, z3.BoolRef]:
    n, m = z3.Int("N"), liveness_join.M
    return {"alone": n == 1, "last of two or more": z3.And(m == n - 1, m >= 1), "inside": z3.And(m > 0, m < n - 1),
            "first of two or more": z3.And(m == 0, n >= 2)}


@pytest.mark.parametrize("place", list(_places()))
def test_r_stays_arrived_is_read_at_each_place_of_r_in_line(place: str) -> None:
    """Each case of the adds' reading of r is satisfiable (not vacuous) and holds on the reference; on
    ForgetLast it is refuted exactly where r is last (alone, or the second of its last pair)."""
    stays = {ob.name: ob for ob in liveness_join.join(Policy())}["join: r stays arrived over the adds"]
    where = _places()[place]
    ob = induction.Obligation(stays.name, z3.And(stays.hypothesis, where), stays.goal, where)
    assert _join([ob], Policy()).holds  # the witness `where` satisfiable: the case is not vacuous
    forget = {o.name: o for o in liveness_join.join(PLANTED["ForgetLast"]())}[stays.name]
    verdict = _join([induction.Obligation(ob.name, z3.And(forget.hypothesis, where), forget.goal)], Policy()).verdict
    assert verdict is (Verdict.BROKEN if place in ("alone", "last of two or more") else Verdict.HOLDS)
