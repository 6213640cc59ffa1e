"""The guard for a paged target: the plain protocol's guard, plus what the paged monitor reads (the
pool it declares, its plan's preempted rids, its free blocks and its waiting and running lines) and
the calls it makes (complete with stops, cancel), each under the per-call timeout, with what the
target returns copied into plain values so the monitor never runs target code."""

from __future__ import annotations

from types import SimpleNamespace

from .guard import Guard


class GuardedPlan(list):  # type: ignore[type-arg]
    """The plan's entries as a list, with the target's `preempted` rids (a tuple, as returned)."""

    preempted: tuple[object, ...] = ()


class PagedGuard(Guard):
    def schedule(self) -> object:
        entries = super().schedule()
        if not isinstance(entries, list):
            return entries
        plan = GuardedPlan(entries)
        raw = self._call("schedule()", getattr, self._raw_plan, "preempted", ())
        plan.preempted = tuple(self._call("schedule()", self._read, raw, "schedule().preempted", lambda r: r))  # type: ignore[arg-type]
        return plan

    def complete(self, plan: object, stopped: object = ()) -> object:
        if not stopped:
            return super().complete(plan)
        emitted = self._call(f"complete(plan, stopped={stopped!r:.60})", self.target.complete, self._raw_plan, stopped)
        return self._call("complete(plan)", self._read, emitted, "complete()", lambda r: r)

    def cancel(self, rid: object) -> None:
        self._call(f"cancel({rid!r})", self.target.cancel, rid)

    def _attr(self, name: str) -> object:
        value = self._call(self.call or f"getattr(scheduler, {name!r})", getattr, self.target, name, None)
        return value if type(value) is int else None

    @property
    def block_size(self) -> object:
        return self._attr("block_size")

    @property
    def watermark(self) -> object:
        return self._attr("watermark")

    @property
    def free_blocks(self) -> object:
        return self._attr("free_blocks")

    def _line(self, name: str) -> object:
        def read() -> object:
            view = getattr(self.target, name, None)
            if view is None:
                return None
            return [SimpleNamespace(rid=getattr(r, "rid", None)) for r in view]

        return self._call(self.call or name, read)

    @property
    def waiting(self) -> object:
        return self._line("waiting")

    @property
    def running(self) -> object:
        return self._line("running")
