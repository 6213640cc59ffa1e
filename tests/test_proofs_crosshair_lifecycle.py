"""CrossHair contracts for stops and cancels: complete(plan, stopped) and cancel(rid) on the reference
keep them (concretely on a grid, and CrossHair finds nothing within its limit: "not refuted"); on each
copy with a bug planted CrossHair finds it, through the row `stallfree prove --fault RULE` prints,
with a counterexample the reference's contract keeps."""

from __future__ import annotations

import itertools
import random

import pytest

pytest.importorskip("crosshair")

from stallfree.proofs.contracts import lifecycle_contracts as contracts
from stallfree.proofs.contracts import planted_contracts, planted_lifecycle
from stallfree.proofs.contracts import run as crosshair_run
from stallfree.proofs.suite import planted_lifecycle_row
from stallfree.spec.verdict import Verdict

CI_SECONDS = 2.0


def test_TOKENS_KV_the_stop_contract_holds_on_a_grid() -> None:
    for budget, p0, m0, p1, m1 in itertools.product((1, 2, 5), (1, 3, 6), (1, 2, 4), (1, 4), (1, 3)):
        for stop_at in range(1, m0 + 1):
            contracts.complete_stops_on_its_token(budget, p0, m0, stop_at, p1, m1)


def test_CANCEL_FCFS_the_cancel_contract_holds_on_random_inputs() -> None:
    rng = random.Random(12)
    for _ in range(1_000):
        sizes = [(rng.randint(1, 8), rng.randint(1, 5)) for _ in range(3)]
        kv = rng.randint(max(p + m for p, m in sizes), 40)
        contracts.cancel_takes_effect(rng.randint(1, 8), rng.randint(1, 3), kv, *[x for s in sizes for x in s],
                                      rng.randint(0, 2), rng.randint(0, 3), rng.randint(0, 1))


@pytest.mark.parametrize("contract", planted_lifecycle.CONTRACTS, ids=lambda c: c.claim)
def test_the_planted_copy_breaks_its_rule_where_the_reference_keeps_it(contract) -> None:  # type: ignore[no-untyped-def]
    known = {"KV": (13, 37, 1, 1, 3, 1), "CANCEL": (1, 1, 38, 37, 1, 1, 1, 1, 1, 0, 0, 1)}
    on_reference, on_planted = planted_contracts.replay_on((contract.reference, contract.planted),
                                                           known[contract.rule])
    assert on_reference is None and on_planted is not None and on_planted.startswith(contract.rule), on_planted


@pytest.mark.parametrize("contract", planted_lifecycle.CONTRACTS, ids=lambda c: c.claim)
def test_the_reference_contract_is_not_refuted(contract) -> None:  # type: ignore[no-untyped-def]
    result = crosshair_run.check(planted_lifecycle.target(contract.reference), CI_SECONDS)
    assert result.error is None and result.found == (), (result.error, result.found)


@pytest.mark.parametrize("contract", planted_lifecycle.CONTRACTS, ids=lambda c: c.claim)
def test_crosshair_finds_the_planted_bug(contract) -> None:  # type: ignore[no-untyped-def]
    row = planted_lifecycle_row(contract, crosshair_run.PLANTED_S, lambda _: None)
    assert row.result == Verdict.BROKEN, row.detail
    assert row.claim == contract.rule and "37" in row.detail and "reference keeps the contract" in row.detail
