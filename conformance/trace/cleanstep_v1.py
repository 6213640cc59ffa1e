"""The v1 checker's shortcut for a step that breaks no rule: most steps of a long trace.

`Shortcut.step` judges a v1 step line against the monitor's shadow and the trace's engine
(`tracecheck.TraceScheduler`), and says yes only when it has shown that the monitor (`Monitor.plan`, then
`Monitor.complete`) would raise nothing on the step, whatever rules are checked. It mutates nothing
before that is shown, and then moves the shadow, the engine and the monitor's counts as the monitor
does. Any step it does not take whole (a stop, a cancel while the plan runs, cancelled reservations
still owed, an empty plan, a rid that is not live, a ready request left out, more ready requests than
the budget, any break at all) goes to the monitor, which names what broke. So a verdict is the same
with or without the shortcut; the shortcut only skips the work of rules that cannot fire. A step of
decodes alone is judged by comparing whole sets (`_decodes`); one of decodes and whole-prompt admissions
of the waiting head in one pass (`cleanstep_admit`); any other entry by entry (`_plan`, `_policy`).

The ready requests (prompt done, decoding) are judged as a set, not one by one: while the shortcut takes
step after step, each ready request's `num_emitted` is left `lag` behind (a count of the steps taken),
and a calendar of lags says which emits its last token when. `sync` brings the counts up to date; the
checker calls it before anything else reads or changes the shadow (a cancel, a step the monitor judges,
the end of the trace).

It runs only for the reservation design's own monitor and shadow (`usable`); a variant's contract
judges every step with its monitor. Why each rule cannot fire on a step it takes:

- PROTOCOL: every planned rid is live (running or waiting), every emitted rid is planned, and every
  rid in "finished" holds a reservation the engine still has (the reader checked they are ints).
- BUDGET, ONE-ENTRY, SLOTS, KV (plan): at most B tokens, distinct rids each n >= 1, at most S running
  with the admissions, and their reservations fit the free KV.
- PREFILL-ONCE, FIRST-TOKEN: each chunk starts at the shadow's count and ends within the prompt, and a
  token comes exactly from the ready requests and the entries whose chunk ends the prompt.
- TOKENS, CANCEL: no rid emits twice, each ready request is given 1 and emits, none has ended.
- KV (done): the engine's free KV after the step is the shadow's, less the admissions' reservations,
  plus those of the requests that emit their last token.
- PROGRESS, FCFS, DECODE-FIRST, PARTIAL-NEXT, WORK-CONSERVING: the plan is not empty; the admitted are
  the head of the line; every ready request decodes (there are at most B); each partial prompt gets
  min(remaining, left) in order; budget is left only with every chunk ending its prompt, every partial
  prompt served, and the waiting head not fitting.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from stallfree.spec import MAX_INT, Monitor, Request
from stallfree.spec.ending import Reason
from stallfree.spec.lines import start_running
from stallfree.spec.reservation.shadow import Shadow

from .cleanplan import Clean
from .cleanstep_admit import next_decodes, whole_admissions
from .tracefile import TraceStep

ONE = {1}  # the n of every decode


def usable(monitor: Any) -> bool:
    """Whether the shortcut may judge this monitor's steps: the reservation design's own monitor."""
    return type(monitor) is Monitor and type(monitor.shadow) is Shadow


class Shortcut:
    """The shortcut for one trace: the ready rids, their lag and their calendar while it takes steps."""

    __slots__ = ("calendar", "lag", "monitor", "ready", "repeatable", "shown")

    def __init__(self, monitor: Monitor) -> None:
        self.monitor = monitor
        self.ready: set[int] | None = None  # the ready rids, while their counts lag
        self.calendar: dict[int, list[int]] = {}  # lag -> ready rids that emit their last token at it
        self.lag = 0
        self.shown: tuple[list[list[int]], list[int]] | None = None  # a plan of decodes alone and its tokens,
        # judged on the ready rids as they still are: the same plan again has the same rids, n and tokens
        self.repeatable: TraceStep | None = None  # the step `_decodes` took last, while nothing has changed since

    def sync(self) -> None:
        """Bring the ready requests' counts up to date, and forget the set (the monitor may change it)."""
        if self.ready is not None:
            running, lag = self.monitor.shadow.running, self.lag
            for rid in self.ready:
                running[rid].num_emitted += lag
            self.ready, self.lag, self.shown = None, 0, None
            self.calendar.clear()
        self.repeatable = None

    def add(self, engine: Any, entries: list[list[int]]) -> None:
        """The line's accepted adds, each offered as `Monitor.add` offers it. One the contract plainly accepts
        (a new int rid, prompt_len and max_new >= 1, a reservation within K: NEVER-FIT holds, as the engine
        accepted it) is accepted here; any other goes to the monitor, which judges it."""
        monitor = self.monitor
        shadow = monitor.shadow
        tracks, kv_tokens, reservations = shadow.tracks, shadow.config.kv_tokens, engine._reservations
        engine.refusing = False
        self.repeatable = None
        for entry in entries:
            if len(entry) == 3:
                rid, prompt_len, max_new = entry
                if type(rid) is int and rid >= 0 and rid not in tracks and type(prompt_len) is int and \
                        type(max_new) is int and 1 <= prompt_len <= MAX_INT and 1 <= max_new <= MAX_INT and \
                        prompt_len + max_new <= kv_tokens:
                    reservations[rid] = prompt_len + max_new  # `TraceScheduler.add`
                    monitor.num_adds += 1
                    shadow.accept(Request(rid, prompt_len, max_new))
                    continue
            monitor.add(*entry)

    def _start(self) -> set[int] | None:
        """The ready rids, their calendar made from their (up to date) counts; None if one has emitted all
        its tokens already (a break the shadow followed, unchecked): the monitor judges on."""
        shadow = self.monitor.shadow
        ready = shadow.running.keys() - shadow.prefilling.keys()
        calendar = self.calendar
        for rid in ready:
            t = shadow.running[rid]
            left = t.request.max_new - t.num_emitted - 1
            if left < 0:
                calendar.clear()
                return None
            calendar.setdefault(left, []).append(rid)
        self.ready = ready
        return ready

    def step(self, engine: Any, item: TraceStep) -> bool:
        """Judge the step `item` and move the account if it breaks no rule and is an ordinary step; else change
        nothing and say no (the caller syncs, and the monitor judges the same step on the same account)."""
        monitor = self.monitor
        shadow = monitor.shadow
        self.repeatable = None
        if item.stop or item.cancel_pending or shadow.kv_owed or monitor._pending is not None or not item.plan:
            return False
        ready = self.ready if self.ready is not None else self._start()
        if ready is None:
            return False
        if len(item.plan) == len(ready) and self._decodes(shadow, ready, engine, item):
            return True
        shown, due = self.shown, self.calendar.get(self.lag)
        clean = whole_admissions(shown, due, shadow, item)
        whole = clean is not None
        if clean is None:  # not decodes and whole-prompt admissions alone: judged entry by entry
            clean = self._plan(shadow, ready, item)
            if clean is None or not _policy(shadow, clean):
                return False
        if not _kv_back(shadow, engine, item, clean, ready):
            return False
        _move_engine(engine, item, clean)
        self._move(item.emitted, clean)
        if whole:  # the ready rids changed as the admissions say: the next decodes are known
            self.shown = next_decodes(shown, due, clean)  # type: ignore[arg-type]  # not None: judged whole
        return True

    def _decodes(self, shadow: Shadow, ready: set[int], engine: Any, item: TraceStep) -> bool:
        """A step of decodes alone, each ready request given 1 and emitting it, none its last, nothing finished,
        no partial prompt: judged by comparing whole sets, and taken by adding 1 to the lag. Else False (and
        nothing changed): `_plan` judges it entry by entry."""
        plan, emitted = item.plan, item.emitted
        num = len(ready)
        if len(plan) != num or len(emitted) != num or item.finished or shadow.prefilling or self.lag in self.calendar:
            return False
        shown = self.shown
        if shown is None or plan != shown[0] or emitted != shown[1]:
            got = dict(plan)  # type: ignore[arg-type]  # [rid, n] pairs
            if ready != set(got) or set(got.values()) != ONE or set(emitted) != ready or num != shadow.num_ready:
                return False  # ONE-ENTRY, TOKENS, DECODE-FIRST: a ready request left out, given more than 1, silent
            self.shown = (plan, emitted)
        if not engine._admitted.issuperset(ready) or engine.free_kv != shadow.free_kv:
            return False  # KV: the engine's free KV is not the shadow's
        if not self.decodes_fit(shadow, num):
            return False
        self.take_decodes()
        self.repeatable = item
        return True

    def again(self) -> bool:
        """Take the step `repeatable` once more (its line repeated but for the step number), if no ready request
        emits its last token at this lag; else False, and the step is judged (`step`). Nothing else can have
        changed since `_decodes` took it: the same plan of decodes alone, the same tokens, nothing finished, and
        the same ready requests, waiting line, budget and free KV (the caller takes no line with an add, a
        refusal, a cancel or a budget as a repeat)."""
        if self.lag in self.calendar:
            return False
        self.take_decodes()
        return True

    @staticmethod
    def decodes_fit(shadow: Shadow, num: int) -> bool:
        """Whether a step of `num` decodes alone keeps BUDGET (and DECODE-FIRST's oldest B), SLOTS, KV and
        WORK-CONSERVING (no budget left while the waiting head fits)."""
        cfg = shadow.config
        if num > cfg.token_budget or len(shadow.running) > cfg.max_seqs or shadow.free_kv < 0:
            return False  # BUDGET (and DECODE-FIRST's oldest B), SLOTS, KV
        return not (num < cfg.token_budget and shadow.waiting and len(shadow.running) < cfg.max_seqs and
                    shadow.waiting[0].request.reservation <= shadow.free_kv)  # WORK-CONSERVING

    def take_decodes(self) -> None:
        """Take a step of decodes alone: each ready request's counts one more decode behind (`lag`)."""
        monitor = self.monitor
        self.lag += 1
        monitor.shadow.step += 1
        monitor.num_steps += 1
        monitor.num_busy_steps += 1

    def _plan(self, shadow: Shadow, ready: set[int], item: TraceStep) -> Clean | None:
        """The plan judged as a whole (ONE-ENTRY, TOKENS, BUDGET, SLOTS, KV, DECODE-FIRST) and its other entries
        one by one (PROTOCOL, PREFILL-ONCE, FIRST-TOKEN), or None where any rule might break."""
        plan, emitted = item.plan, item.emitted
        emitting = set(emitted)
        got: dict[int, int] = dict(plan)  # type: ignore[arg-type]  # [rid, n] pairs
        if len(emitting) != len(emitted) or not emitting.issubset(got) or not ready.issubset(emitting):
            return None  # TOKENS (a token twice, from a rid not planned, or a ready request silent)
        return self.entries(shadow, ready, plan, got, emitting)

    def entries(self, shadow: Shadow, ready: set[int], plan: Any, got: dict[int, int],
                emitting: set[int] | None) -> Clean | None:
        """`plan` (`got`: its rid -> n) judged as `_plan` says, `emitting` the rids that emitted a token; None
        where the plan is judged before it runs (a live scheduler's: `sim.cleansteps`), and then FIRST-TOKEN
        and TOKENS's emitted half are the caller's, once it has run."""
        if len(got) != len(plan) or len(ready) != shadow.num_ready or min(got.values()) < 1:
            return None  # ONE-ENTRY (a rid twice, or n < 1); DECODE-FIRST
        if emitting is None and not got.keys() >= ready:
            return None  # DECODE-FIRST: a ready request left out (the emitted rids say so where given)
        cfg = shadow.config
        clean = Clean(got, sum(got.values()))
        if len(got) != len(ready) and not self._prefills(shadow, ready, plan, emitting, clean):
            return None
        if clean.tokens - clean.prefill_tokens != len(ready) or len(ready) > cfg.token_budget:
            return None  # TOKENS: a decode given more than 1; more ready than budget (the monitor judges those)
        if clean.tokens > cfg.token_budget or len(shadow.running) + len(clean.admitted) > cfg.max_seqs:
            return None  # BUDGET, SLOTS
        if clean.reserved > shadow.free_kv:
            return None  # KV
        due = self.calendar.get(self.lag)
        if due:
            running = shadow.running
            clean.ending.extend([running[rid] for rid in due])
        return clean

    def _prefills(self, shadow: Shadow, ready: set[int], plan: Any, emitting: set[int] | None, clean: Clean) -> bool:
        """The entries that are not decodes, in plan order: chunks of partial prompts and admissions
        (FIRST-TOKEN judged where `emitting` is given)."""
        running, tracks = shadow.running, shadow.tracks
        admitted, prefills, got = clean.admitted, clean.prefills, clean.got
        others = got.keys() - ready
        if len(others) > 1:  # in plan order: admissions run in the order they are planned
            others = [rid for rid, _ in plan if rid in others]  # type: ignore[assignment]
        for rid in others:
            n = got[rid]
            t = running.get(rid)
            if t is None:
                t = tracks.get(rid)
                if t is None:
                    return False  # ended, refused or never added: TOKENS, CANCEL, NEVER-FIT or PROTOCOL
                admitted.append(t)
                clean.reserved += t.request.reservation
            end = t.num_prefilled + n
            prompt_len = t.request.prompt_len
            if end > prompt_len or (emitting is not None and (end == prompt_len) != (rid in emitting)):
                return False  # PREFILL-ONCE; FIRST-TOKEN
            prefills.append((t, end))
            clean.prefill_tokens += n
            if end == prompt_len:
                clean.completing.append(t)
                if t.num_emitted + 1 == t.request.max_new:
                    clean.ending.append(t)
        return True

    def _readied(self, shadow: Any, t: Any, lag: int) -> None:
        """`t`'s prompt completed on this step (its first token out): a ready request, its count `lag + 1` behind,
        in the calendar at the step of its last token if it has more to emit."""
        rid = t.request.rid
        t.is_ready = True
        shadow.num_ready += 1
        del shadow.prefilling[rid]
        left = t.request.max_new - t.num_emitted - 1
        t.num_emitted -= lag
        if left > 0:
            self.ready.add(rid)  # type: ignore[union-attr]  # not None: a step is taken
            self.calendar.setdefault(lag + left, []).append(rid)

    def _ended(self, shadow: Any, ending: list[Any], emitted: Any, lag: int) -> None:
        """End the requests due their last token on this step (END: each at its max_new, its reservation back), in the
        order they are emitted, as the monitor ends them; the step leaves the calendar."""
        if len(ending) > 1:
            order = {rid: i for i, rid in enumerate(emitted)}
            ending.sort(key=lambda t: order[t.request.rid])
        ready = self.ready
        for t in ending:
            t.num_emitted = t.request.max_new
            ready.discard(t.request.rid)  # type: ignore[union-attr]
            shadow.end(t, Reason.LENGTH)
        self.calendar.pop(lag, None)

    def _move(self, emitted: Any, clean: Clean) -> None:
        """Move the shadow and the counts as `apply` and the monitor do; the ready requests' counts stay behind."""
        monitor = self.monitor
        shadow = monitor.shadow
        step, lag = shadow.step, self.lag
        assert self.ready is not None
        self.shown = None  # the ready rids may change here
        for t in clean.admitted:
            start_running(shadow, t, step)
            shadow.free_kv -= t.request.reservation
        for t, end in clean.prefills:
            t.num_prefilled = end
        for t in clean.completing:
            self._readied(shadow, t, lag)
        self._ended(shadow, clean.ending, emitted, lag)
        self.lag = lag + 1
        shadow.step = step + 1
        monitor.num_steps += 1
        monitor.num_busy_steps += 1


