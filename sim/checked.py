"""A scheduler driven through the monitor: the simulation stops at the first broken rule."""

from __future__ import annotations

from typing import Any

from stallfree.spec import Config, InvalidField, Monitor


class Checked:
    """Speaks the plain protocol; forwards each call through a `Monitor` judging every rule."""

    def __init__(self, scheduler: Any, config: Config) -> None:
        self.monitor = Monitor(scheduler, config)

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        if not self.monitor.add(rid, prompt_len, max_new):
            raise InvalidField(f"rid {rid}: refused by the scheduler, as the contract requires")

    def schedule(self) -> Any:
        return self.monitor.plan()

    def complete(self, plan: object, stopped: list[int] | tuple[int, ...] = ()) -> list[int]:
        return self.monitor.complete(stopped).emitted
