"""Checked simulation's shortcut for an ordinary step: most steps of a long simulation.

The trace checker's shortcut (`conformance.trace.cleanstep_v1.Shortcut`: its ready set, lag and calendar,
`sync`, its judgement of a plan entry by entry and its move) split in the two halves a live scheduler is
judged in. `planned` says yes only when it has shown that `Monitor.plan` would raise nothing on the plan,
whatever rules are checked; `done` only when `Monitor.complete` would raise nothing on what complete()
returned, and then moves the account as the monitor does (the ready requests' counts left `lag` behind).
Neither changes anything before that is shown. A plan it declines is judged by `Monitor.judged` (after
`sync`) before it runs, as `Monitor.plan` judges it; a step whose plan it took but whose completion it
declines is judged whole by the monitor on the same account (`sync`, `Monitor.judged`, `Monitor.completed`):
the plan's judgement cannot raise there (shown above), and the completion's is the monitor's own. So a
verdict is the same with or without it (tests/test_checked_shortcut.py).

While it takes steps it knows the decode entries of the ready requests it has seen (`judged`, immutable pairs:
the reference keeps one per ready request) and the ready rids whose decode it has not seen yet (`fresh`). A plan
of decodes alone is judged by comparing whole sets, and a plan of the same entry objects as `judged` is not read
again (the plan of decodes alone shown clean last, again on the state it fits: `checkedcalls.Calls`). A plan
that starts with `judged` is read from there in the contract's own order (`cleantail.tail`: the fresh decodes,
the partial prompts, the admissions); any other plan, entry by entry by the trace checker's own predicates
(`Shortcut.entries` with no emitted rids, then `_policy`). The emitted rids are read by identity with the plan's
own rid objects where the plan was read from `judged` (the ready ones, then those whose prompt the step
completes), else compared as sets; the completion of a step with chunks, admissions or a request due its last
token (the calendar) by `_done_with`.
Why each rule cannot fire on a step it takes:

- PROTOCOL: the plan is a list or tuple (or the reference's `Plan`) of (int, int) tuples or `Entry`s, each rid
  running or waiting; complete() returned a list or tuple of ints, each a running rid.
- BUDGET, ONE-ENTRY, SLOTS, KV (plan): distinct rids, each n >= 1 (1 for a ready one); at most B tokens, at
  most S running with the admissions, and their reservations within the free KV.
- PREFILL-ONCE, FCFS, PARTIAL-NEXT: each chunk ends within its prompt; the admitted are the waiting head;
  each partial prompt gets min(remaining, left) in order (`_policy`).
- TOKENS, FIRST-TOKEN, CANCEL: every ready request and every chunk that ends its prompt emits once, and no
  other rid; a request ends at its max_new-th token (the calendar, and an admission of max_new 1); nothing
  is stopped or cancelled (a stop goes to the monitor; no cancel is owed or pending).
- KV (done): the scheduler shows an int free KV equal to the shadow's, less the admissions' reservations,
  plus those of the requests that end on the step.
- PROGRESS, DECODE-FIRST, WORK-CONSERVING: the plan is not empty; every ready request decodes; budget is
  left only with every prompt's chunk ending it, every partial prompt served, and the waiting head absent,
  without a slot, or not fitting.
"""

from __future__ import annotations

from operator import is_
from typing import Any

from stallfree.conformance.trace.cleanplan import Clean
from stallfree.conformance.trace.cleanstep_v1 import _policy
from stallfree.spec import Entry, Plan
from stallfree.spec.reservation.shadow import Shadow

from .cleanmoves import Moves
from .cleantail import Tail, tail

ONE = {1}  # the n of every decode
INT = {int}
PAIRS = {tuple, Entry}  # the kinds of entry read here: immutable, so read twice alike


