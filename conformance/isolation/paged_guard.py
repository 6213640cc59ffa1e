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

    def _attr(self, name: str) -> object:
        value = self._call(self.call or f"getattr(scheduler, {name!r})", getattr, self.target, name, None)
        return value if type(value) is int else None

    def _line(self, name: str) -> object:
        def read() -> object:
            view = getattr(self.target, name, None)
            if view is None:
                return None
            return [SimpleNamespace(rid=getattr(r, "rid", None)) for r in view]

        return self._call(self.call or name, read)

    # The pool it declares and shows (ints, or None), and its lines (requests with a rid, or None).
    block_size = property(lambda self: self._attr("block_size"))
    watermark = property(lambda self: self._attr("watermark"))
    free_blocks = property(lambda self: self._attr("free_blocks"))
    waiting = property(lambda self: self._line("waiting"))
    running = property(lambda self: self._line("running"))


class GuardedPrefixPlan(GuardedPlan):
    """A paged guarded plan, with the target's `cached` claims ((rid, cached tokens) pairs, copied)."""

    cached: tuple[object, ...] = ()


class PrefixGuard(PagedGuard):
    """The paged guard, plus what the prefix monitor reads: the plan's `cached` claims and the target's
    `cached` view (its free cached blocks' keys), copied into plain values."""

    def schedule(self) -> object:
        plan = super().schedule()
        if not isinstance(plan, GuardedPlan):
            return plan
        out = GuardedPrefixPlan(plan)
        out.preempted = plan.preempted
        raw = self._call("schedule()", getattr, self._raw_plan, "cached", ())
        out.cached = tuple(self._call("schedule()", self._read, raw, "schedule().cached", lambda r: r))  # type: ignore[arg-type]
        return out

    @property
    def cached(self) -> object:
        def read() -> object:
            view = getattr(self.target, "cached", None)
            return None if view is None else tuple(view)

        return self._call(self.call or "cached", read)