def _policy(shadow: Shadow, clean: Clean) -> bool:
    """FCFS, PARTIAL-NEXT and WORK-CONSERVING hold on the plan."""
    admitted, waiting = clean.admitted, shadow.waiting
    if len(admitted) == 1:
        if not waiting or waiting[0].request.rid != admitted[0].request.rid:  # one admitted: the set test below
            return False  # FCFS
    elif admitted and {t.rid for t in islice(waiting, len(admitted))} != {t.rid for t in admitted}:
        return False  # FCFS
    budget, got = shadow.config.token_budget, clean.got
    left = budget - shadow.num_ready  # each decode took 1
    for t in shadow.prefilling.values():
        n = got.get(t.rid, 0)
        if n != max(0, min(t.request.prompt_len - t.num_prefilled, left)):
            return False  # PARTIAL-NEXT
        left -= n
    if clean.tokens >= budget:
        return True
    if len(clean.prefills) - len(admitted) < len(shadow.prefilling) or len(clean.completing) < len(clean.prefills):
        return False  # WORK-CONSERVING: budget left while a prompt got less than it has left (a chunk not completing)
    if len(waiting) <= len(admitted) or len(shadow.running) + len(admitted) >= shadow.config.max_seqs:
        return True
    head = waiting[len(admitted)]  # the first waiting request not admitted: those admitted are the head (FCFS)
    return head.request.reservation > shadow.free_kv - clean.reserved  # WORK-CONSERVING: the head does not fit


