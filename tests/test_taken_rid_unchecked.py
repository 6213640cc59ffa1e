"""A scheduler that accepts a rid a live request holds, judged where NEVER-FIT (which refuses it first)
is not checked: the shadow cannot follow two requests of one rid, so it is a PROTOCOL break, not a
KeyError later with no verdict (spec/reservation/shadow.py, `accept`)."""

from __future__ import annotations

import pytest

from stallfree.spec import RuleViolation
from stallfree.spec.reservation import monitor
from stallfree.spec.types import Config


class TakesEveryRid:
    """Accepts every add, a rid still waiting among them, and plans nothing."""

    def add(self, *args: object) -> None:
        pass

    def schedule(self) -> list:  # type: ignore[type-arg]
        return []

    def complete(self, plan: object) -> list:  # type: ignore[type-arg]
        return []


def test_a_taken_rid_accepted_where_never_fit_is_not_checked_is_a_protocol_break() -> None:
    # NEVER-FIT refuses it first when checked; without it, the shadow cannot follow two requests of one
    # rid and says so (before, it overwrote the first, and a later end raised KeyError: no verdict)
    m = monitor.Monitor(TakesEveryRid(), Config(token_budget=4, max_seqs=2, kv_tokens=200), rules=("BUDGET",))
    m.add(0, 3, 1)
    with pytest.raises(RuleViolation) as broken:
        m.add(0, 3, 1)
    assert broken.value.rule == "PROTOCOL" and "rid 0 is already taken" in broken.value.message
    checked = monitor.Monitor(TakesEveryRid(), Config(token_budget=4, max_seqs=2, kv_tokens=200))
    checked.add(0, 3, 1)
    with pytest.raises(RuleViolation) as never_fit:
        checked.add(0, 3, 1)
    assert never_fit.value.rule == "NEVER-FIT"
