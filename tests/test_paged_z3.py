"""The paged design's Z3 theorems hold for every size, and each is refuted once NEVER-FIT is weakened."""

from __future__ import annotations

import pytest

from stallfree.spec.verdict import Verdict

z3 = pytest.importorskip("z3")

from stallfree.proofs.smt import paged  # noqa: E402


def test_LONE_BLOCK_ALONE_ADMITS_NO_PREEMPTION_hold_for_every_size() -> None:
    outcomes = paged.theorems()
    assert [o.claim for o in outcomes] == ["LONE-BLOCK", "ALONE-ADMITS", "NO-PREEMPTION"]
    assert all(o.verdict is Verdict.HOLDS for o in outcomes), outcomes


def test_a_weakened_NEVER_FIT_is_refuted_with_a_model() -> None:
    for outcome in paged.controls():
        assert outcome.verdict is Verdict.BROKEN, outcome
        assert "block_size=" in outcome.counterexample
