"""Checked simulation's shortcut for a step of decodes alone: most steps of a long simulation.

The trace checker's shortcut (`conformance.trace.cleanstep_v1.Shortcut`: its ready set, lag and calendar,
`sync`) split in the two halves a live scheduler is judged in. `planned` says yes only when it has shown
that `Monitor.plan` would raise nothing on the plan, whatever rules are checked; `done` only when
`Monitor.complete` would raise nothing on what complete() returned, and then moves the account as the
monitor does (the ready requests' counts left `lag` behind). Neither changes anything before that is
shown. A plan it declines is judged by `Monitor.judged` (after `sync`) before it runs, as `Monitor.plan`
judges it; a step whose plan it took but whose completion it declines is judged whole by the monitor on
the same account (`sync`, `Monitor.judged`, `Monitor.completed`): the plan's judgement cannot raise
there (shown above), and the completion's is the monitor's own. So a verdict is the same with or
without it (tests/test_checked_shortcut.py). Why each rule cannot fire on a step it takes:

- PROTOCOL: the plan is a list or tuple (or the reference's `Plan`) of (int, int) tuples or `Entry`s, and complete()
  returned a list or tuple of ints, each a running rid.
- BUDGET, ONE-ENTRY, SLOTS, KV (plan): as many entries as ready requests, distinct, each n = 1; at most B
  of them, at most S running, free KV not below 0, no admission.
- PREFILL-ONCE, FIRST-TOKEN, PARTIAL-NEXT, FCFS: no partial prompt exists and nothing is admitted.
- TOKENS, CANCEL: every ready request emits once, none its last token (the calendar), nothing is stopped
  or cancelled (no stop is given; no cancel is owed or pending).
- KV (done): the scheduler shows an int free KV equal to the shadow's (nothing was reserved or freed).
- PROGRESS, DECODE-FIRST, WORK-CONSERVING: the plan is not empty; every ready request decodes; budget is
  left only with no waiting request, no free slot, or a waiting head that does not fit.
"""

from __future__ import annotations

from itertools import chain
from operator import is_
from typing import Any

from stallfree.conformance.trace.cleanstep_v1 import Shortcut
from stallfree.spec import Entry, Plan

ONE = {1}  # the n of every decode
INT = {int}
PAIRS = {tuple, Entry}  # the kinds of entry read here: immutable, so read twice alike


class Decodes(Shortcut):
    """The shortcut for one checked simulation (the reservation design's own monitor: `usable`)."""

    __slots__ = ("judged",)

    def __init__(self, monitor: Any) -> None:
        super().__init__(monitor)
        self.judged: tuple[object, ...] | None = None  # the entries of a plan shown clean on the ready set as it
        # still is: a plan of the same entry objects (immutable pairs) is the same plan, shown clean again

    def sync(self) -> None:
        super().sync()
        self.judged = None  # the ready set may change

    def planned(self, plan: object) -> bool:
        """Whether `plan`, just returned by schedule(), is decodes alone that break no plan rule."""
        monitor = self.monitor
        shadow = monitor.shadow
        if shadow.kv_owed or monitor._pending is not None or shadow.prefilling:
            return False
        items: Any = plan.entries if type(plan) is Plan else plan
        if (type(items) is not tuple and type(items) is not list) or not items:
            return False
        ready = self.ready if self.ready is not None else self._start()
        if ready is None or len(items) != len(ready) or self.lag in self.calendar or len(ready) != shadow.num_ready:
            return False  # a ready request emits its last token here (it finishes): the monitor judges that
        judged = self.judged
        if judged is None or len(judged) != len(items) or not all(map(is_, items, judged)):
            if not self._pairs(items, ready):
                return False
            self.judged = tuple(items)
        return self.decodes_fit(shadow, len(ready))  # BUDGET, SLOTS, KV, WORK-CONSERVING

    def _pairs(self, items: Any, ready: set[int]) -> bool:
        """Whether `items` is one (int rid, 1) pair for each ready rid, each a tuple or `Entry`."""
        if not set(map(type, items)) <= PAIRS:
            return False  # PROTOCOL: an entry that is not a tuple (a list, a generator) is the monitor's to read
        try:
            got = dict(items)
        except (TypeError, ValueError):
            return False  # PROTOCOL: an entry that is no pair
        return len(got) == len(ready) and got.keys() == ready and set(got.values()) == ONE and \
            set(map(type, chain.from_iterable(items))) == INT  # ONE-ENTRY, DECODE-FIRST, TOKENS, PROTOCOL

    def done(self, emitted: object, free_kv: object) -> bool:
        """Whether complete()'s `emitted` and shown `free_kv`, for a plan `planned` took, break no rule;
        if so the step is taken (each ready request's count one more behind)."""
        ready = self.ready
        assert ready is not None
        if (type(emitted) is not tuple and type(emitted) is not list) or len(emitted) != len(ready):
            return False
        if type(free_kv) is not int or free_kv != self.monitor.shadow.free_kv:
            return False  # KV: the monitor names it (or, not shown, judges the step without it)
        if set(emitted) != ready or set(map(type, emitted)) != INT:
            return False  # TOKENS (silent or twice), PROTOCOL
        self.take_decodes()
        return True
