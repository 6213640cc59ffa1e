"""A scheduler driven through the monitor: the simulation stops at the first broken rule."""

from __future__ import annotations

from typing import Any

from stallfree.spec import Config, InvalidField, registry


class Checked:
    """Speaks the plain protocol; forwards each call through a `Monitor` judging every rule (of
    `contract`, the reservation design's unless given: a variant's passes set_budget and priorities too)."""

    def __init__(self, scheduler: Any, config: Config, contract: Any = None) -> None:
        self.monitor = (contract or registry.RESERVATION).watch(scheduler, config)
        self.schedule = self.monitor.plan  # the monitor's own: one call a step fewer

    def add(self, rid: int, prompt_len: int, max_new: int, *priority: int) -> None:
        if not self.monitor.add(rid, prompt_len, max_new, *priority):
            raise InvalidField(f"rid {rid}: refused by the scheduler, as the contract requires")

    def set_budget(self, token_budget: int) -> None:
        if not self.monitor.set_budget(token_budget):  # type: ignore[attr-defined]
            raise InvalidField(f"token_budget {token_budget!r}: refused by the scheduler, as the contract requires")

    def complete(self, plan: object, stopped: list[int] | tuple[int, ...] = ()) -> list[int]:
        return self.monitor.complete(stopped).emitted
