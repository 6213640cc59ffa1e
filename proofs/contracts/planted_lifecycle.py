"""The stop and cancel contracts (`lifecycle_contracts`) run on copies of the reference with one bug
planted behind a PLANTED_PROMPT prompt, as `planted` does for the other contracts: CrossHair must
find each, naming the planted size, which shows the contract's postcondition can fail.

- `PlantedStopKV` (the stop contract, KV): a stopped PLANTED_PROMPT request leaves the running set
  but its reservation never comes back.
- `PlantedCancel` (the cancel contract, CANCEL): a cancel of a running PLANTED_PROMPT request while a
  plan is pending is acknowledged and forgotten: the request goes on being planned.
"""

from __future__ import annotations

# The search on each planted copy is bounded by a count of paths, not by seconds: CrossHair's search is
# seeded, so it finds the same bug at the same path on any machine, each within 154 (the cancel contract)
# (proofs.contracts.run.PLANTED_ITERATIONS; docs/proofs.md).
# crosshair: max_iterations=1000
from collections.abc import Callable, Iterable
from typing import NamedTuple

from stallfree.spec import Plan

from .contracts import LIMIT, MAX_BUDGET, MAX_NEW, MAX_SLOTS
from .lifecycle_contracts import (
    MAX_WHEN,
    cancel_takes_effect,
    complete_stops_on_its_token,
    keeps_cancel,
    keeps_stops,
)
from .planted import _Planted


class PlantedStopKV(_Planted):
    """A stopped PLANTED_PROMPT request's reservation is never returned."""

    breaks = "KV"

    def complete(self, plan: Plan, stopped: Iterable[int] = ()) -> tuple[int, ...]:
        stopped = tuple(stopped)
        kept = sum(self._running[rid].request.reservation for rid in stopped
                   if rid in self._running and self.is_planted(rid))
        out = super().complete(plan, stopped)
        self._free_kv -= kept
        return out


class PlantedCancel(_Planted):
    """A cancel of a running PLANTED_PROMPT request while a plan is pending is forgotten."""

    breaks = "CANCEL"

    def cancel(self, rid: int) -> None:
        if self._step.plan is not None and rid in self._running and self.is_planted(rid):
            return
        super().cancel(rid)


def stop_KV(token_budget: int, p0: int, m0: int, stop_at: int, p1: int, m1: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET
    assert 1 <= p0 <= LIMIT and 1 <= m0 <= MAX_NEW and 1 <= stop_at <= m0
    assert 1 <= p1 <= LIMIT and 1 <= m1 <= MAX_NEW
    keeps_stops(PlantedStopKV, token_budget, ((p0, m0), (p1, m1)), stop_at)


def cancel_CANCEL(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int, p1: int, m1: int,
                  p2: int, m2: int, victim: int, when: int, pending: int) -> None:
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    assert 0 <= victim <= 2 and 0 <= when <= MAX_WHEN and 0 <= pending <= 1
    keeps_cancel(PlantedCancel, (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)), victim, when,
                 pending == 1)


class PlantedContract(NamedTuple):
    """A stop or cancel contract and its planted copy."""

    claim: str
    reference: Callable[..., None]  # the reference's contract
    rules: tuple[str, ...]  # the rules it states
    planted: Callable[..., None]  # the planted copy's function
    rule: str  # the rule its bug breaks


CONTRACTS: tuple[PlantedContract, ...] = (
    PlantedContract("stop contract", complete_stops_on_its_token, ("TOKENS", "KV", "PROGRESS"), stop_KV, "KV"),
    PlantedContract("cancel contract", cancel_takes_effect, ("CANCEL", "FCFS", "KV", "TOKENS"), cancel_CANCEL,
                    "CANCEL"),
)
PLANTED = {"KV": PlantedStopKV, "CANCEL": PlantedCancel}


def target(function: Callable[..., None]) -> str:
    """The `crosshair check` target of a contract function."""
    return f"{function.__module__}.{function.__name__}"
