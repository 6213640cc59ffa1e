"""How checked simulation's shortcut moves the account on a step it took: the state it keeps between steps.

The trace checker's `Shortcut` (its ready set, lag and calendar: each ready request's counts left `lag` behind)
with what a live simulation adds: the decode entries of the ready requests seen (`judged`, in the order they are
planned), the ready rids whose decode was not seen yet (`fresh`), whether the plan of decodes alone is shown to fit
the state as it is (`fits`), and the step counts (the shadow's step, the monitor's steps) also left behind,
moved only before something reads them (`count`). A step is moved here as `Monitor.complete` moves it (the
trace checker's `Shortcut._move`, whose lists a step read from `judged` does not build: `_take`, `_end`).
"""

from __future__ import annotations

from typing import Any

from stallfree.conformance.trace.cleanplan import Clean
from stallfree.conformance.trace.cleanstep_v1 import Shortcut
from stallfree.spec.ending import Reason
from stallfree.spec.lines import start_running
from stallfree.spec.reservation.shadow import Shadow

from .cleantail import Tail


class Moves(Shortcut):
    """The account of one checked simulation's shortcut (`cleansteps.Decodes` judges the steps)."""

    __slots__ = ("counted", "fits", "fresh", "judged", "rids", "shadow")

    def __init__(self, monitor: Any) -> None:
        super().__init__(monitor)
        self.shadow: Shadow = monitor.shadow  # the monitor's, for its life
        self.judged: tuple[object, ...] | None = None  # one (int, 1) pair for each ready rid but `fresh`, in the
        # order they are planned: a plan that starts with the same entry objects (immutable pairs) decodes them
        self.rids: tuple[int, ...] = ()  # the rids of `judged`, in its order (ints: shown)
        self.fresh: list[int] = []  # the ready rids whose decode entry was not seen yet, in the order they became ready
        self.fits = False  # `judged`, all the ready set, shown to fit (`decodes_fit`, no partial prompt) on the state
        # as it is: since then only steps of decodes alone ending none were taken and no request became the
        # waiting head (`added`)
        self.counted = 0  # the `lag` up to which the step counts were moved (`count`)

    def sync(self) -> None:
        self.count()
        super().sync()
        self.judged = None  # the ready set may change
        self.counted = 0

    def take_decodes(self) -> None:
        """Take a step of decodes alone: each ready request's counts, and the step counts, one more behind (`lag`;
        `count` moves the step counts)."""
        self.lag += 1

    def count(self) -> None:
        """Move the step counts (the shadow's step, the monitor's steps and busy steps) by the steps taken since they
        were last moved: before anything reads them (the monitor, an add's verdict, a move that admits or ends)."""
        behind = self.lag - self.counted
        if behind:
            monitor = self.monitor
            monitor.shadow.step += behind
            monitor.num_steps += behind
            monitor.num_busy_steps += behind
            self.counted = self.lag

    def _move(self, emitted: Any, clean: Clean) -> None:
        self.count()
        Shortcut._move(self, emitted, clean)
        self.counted = self.lag  # `_move` counted its own step

    def _end(self, t: Any) -> None:
        """Take a step of decodes alone that ends the ready request `t` (due its last token), as `_move` takes it:
        each ready request's count one more behind, `t`'s at its max_new, `t` ended (its reservation back); its
        entry leaves `judged` (the fit shown again)."""
        request = t.request
        rid = request.rid
        t.num_emitted = request.max_new
        self.ready.discard(rid)  # type: ignore[union-attr]  # not None: a step is taken
        self.count()  # the step the end names
        self.shadow.end(t, Reason.LENGTH)
        self.calendar.pop(self.lag, None)
        self.lag += 1
        rids, judged = self.rids, self.judged
        i = rids.index(rid)
        self.rids, self.judged = rids[:i] + rids[i + 1:], judged[:i] + judged[i + 1:]  # type: ignore[index]
        self.fits = False

    def _take(self, tail: Tail, emitted: Any) -> None:
        """Take a step read from `judged` (`cleantail.tail`), as `_move` takes it: the admissions run, each chunk's
        prompt position moved, each prompt it ends ready (its count `lag + 1` behind, in the calendar), the
        requests due their last token ended (in the order emitted); then `_next`."""
        shadow = self.shadow
        assert self.ready is not None
        self.count()  # the step an admission and an end name
        lag, step = self.lag, shadow.step
        prefills = tail.prefills
        first_admitted = len(prefills) - tail.admitted
        for i, (t, end, _) in enumerate(prefills):
            request = t.request
            if i >= first_admitted:
                start_running(shadow, t, step)
                shadow.free_kv -= request.reservation
            t.num_prefilled = end
            if end == request.prompt_len:
                self._readied(shadow, t, lag)
        self._ended(shadow, tail.ending, emitted, lag)
        self.lag = lag + 1  # the step counts one behind (`count`)
        self._next(tail)

    def _next(self, tail: Tail) -> None:
        """After a step read from `judged` (`tail`): the ready requests' decode entries seen (`judged`, with the fresh
        ones it saw), less those of the requests it ended; the prompts it completed fresh; the fit shown again."""
        ready = self.ready
        assert ready is not None and self.judged is not None
        judged, rids = self.judged, self.rids
        if tail.seen:
            judged, rids = judged + tail.seen, rids + tuple(self.fresh)
        for t in tail.ending:  # one a step, as a rule: its entry found by its rid, in C
            rid = t.request.rid
            if rid in rids:  # else a prompt completed and ended on this step: never decoded
                i = rids.index(rid)
                judged, rids = judged[:i] + judged[i + 1:], rids[:i] + rids[i + 1:]
        self.judged, self.rids, self.fits = judged, rids, False
        self.fresh = [rid for rid in tail.firsts if rid in ready] if tail.firsts else []
