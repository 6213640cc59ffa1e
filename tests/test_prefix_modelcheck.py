"""The explicit model check of the prefix-caching design: every state reachable within a small bound
(prompts that share a system prompt, a stop or a cancel per behaviour) keeps every prefix rule and
invariant, with hits and shared blocks reached; faults are found at a bound where they act, their
rule named. Larger bounds (evictions and preemptions among the states): benchmarks/prefix_modelcheck.py."""

from __future__ import annotations

import pytest

from stallfree.prefix import faults
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.prefix import check

SHARED = ((), ((0, 2),))  # no content, or a one-block system prompt


def test_every_reachable_state_keeps_the_prefix_rules_with_hits_and_shared_blocks() -> None:
    r = check(Bounds(2, 2, 6, 2, 4, 2), contents=SHARED)
    assert r.complete and r.counterexample is None and r.running_states
    assert r.hit_states > 0 and r.shared_states > 0, (r.hit_states, r.shared_states)


@pytest.mark.parametrize("fault", [faults.WriteShared, faults.HitOneShort, faults.ChargeCached, faults.FreeShared,
                                   faults.IgnoreWatermark], ids=lambda f: f.breaks)
def test_the_model_check_finds_a_prefix_fault_under_its_rule(fault: type) -> None:
    r = check(Bounds(3, 2, 6, 2, 4, 3), factory=fault, contents=SHARED)
    assert r.counterexample is not None and r.counterexample.rule == fault.breaks, r.counterexample


def test_the_model_check_finds_a_hit_past_the_cached_run_where_the_pool_holds_one() -> None:
    """HitOneMore needs a five-token prompt beside a hit: a 5-block pool, one slot."""
    r = check(Bounds(3, 1, 10, 2, 5, 1), factory=faults.HitOneMore, contents=SHARED)
    assert r.counterexample is not None and r.counterexample.rule == "HIT-SAME-TOKENS", r.counterexample


def test_prove_runs_the_prefix_model_check_and_its_negative_controls(capsys) -> None:
    from stallfree.main import main

    base = ["prove", "--scheduler", "stallfree.prefix:small_blocks", "--bound", "2,2,6,2,4,2", "--methods", "model,z3"]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "ALL PREFIX RULES" in out and "holds" in out and "Z3 prefix (Scheduler.first_chunk)" in out
    assert main([*base[:3], "--bound", "3,2,6,2,4,3", "--methods", "model", "--fault", "SHARED-READONLY"]) == 1
    assert "SHARED-READONLY" in capsys.readouterr().out
    assert main([*base[:3], "--fault", "HIT-SAME-TOKENS"]) == 1  # at its own control bound
    assert "HIT-SAME-TOKENS" in capsys.readouterr().out