class Decodes(Moves):
    """The shortcut for one checked simulation (the reservation design's own monitor: `usable`)."""

    __slots__ = ("clean",)

    def __init__(self, monitor: Any) -> None:
        super().__init__(monitor)
        self.clean: Clean | Tail | None = None  # what a plan taken with other entries than decodes, or an end, found

    def sync(self) -> None:
        super().sync()
        self.clean = None

    def added(self) -> None:
        """A request joins the line as its head: the plan of decodes alone is shown to fit again."""
        self.fits = False

    def planned(self, plan: object) -> bool:
        """Whether `plan`, just returned by schedule(), breaks no plan rule and is decodes alone (`done`), or
        decodes with chunks, admissions or a request due its last token (`_done_tail`, or `_done_with` for a plan
        the trace checker's predicates judged). The caller has shown
        that no plan is pending and no cancelled reservation owed, and judged the plan of decodes alone
        shown clean last, again on the state it fits (`checkedcalls.Calls.schedule`)."""
        shadow = self.shadow
        items: Any = plan.entries if type(plan) is Plan else plan
        if (type(items) is not tuple and type(items) is not list) or not items:
            return False
        ready = self.ready if self.ready is not None else self._start()
        if ready is None:
            return False
        if len(items) == len(ready) and not shadow.prefilling:
            return self._decodes_alone(shadow, ready, items)
        judged = self.judged
        if judged is not None:
            clean = tail(shadow, ready, items, judged, self.fresh)
            if clean is not None:  # else judged entry by entry below
                self.clean = self._due_in(clean)
                return True
        self.clean = clean = self._entries(shadow, ready, items)  # not decodes alone
        return clean is not None

    def _decodes_alone(self, shadow: Shadow, ready: set[int], items: Any) -> bool:
        """`planned` for a plan with as many entries as ready requests and no partial prompt: one (int, 1) pair for
        each (`judged`, and the fresh ones read after it; else compared as sets), the step's fit shown."""
        if len(ready) != shadow.num_ready:
            return False
        judged = self.judged
        if judged is None or not all(map(is_, items, judged)) or not self._fresh_in(items, len(judged)):
            if not self._pairs(items, ready):
                return False
            self.judged, self.rids, self.fresh, self.fits = tuple(items), tuple([rid for rid, _ in items]), [], False
        if not self.fits:  # else the same plan on the same state
            if not self.decodes_fit(shadow, len(ready)):  # BUDGET, SLOTS, KV, WORK-CONSERVING
                return False
            self.fits = True
        if self.lag in self.calendar:
            self.clean = self._due_in(Tail(len(self.rids)))
            return True
        self.clean = None
        return True

    def _fresh_in(self, items: Any, start: int) -> bool:
        """Whether the entries of `items` from `start` on (those after `judged`) are one (int, 1) pair for each fresh
        rid, in the order they became ready; if so they join `judged` (the fit shown again)."""
        fresh = self.fresh
        if len(items) != start + len(fresh):
            return False
        if not fresh:
            return True
        for entry, rid in zip(items[start:], fresh, strict=True):
            if (type(entry) is not Entry and type(entry) is not tuple) or len(entry) != 2:
                return False
            got, n = entry
            if type(got) is not int or got != rid or type(n) is not int or n != 1:
                return False
        self.judged = (*self.judged, *items[start:])  # type: ignore[misc]  # not None: read above
        self.rids = (*self.rids, *fresh)
        self.fresh, self.fits = [], False
        return True

    def _due_in(self, clean: Tail) -> Tail:
        """`clean` with the ready requests due their last token on this step (the calendar) ending."""
        due = self.calendar.get(self.lag)
        if due:
            running = self.shadow.running
            clean.ending.extend([running[rid] for rid in due])
        return clean

    def _pairs(self, items: Any, ready: set[int]) -> bool:
        """Whether `items` is one (int rid, 1) pair for each ready rid, each a tuple or `Entry`."""
        got = _typed(items)
        return got is not None and len(got) == len(ready) and got.keys() == ready and set(got.values()) == ONE

    def _entries(self, shadow: Shadow, ready: set[int], items: Any) -> Clean | None:
        """What the plan `items` finds (`Shortcut.entries`, then FCFS, PARTIAL-NEXT, WORK-CONSERVING:
        `_policy`), judged before it runs; None where a plan rule might break."""
        got = _typed(items)
        if got is None:
            return None
        clean = self.entries(shadow, ready, items, got, None)
        return clean if clean is not None and _policy(shadow, clean) else None

    def done(self, emitted: object, free_kv: object) -> bool:
        """Whether complete()'s `emitted` and shown `free_kv`, for a plan `planned` took, break no rule;
        if so the step is taken (a plan of decodes alone: each ready request's count one more behind). The plan's
        own rid objects, in its order, emitted after a plan of decodes alone are judged in `Calls.complete`: here
        the emitted rids are compared as a set."""
        clean = self.clean
        if clean is not None:
            return self._done_tail(clean, emitted, free_kv) if type(clean) is Tail else \
                self._done_with(clean, emitted, free_kv)
        if (type(emitted) is not tuple and type(emitted) is not list) or len(emitted) != len(self.rids):
            return False
        if type(free_kv) is not int or free_kv != self.shadow.free_kv:
            return False  # KV: the monitor names it (or, not shown, judges the step without it)
        if set(emitted) != self.ready or set(map(type, emitted)) != INT:
            return False  # TOKENS (silent or twice), PROTOCOL
        self.take_decodes()
        return True

    def _done_with(self, clean: Clean, emitted: object, free_kv: object) -> bool:
        """`done` for a plan taken with chunks, admissions or a request due its last token (`clean`): each ready
        request and each chunk that ends its prompt emits once and no other rid does (TOKENS, FIRST-TOKEN),
        each an int (PROTOCOL), and the shown free KV is the shadow's less the admissions' reservations, plus
        those of the requests that end here (KV). If so the step is taken as the trace checker takes it
        (`Shortcut._move`)."""
        ready = self.ready
        assert ready is not None
        completing = clean.completing
        num = len(ready) + len(completing)
        if (type(emitted) is not tuple and type(emitted) is not list) or len(emitted) != num:
            return False
        if type(free_kv) is not int:
            return False  # not shown: the monitor judges the step without it
        free = self.shadow.free_kv - clean.reserved
        for t in clean.ending:
            free += t.request.reservation
        if free_kv != free:
            return False  # KV: a reservation not back on the step its request ended, or back early
        emitting = set(emitted)
        if not emitting >= ready or not set(map(type, emitted)) <= INT:
            return False  # TOKENS (a ready request silent), PROTOCOL
        for t in completing:
            if t.request.rid not in emitting:
                return False  # FIRST-TOKEN
        # so `emitted` is the `num` rids due a token, each once: none twice, none from a rid not due one (TOKENS)
        self.clean = self.judged = None  # the ready set changes, its decode entries not seen
        self._move(emitted, clean)
        return True

    def _done_tail(self, tail: Tail, emitted: object, free_kv: object) -> bool:
        """`_done_with` for a plan read from `judged` (`tail`): the same rules, the emitted rids read by identity with
        the plan's own rid objects in its order (the ready ones, then the first tokens: `_emits`), else as a set; the
        step taken by `_end` (decodes alone, one ending) or `_take`."""
        ready = self.ready
        assert ready is not None
        firsts = tail.firsts
        if (type(emitted) is not tuple and type(emitted) is not list) or len(emitted) != len(ready) + len(firsts):
            return False  # TOKENS: a token twice or missing
        if type(free_kv) is not int:
            return False  # not shown: the monitor judges the step without it
        free = self.shadow.free_kv - tail.reserved
        for t in tail.ending:
            free += t.request.reservation
        if free != free_kv:
            return False  # KV: a reservation not back on the step its request ended, or back early
        if not all(map(is_, emitted, self._emits(tail))):  # not the plan's own rid objects, in its order
            emitting = set(emitted)
            if not (ready <= emitting and set(map(type, emitted)) <= INT):
                return False  # TOKENS (a ready request silent), PROTOCOL
            for rid in firsts:
                if rid not in emitting:
                    return False  # FIRST-TOKEN
        self.clean = None
        ending = tail.ending
        if not tail.prefills and not tail.seen and len(ending) == 1 and ending[0].request.rid in self.rids:
            self._end(ending[0])  # decodes alone, one ending
        else:
            self._take(tail, emitted)
        return True

    def _emits(self, clean: Tail) -> tuple[int, ...]:
        """The rid objects a plan read from `judged` (`tail`) emits, in its order: the ready ones, then those whose
        prompt it completes (ints: shown)."""
        if not self.fresh and not clean.firsts:
            return self.rids
        return (*self.rids, *self.fresh, *clean.firsts)


def _typed(items: Any) -> dict[int, int] | None:
    """`items` as rid -> n if every entry is a tuple or `Entry` of two ints, each rid once; else None (PROTOCOL: an
    entry that is not a tuple, a list or a generator, is the monitor's to read; ONE-ENTRY: a rid twice)."""
    if not set(map(type, items)) <= PAIRS:
        return None
    try:
        got = dict(items)  # each entry a tuple (shown): unpacked in C, as `rid, n` unpacks it
    except (TypeError, ValueError):
        return None  # PROTOCOL: an entry that is no pair
    if len(got) != len(items):
        return None  # a rid twice (so each rid and n is one of `got`'s keys and values)
    return got if set(map(type, got)) <= INT and set(map(type, got.values())) <= INT else None
