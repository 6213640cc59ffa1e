"""The reference behind the plain protocol only, for checking what the tools do with a scheduler
that lacks a capability (`stallfree.spec.capability`): `Plain` has neither stops nor cancels,
`StopsOnly` has complete(plan, stopped) but no cancel()."""

from __future__ import annotations

from collections.abc import Iterable

from stallfree.reference import Scheduler
from stallfree.spec.types import Plan


class Plain:
    """add(), schedule(), complete(plan): nothing else."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.inner = Scheduler(token_budget, max_seqs, kv_tokens)

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        self.inner.add(rid, prompt_len, max_new)

    def schedule(self) -> Plan:
        return self.inner.schedule()

    def complete(self, plan: Plan) -> tuple[int, ...]:
        return self.inner.complete(plan)


class StopsOnly(Plain):
    """Stops, but no cancel()."""

    def complete(self, plan: Plan, stopped: Iterable[int] = ()) -> tuple[int, ...]:  # type: ignore[override]
        return self.inner.complete(plan, stopped)