def _kv_back(shadow: Shadow, engine: Any, item: TraceStep, clean: Clean, ready: set[int]) -> bool:
    """PROTOCOL and KV once the step is done: each rid in "finished" holds a reservation, once, and the
    engine's free KV after the step is what the shadow says it must be (rule KV's return check)."""
    reservations, admitted = engine._reservations, engine._admitted
    fresh = clean.fresh
    if admitted.issuperset(ready):  # the usual case: the engine admitted the ready requests when first planned
        for t, _ in clean.prefills:  # a plain loop: one admission a step, as a rule
            rid = t.request.rid
            if rid not in admitted and rid in reservations:
                fresh.append(rid)
    else:
        fresh.extend(rid for rid, _ in item.plan if rid not in admitted and rid in reservations)  # distinct rids
    free = engine.free_kv
    for rid in fresh:
        free -= reservations[rid]
    finished = item.finished
    if finished:
        if len(finished) > 1 and len(set(finished)) != len(finished):
            return False  # PROTOCOL: "finished" names a rid twice
        for rid in finished:
            reservation = reservations.get(rid)
            if reservation is None:
                return False  # PROTOCOL: "finished" names a rid that holds no reservation
            free += reservation
    for t in clean.ending:
        free -= t.request.reservation
    return free == shadow.free_kv - clean.reserved


def _move_engine(engine: Any, item: TraceStep, clean: Clean) -> None:
    """Move the engine as `TraceScheduler.complete` does."""
    reservations, admitted = engine._reservations, engine._admitted
    for rid in clean.fresh:
        admitted.add(rid)
        engine.free_kv -= reservations[rid]
    for rid in item.finished:
        admitted.discard(rid)
        engine.free_kv += reservations.pop(rid)
