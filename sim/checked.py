"""A scheduler driven through the monitor: the simulation stops at the first broken rule."""

from __future__ import annotations

from typing import Any

from stallfree.conformance.trace.cleanstep_v1 import usable
from stallfree.spec import Config, InvalidField, Request, registry
from stallfree.spec.reservation.monitor import plainly_accepted

from .checkedcalls import Calls


class Checked:
    """Speaks the plain protocol; forwards each call through a `Monitor` judging every rule (of
    `contract`, the reservation design's unless given: a variant's passes set_budget and priorities too).
    With the reservation design's own monitor, a step is judged by the shortcut (`checkedcalls.Calls`, on
    `cleansteps.Decodes`: decodes, chunks, admissions, ends by the last token) unless `shortcut` is False; a step
    it declines (any break, a stop), by the monitor."""

    def __init__(self, scheduler: Any, config: Config, contract: Any = None, shortcut: bool = True) -> None:
        self._monitor = monitor = (contract or registry.RESERVATION).watch(scheduler, config)
        self.fast = Calls(monitor) if shortcut and usable(monitor) else None
        self.shadow = monitor.shadow  # the monitor's, for the life of the monitor
        # schedule(): the monitor's own (one call a step fewer), or the shortcut's; so complete() with the shortcut
        self.schedule = monitor.plan if self.fast is None else self.fast.schedule
        if self.fast is not None:
            self.complete = self.fast.complete  # type: ignore[method-assign]

    @property
    def monitor(self) -> Any:
        """The monitor, its step counts (the shadow's step, its steps and busy steps) first brought up to the
        steps taken: the shortcut leaves them behind until something reads them (`cleanmoves.Moves.count`)."""
        if self.fast is not None:
            self.fast.count()
        return self._monitor

    def add(self, rid: int, prompt_len: int, max_new: int, *priority: int) -> None:
        """Offer a request through the monitor; one the contract plainly accepts (`plainly_accepted`) is judged
        by the monitor once offered (`Watch.offered`), its `Request` built once."""
        monitor, fast = self._monitor, self.fast
        if fast is None:
            accepted = monitor.add(rid, prompt_len, max_new, *priority)
        else:
            if fast.lag != fast.counted:
                fast.count()  # the step an add's verdict names
            if not self.shadow.waiting:
                fast.added()  # a new head of the line (behind a head, the fit shown holds: the head is the same)
            if not priority and plainly_accepted(self.shadow, rid, prompt_len, max_new):
                accepted = monitor.offered(None, rid, prompt_len, max_new, Request(rid, prompt_len, max_new))
            else:
                accepted = monitor.add(rid, prompt_len, max_new, *priority)
        if not accepted:
            raise InvalidField(f"rid {rid}: refused by the scheduler, as the contract requires")

    def set_budget(self, token_budget: int) -> None:
        if self.fast is not None:
            self.fast.sync()
        if not self._monitor.set_budget(token_budget):  # type: ignore[attr-defined]
            raise InvalidField(f"token_budget {token_budget!r}: refused by the scheduler, as the contract requires")

    def complete(self, plan: object, stopped: list[int] | tuple[int, ...] = ()) -> list[int] | tuple[int, ...]:  # type: ignore[no-redef]
        """The monitor's complete() (with the shortcut, `Calls.complete`): its pending plan run and judged."""
        return self._monitor.complete(stopped).emitted
