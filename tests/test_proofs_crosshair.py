"""CrossHair on the reference's contracts finds nothing within its limit; on the copy with a planted
bug it finds the bug, with the exact sizes that trigger it (so the check can fail)."""

from __future__ import annotations

from stallfree.proofs import crosshair_run
from stallfree.proofs.planted import PLANTED_MAX_NEW, PLANTED_PROMPT

CI_SECONDS = 2.0  # CPU seconds per contract: the whole file stays well under a minute


def test_contracts_NEVER_FIT_BUDGET_SLOTS_KV_FCFS_TOKENS_are_not_refuted() -> None:
    result = crosshair_run.check(crosshair_run.CONTRACTS, CI_SECONDS)
    assert result.error is None, result.error
    assert result.found == (), result.found


def test_crosshair_finds_the_planted_KV_bug() -> None:
    result = crosshair_run.check(crosshair_run.PLANTED, 10.0)
    assert result.error is None, result.error
    assert len(result.found) == 1
    assert f", {PLANTED_PROMPT}, {PLANTED_MAX_NEW})" in result.found[0]
