"""Wrong schedulers for the budget-change and rotation contracts (`stallfree.spec.variants.budget_change`)."""

from __future__ import annotations

import contextlib

from stallfree.variants.rotating import Resizable


class UncheckedBudget(Resizable):
    """set_budget() takes any value without a word: a bad one is dropped silently instead of refused."""

    breaks = "BUDGET-CHANGE"

    def set_budget(self, token_budget: int) -> None:
        with contextlib.suppress(ValueError, TypeError):
            super().set_budget(token_budget)


class StaleBudget(Resizable):
    """set_budget() is accepted and ignored: the scheduler keeps spending the budget it started with."""

    breaks = "BUDGET"

    def set_budget(self, token_budget: int) -> None:
        if type(token_budget) is not int or token_budget < 1:
            raise ValueError(f"token_budget must be an int >= 1, got {token_budget!r}")


# Resizable itself (oldest-first decodes) is the negative control of DECODE-FAIR and DECODE-WAIT.
BUDGET_FAULTS: dict[str, type[Resizable]] = {
    "BUDGET-CHANGE": UncheckedBudget, "BUDGET": StaleBudget, "DECODE-FAIR": Resizable, "DECODE-WAIT": Resizable,
}
