"""The Z3 theorems for requests that end early: END (ending any ready requests, by a stop or a cancel
between steps, keeps the whole invariant, READY-WITHIN-BUDGET and ONE-PARTIAL among it) and
STOP-READY (a request a stop may name is ready), each with its negative control seen failing."""

from __future__ import annotations

import pytest

pytest.importorskip("z3")

from stallfree.proofs.smt import ends
from stallfree.spec.verdict import Verdict

N = 6  # symbolic requests: enough for the shapes the parts talk about, fast in CI


def test_KV_END_ending_ready_requests_keeps_the_invariant() -> None:
    assert ends.prove_end(N).verdict is Verdict.HOLDS


def test_KV_END_fails_when_an_end_keeps_its_reservation() -> None:
    outcome = ends.prove_end(N, returns_kv=False)
    assert outcome.verdict is Verdict.BROKEN and outcome.counterexample == {"part": "KV"}


def test_TOKENS_STOP_READY_a_stop_only_ends_a_ready_request() -> None:
    assert ends.prove_stops_end_ready(N).verdict is Verdict.HOLDS


def test_TOKENS_STOP_READY_fails_for_a_policy_whose_chunks_emit() -> None:
    assert ends.prove_stops_end_ready(N, ends.EarlyFirstToken()).verdict is Verdict.BROKEN


def test_the_END_hypothesis_is_satisfiable_with_ends() -> None:
    import z3

    hypothesis, ended, _ = ends.end_obligation(N)
    solver = z3.Solver()
    solver.add(hypothesis, z3.Or(ended.ends))  # some request does end: the theorem is not vacuous
    assert solver.check() == z3.sat
