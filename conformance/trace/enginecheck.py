"""Judging a v2 trace (v1 read too): the rules as they read on an engine that may preempt, page its KV,
find prompts in a prefix cache, and stop a request before max_new.

The checker keeps its own account of each request, from the trace's facts alone: its known tokens
(prompt plus tokens emitted), its computed tokens (those whose KV it holds now), and whether it waits,
runs, is preempted or finished. Every rule keeps its ID and its meaning; where an engine's facts go
beyond the contract's design, the rule reads them as follows:

- PREFILL-ONCE: a chunk starts where the request's computed tokens end and never computes a token
  that is not known yet; after a recompute preemption the request computes again, from its cached
  prefix (its `admit` event), what its freed KV held. A cached prefix never covers every known token.
- FIRST-TOKEN: a step emits a token for a request exactly when its chunk brings the computed tokens up
  to all known tokens (the end of its prompt, of a recompute, or a decode).
- TOKENS: at most one token a step, only from a planned request; never more than max_new; a request
  that finishes for "length" emitted exactly max_new; a decode (one token due) is exactly 1 token. A
  request finished for "cancel" that is not in the step's plan was withdrawn before the step: it is
  gone before the step is judged (no rule expects a token from it there).
- SLOTS: the requests running (admitted, neither preempted nor finished) never exceed S.
- KV: a request's KV is returned (`finished`) in the step of its last token, and only then; the
  reservations (prompt_len + max_new) of the requests running never exceed K. On a paged trace
  (`block_size`) that is the contract's design, not the engine's: a break says so. A preempted
  request holds no reservation until it is admitted again.
- FCFS: (re)admissions take the requests waiting longest, by arrival, preempted ones included.
- DECODE-FIRST, PARTIAL-NEXT, WORK-CONSERVING: as in v1, over the requests running at the step's
  start; a request computing again after a preemption is partial. Whether the waiting head "fits" is
  the contract's account (a free slot, its reservation within K minus those running).
- PROGRESS: a plan is empty only when nothing waits or runs; with the end line, every accepted request
  finished, and none was left preempted.
- CANCEL: a request finished for "cancel" is never planned again and emits nothing after the step its
  cancel took effect in (before the step's plan when it is not in it, else with that step). The trace
  records no cancel() calls, only their effect, so that a cancel of an ended or unknown rid is refused
  is not judged here (the kit and the monitor judge it); a trace that cancels nothing leaves CANCEL
  vacuous, and the verdict says so.
- NEVER-FIT: an accepted request fits K (prompt_len + max_new <= K) and its rid is not taken; a refused
  one (`refuse`) is refused for a reason the contract gives.

Every rule is judged to its first break and on; the checker goes on reading, so one pass reports the
first break of each rule (its account follows the trace's facts whatever a rule said).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from stallfree.spec import PROTOCOL, Config, RuleViolation, refusal, select
from stallfree.spec.reservation.shadow import Shadow

from .cleanstep import clean_step, decode_step
from .ended import EndedRids
from .refused import RefusedRids
from .tracefile import TraceError
from .v2 import EngineEnd, EngineStep, Header, Rid, read

WAITING, RUNNING, PREEMPTED, FINISHED = "waiting", "running", "preempted", "finished"
# On a paged trace the reservation account is the contract's design, not the engine's: said in the break.
PAGED_NOTE = " (by the contract's reservations; this engine pages its KV and takes blocks as its requests grow)"


@dataclass(slots=True)
class EngineTrack:
    rid: Rid
    prompt_len: int
    max_new: int
    arrival: int  # order of arrival among all requests
    state: str = WAITING
    computed: int = 0
    emitted: int = 0
    admitted_at: int | None = None  # order of the latest (re)admission
    preempted: tuple[int, str] | None = None  # (step, kind) of the last preemption not yet resumed

    @property
    def known(self) -> int:
        return self.prompt_len + self.emitted

    @property
    def due(self) -> int:
        return self.prompt_len + self.emitted - self.computed  # known - computed, read a step per request

    @property
    def ready(self) -> bool:
        """Running with one token due after at least one emitted: a decode."""
        return self.state == RUNNING and self.emitted >= 1 and self.prompt_len + self.emitted - self.computed == 1


@dataclass(slots=True)
class EngineVerdict:
    """The verdict of one trace: the first break of each rule, and what was judged only in part."""

    config: Config | None
    checked: tuple[str, ...]
    version: int = 2
    steps: int = 0
    lines: int = 0
    ended: bool = False
    unfinished_step: int | None = None  # the last step, written before it ran and never finished
    violations: dict[str, tuple[RuleViolation, int]] = field(default_factory=dict)  # rule -> (first break, line)
    partial: dict[str, str] = field(default_factory=dict)  # rule -> what of it was not judged
    not_judged: dict[str, str] = field(default_factory=dict)  # rule -> why the trace's facts judged nothing of it
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def violation(self) -> RuleViolation | None:
        return min((v for v, _ in self.violations.values()), key=lambda v: v.step, default=None)

    @property
    def violation_line(self) -> int | None:
        first = self.violation
        return None if first is None else self.violations[first.rule][1]


class Judge:
    def __init__(self, header: Header, checked: tuple[str, ...], verdict: EngineVerdict) -> None:
        self.cfg = header.config
        self.checked = set(checked)
        self.verdict = verdict
        self.reqs: dict[Rid, EngineTrack] = {}
        self.ended = EndedRids()  # the rids of ended requests (kept in memory bounded by what is live)
        # The refused rids, as runs reaching over the accepted rids beside them (read only of a rid neither
        # live nor ended): memory that does not grow with the refusals.
        self.refused = RefusedRids(self._accepted)
        self.line = 1
        self.step = 0
        self._arrivals = 0
        self._admissions = 0
        self.saw_refusals = False
        self._cancelled_before: set[Rid] = set()  # cancelled before this step's plan (not in it)
        self.cancelled = EndedRids()  # rids whose request ended by a cancel (rule CANCEL)
        self._kept_kv: set[Rid] = set()  # requests whose KV came back at the wrong step (reported once)
        # Kept as they change, for the shortcut of a step that breaks no rule (`cleanstep`): the running
        # requests, those waiting or preempted (in order of arrival), and the running ones' reservations.
        self.running: dict[Rid, EngineTrack] = {}
        self.waiting: dict[Rid, EngineTrack] = {}
        self.reserved = 0
        self.odd = False  # a request the contract refuses was accepted: every step is judged in full
        # Steps in which every running request decodes are judged without touching each request
        # (`cleanstep.decode_step`): each running request's computed and emitted counts are then `lag`
        # behind, until `sync`; `calendar` maps a lag to the rids whose last token comes at it.
        self.lag = 0
        self.calendar: dict[int, list[Rid]] | None = None
        # The running requests' decodes (each given 1, in the order of the last plan `decode_step` took, with
        # its tokens in theirs, and the plan's tokens), kept by `decode_step` as the running requests change:
        # the same plan again, or those decodes followed by admissions, is read without a set.
        self.shown: tuple[list[tuple[Rid, int]], list[Rid], int] | None = None

    def _accepted(self, rid: Rid) -> bool:
        """Whether `rid` was accepted: it is live or ended, and stays one of the two."""
        return rid in self.reqs or rid in self.ended

    def sync(self) -> None:
        """Bring the running requests' counts up to date after the steps `decode_step` judged."""
        self.calendar = self.shown = None
        if self.lag:
            lag, self.lag = self.lag, 0
            for t in self.running.values():
                t.emitted += lag
                t.computed += lag

    def _recount(self) -> None:
        """The running and waiting requests and the reservations, read again from the account (after a step
        judged in full)."""
        reqs = self.reqs.values()
        self.running = {r.rid: r for r in reqs if r.state == RUNNING}
        self.waiting = {r.rid: r for r in reqs if r.state == WAITING or r.state == PREEMPTED}
        self.reserved = sum(r.prompt_len + r.max_new for r in self.running.values())

    # -- reporting ----------------------------------------------------------------------------------------

    def broke(self, rule: str, message: str) -> None:
        if rule != PROTOCOL and rule not in self.checked:
            return
        if rule not in self.verdict.violations:
            self.verdict.violations[rule] = (RuleViolation(rule, self.step, message), self.line)
        if rule == PROTOCOL:  # the trace cannot be followed past it
            raise _Stop

    # -- one line --------------------------------------------------------------------------------------------

    def offer(self, adds: Iterable[tuple[Rid, int, int]], refuse: list[list[Any]]) -> None:
        k = self.cfg.kv_tokens
        for rid, prompt_len, max_new in adds:
            if rid in self.reqs or rid in self.ended:
                self.broke("NEVER-FIT", f"add({rid!r}, {prompt_len}, {max_new}) was accepted, but rid {rid!r} is taken")
                continue
            if prompt_len < 1 or max_new < 1 or prompt_len + max_new > k:
                self.broke("NEVER-FIT", f"add({rid!r}, {prompt_len}, {max_new}) was accepted, but the contract "
                                        f"refuses it: prompt_len and max_new >= 1, prompt_len + max_new <= K = {k}")
                self.odd = True
            self.reqs[rid] = self.waiting[rid] = EngineTrack(rid, prompt_len, max_new, self._arrivals)
            self._arrivals += 1
        for rid, prompt_len, max_new in refuse:
            self.saw_refusals = True
            why = self._refusal(rid, prompt_len, max_new)
            if why is None:
                self.broke("NEVER-FIT", f"add({rid!r}, {prompt_len!r}, {max_new!r}) was refused, but the contract "
                                        "accepts it")
            self.refused.add(rid)

    def _refusal(self, rid: object, prompt_len: object, max_new: object) -> str | None:
        """Why the contract refuses this request here (None: it must be accepted). A string rid is valid in v2:
        the contract's checks then judge the other fields."""
        if rid in self.reqs or rid in self.ended:
            return f"rid {rid!r} is taken"
        shadow = Shadow(Config(self.cfg.token_budget, self.cfg.max_seqs, self.cfg.kv_tokens))
        return refusal(shadow, 0 if type(rid) is str and rid else rid, prompt_len, max_new)

    def run_step(self, s: EngineStep) -> None:
        self.step = s.step
        for key, value in s.config.items():
            setattr(self.cfg, key, value)
        budget, slots = self.cfg.token_budget, self.cfg.max_seqs
        self._withdraw_cancelled(s)
        running_before = self._running()
        for rid, kind in s.preempt:
            req = self._req(rid, "preempt")
            if req.state != RUNNING:
                self.broke(PROTOCOL, f"preempt names rid {rid!r}, which is {req.state}, not running")
            req.state, req.preempted = PREEMPTED, (s.step, kind)
        ready: list[EngineTrack] = []  # running with a decode due
        partial: list[EngineTrack] = []  # running with a chunk of its prompt (or recompute) due
        for r in running_before:
            if r.state == RUNNING:
                (ready if r.ready else partial).append(r)
        waiting = sorted((r for r in self.reqs.values() if r.state in (WAITING, PREEMPTED)), key=lambda r: r.arrival)
        admitted = self._admitted(s)
        self._judge_admissions(admitted, waiting, dict(s.admit), s, running_before)
        plan_rids = [rid for rid, _ in s.plan]
        planned = set(plan_rids)
        self._judge_plan(s, ready, partial, admitted, waiting, budget, slots)
        if not s.ran:  # the engine stopped in this step: its plan is judged, it emitted nothing
            self.verdict.unfinished_step = s.step
            return
        # The step ran: computed tokens move, tokens are emitted.
        emitted_set = set(s.emitted)
        if len(emitted_set) != len(s.emitted):
            dup = next(r for r in s.emitted if s.emitted.count(r) > 1)
            self.broke("TOKENS", f"rid {dup!r} emitted more than one token in one step")
        self._compute(s, emitted_set)
        for rid in s.emitted:
            if rid in self.ended:
                rule, how = self._ended(rid)
                self.broke(rule, f"rid {rid!r} emitted a token after it {how} {self.ended.when(rid)}")
                continue
            req = self.reqs.get(rid)
            if req is None:
                self.broke(PROTOCOL, f"emitted names rid {rid!r}, which was never added")
                return
            if rid not in planned:
                self.broke("TOKENS", f"rid {rid!r} emitted a token but was not in the plan")
                continue
            if rid in emitted_set and req.computed == req.prompt_len + req.emitted:  # all known tokens computed
                req.emitted += 1
                if req.emitted > req.max_new:
                    self.broke("TOKENS", f"rid {rid!r} emitted {req.emitted} tokens; its max_new is {req.max_new}")
            emitted_set.discard(rid)
        self._finish(s)

    def _withdraw_cancelled(self, s: EngineStep) -> None:
        """Requests cancelled before this step (not in its plan) are gone before it is judged."""
        planned_now: set[Rid] | None = None  # made at the first cancel: most steps finish none
        for rid, reason in s.finished:
            if reason != "cancel":
                continue
            if planned_now is None:
                planned_now = {planned for planned, _ in s.plan}
            if rid not in planned_now and rid in self.reqs:
                del self.reqs[rid]
                self.ended.add(rid, s.step)
                self._cancelled_before.add(rid)
                self.cancelled.add(rid, s.step)

    def _admitted(self, s: EngineStep) -> list[EngineTrack]:
        """The step's admissions: the admit events, then any planned request that was waiting."""
        admitted: list[EngineTrack] = []
        for rid, _ in s.admit:
            if rid not in self.reqs and rid in self.ended:  # an ended request admitted again
                rule, how = self._ended(rid)
                self.broke(rule, f"admit names rid {rid!r}, which {how} {self.ended.when(rid)}")
                continue
            req = self._req(rid, "admit")
            if req.state not in (WAITING, PREEMPTED):
                self.broke(PROTOCOL, f"admit names rid {rid!r}, which is {req.state}, not waiting")
            admitted.append(req)
        for rid, _ in s.plan:
            req = self.reqs.get(rid)
            if req is not None and req.state in (WAITING, PREEMPTED) and req not in admitted:
                admitted.append(req)
        return admitted

    def _compute(self, s: EngineStep, emitted_set: set[Rid]) -> None:
        """The step ran: each planned request's computed tokens move, and FIRST-TOKEN is judged on what it emitted."""
        seen: set[Rid] = set()
        for rid, n in s.plan:
            if rid in seen:
                continue
            seen.add(rid)
            req = self.reqs.get(rid)
            if req is None:
                continue
            known = req.prompt_len + req.emitted
            req.computed = min(known, req.computed + n)
            due_now = req.computed == known
            if due_now and rid not in emitted_set:
                self.broke("FIRST-TOKEN", f"rid {rid!r}'s chunk brings it to all {req.known} known tokens, but the "
                                          "step emitted no token for it")
            if not due_now and rid in emitted_set:
                self.broke("FIRST-TOKEN", f"rid {rid!r} emitted a token with {req.computed} of its {req.known} known "
                                          "tokens computed: before its prompt (or recompute) was done")

    def _judge_admissions(self, admitted: list[EngineTrack], waiting: list[EngineTrack], cached: dict[Rid, int],
                          s: EngineStep, running_before: list[EngineTrack]) -> None:
        heads = waiting[:len(admitted)]
        for req in admitted:
            if req not in heads:
                blocked = next(r for r in heads if r not in admitted)
                self.broke("FCFS", f"admitted rid {req.rid!r} while rid {blocked.rid!r} waited ahead of it")
                break
        for req in admitted:
            kind = req.preempted[1] if req.preempted else None
            hit = cached.get(req.rid, 0)
            if kind == "swap":
                pass  # its KV comes back whole: computed stays
            else:
                if hit >= req.known:
                    self.broke("PREFILL-ONCE", f"rid {req.rid!r} is admitted with a cached prefix of {hit} tokens, "
                                               f"all of its {req.known} known tokens: the last must be computed")
                    hit = req.known - 1
                req.computed = hit
            req.state, req.preempted = RUNNING, None
            req.admitted_at = self._admissions
            self._admissions += 1
        # With no admission and no preemption, the running requests are those before the step.
        running = self._running() if admitted or s.preempt else running_before
        if len(running) > self.cfg.max_seqs:
            self.broke("SLOTS", f"admitting {[r.rid for r in admitted]} makes {len(running)} requests running; "
                                f"max_seqs is {self.cfg.max_seqs}")
        reserved = sum(r.prompt_len + r.max_new for r in running)
        if admitted and reserved > self.cfg.kv_tokens:
            self.broke("KV", f"admitting {[r.rid for r in admitted]} reserves {reserved} KV tokens; kv_tokens "
                             f"is {self.cfg.kv_tokens}{PAGED_NOTE if self.cfg.paged else ''}")

    def _judge_plan(self, s: EngineStep, ready: list[EngineTrack], partial: list[EngineTrack],
                    admitted: list[EngineTrack], waiting: list[EngineTrack], budget: int, slots: int) -> None:
        tokens, got = self._judge_entries(s)
        if tokens > budget:
            self.broke("BUDGET", f"the plan carries {tokens} tokens; the budget is {budget}")
        busy = any(r.state in (WAITING, PREEMPTED, RUNNING) for r in self.reqs.values()) or bool(admitted)
        if not s.plan and (busy or ready or partial):
            self.broke("PROGRESS", f"empty plan while {len(waiting)} request(s) wait and "
                                   f"{len(ready) + len(partial)} run")
        decoded = [r for r in ready if r.rid in got]
        decode_tokens = sum(got[r.rid] for r in decoded)
        prefill = any(r.rid in got for r in partial) or bool(admitted)
        if len(ready) <= budget and len(decoded) < len(ready):
            left_out = [r.rid for r in ready if r.rid not in got]
            self.broke("DECODE-FIRST", f"ready request(s) {left_out[:5]} got no token; the budget of {budget} covers "
                                       f"all {len(ready)}")
        elif len(ready) > budget and prefill:
            self.broke("DECODE-FIRST", f"prefill ran while {len(ready) - len(decoded)} ready request(s) got no token")
        left = budget - decode_tokens
        for req in sorted(partial, key=lambda r: r.admitted_at or 0):
            expected = max(0, min(req.due, left))
            if got.get(req.rid, 0) != expected:
                self.broke("PARTIAL-NEXT", f"partial rid {req.rid!r} ({req.due} tokens due) got {got.get(req.rid, 0)} "
                                           f"with {left} budget left; it is owed min(due, left) = {expected}")
                break
            left -= expected
        unused = budget - tokens
        if unused > 0:
            if len(decoded) < len(ready):
                self.broke("WORK-CONSERVING", f"{unused} budget token(s) unused while a ready request got no decode")
            elif any(got.get(r.rid, 0) < r.due for r in partial) or any(got.get(r.rid, 0) < r.due for r in admitted):
                short = next(r for r in (*partial, *admitted) if got.get(r.rid, 0) < r.due)
                self.broke("WORK-CONSERVING", f"{unused} budget token(s) unused while rid {short.rid!r} got only "
                                              f"{got.get(short.rid, 0)} of its {short.due} tokens due")
            else:
                head = next((r for r in waiting if r not in admitted), None)
                running = len(self._running())
                if head is not None and running < slots:
                    reserved = sum(r.prompt_len + r.max_new for r in self._running())
                    free = self.cfg.kv_tokens - reserved
                    if head.prompt_len + head.max_new <= free:
                        self.broke("WORK-CONSERVING", f"{unused} budget token(s) unused while waiting rid {head.rid!r} "
                                                      f"fits: {slots - running} slot(s) free, reservation "
                                                      f"{head.prompt_len + head.max_new} <= free KV {free}"
                                                      f"{PAGED_NOTE if self.cfg.paged else ''}")

    def _judge_entries(self, s: EngineStep) -> tuple[int, dict[Rid, int]]:
        """ONE-ENTRY, TOKENS and PREFILL-ONCE on each entry of the plan, and that each names a running request:
        the plan's tokens, and each request's n (its first entry)."""
        tokens = 0
        seen: set[Rid] = set()
        got: dict[Rid, int] = {}
        for rid, n in s.plan:
            tokens += n
            if rid in seen:
                self.broke("ONE-ENTRY", f"rid {rid!r} appears more than once in the plan")
                continue
            seen.add(rid)
            if n < 1:
                self.broke("ONE-ENTRY", f"rid {rid!r} is given n={n}; every entry needs n >= 1")
            req = self.reqs.get(rid)
            if req is None:
                if rid in self.ended:
                    rule, how = self._ended(rid)
                    self.broke(rule, f"plan names rid {rid!r}, which {how} {self.ended.when(rid)}")
                    continue
                if rid in self.refused:
                    self.broke("NEVER-FIT", f"rid {rid!r} was refused by add() yet is planned")
                    continue
                self.broke(PROTOCOL, f"plan names rid {rid!r}, which was never added")
            assert req is not None
            if req.state != RUNNING:
                self.broke(PROTOCOL, f"plan names rid {rid!r}, which is {req.state}")
            got[rid] = n
            if req.ready and n != 1:
                self.broke("TOKENS", f"rid {rid!r} has one token due and is given n={n}; a decode is exactly 1 token")
            elif req.computed + n > req.known:
                self.broke("PREFILL-ONCE", f"rid {rid!r} gets a chunk of {n} at position {req.computed}, past its "
                                           f"{req.known} known tokens (only {req.due} remain)")
        return tokens, got

    def _finish(self, s: EngineStep) -> None:
        finishing = {rid for rid, _ in s.finished}
        for rid, reason in s.finished:
            if rid in self._cancelled_before:
                self._cancelled_before.discard(rid)
                continue
            req = self.reqs.get(rid)
            if req is None and rid in self.ended:
                self.broke("KV", f'"finished" names rid {rid!r} again: it finished {self.ended.when(rid)}')
                continue
            if req is None:
                self.broke(PROTOCOL, f'"finished" names rid {rid!r}, which is not an accepted, unfinished request')
                return
            if reason == "length" and req.emitted < req.max_new:
                self.broke("KV", f"rid {rid!r} finished (length) with {req.emitted} of its {req.max_new} tokens "
                                 "emitted: its KV came back before its last token")
                self._kept_kv.add(rid)  # followed on to its last token, as its tokens say it still runs
                continue
            elif reason == "length" and req.emitted > req.max_new:
                self.broke("TOKENS", f"rid {rid!r} finished with {req.emitted} tokens; its max_new is {req.max_new}")
            del self.reqs[rid]
            self.ended.add(rid, s.step)
            if reason == "cancel":
                self.cancelled.add(rid, s.step)
        for req in list(self.reqs.values()):
            if req.emitted < req.max_new or req.rid in finishing:
                continue
            if req.rid not in self._kept_kv:  # else its KV came back early (reported): it ends with its last token
                self.broke("KV", f"rid {req.rid!r} emitted its last ({req.max_new}th) token, but the engine did not "
                                 "return its KV (it is not in finished)")
            del self.reqs[req.rid]  # followed as finished: its tokens are all out
            self.ended.add(req.rid, s.step)

    def end(self) -> None:
        self.verdict.ended = True
        preempted = [r for r in self.reqs.values() if r.state == PREEMPTED]
        if preempted:
            r = preempted[0]
            assert r.preempted is not None
            self.broke("PROGRESS", f"the trace ends with rid {r.rid!r} preempted at step {r.preempted[0]} and never "
                                   "resumed")
        elif self.reqs:
            waiting = sum(r.state == WAITING for r in self.reqs.values())
            self.broke("PROGRESS", f"the trace ends with {waiting} request(s) waiting and "
                                   f"{len(self.reqs) - waiting} running: every accepted request must finish")

    # -- helpers -------------------------------------------------------------------------------------------------

    def _ended(self, rid: Rid) -> tuple[str, str]:
        """The rule an ended `rid` breaks when planned or emitting (CANCEL if a cancel ended it, else
        TOKENS), and how it ended."""
        return ("CANCEL", "was cancelled") if rid in self.cancelled else ("TOKENS", "finished")

    def _running(self) -> list[EngineTrack]:
        return [r for r in self.reqs.values() if r.state == RUNNING]

    def _req(self, rid: Rid, where: str) -> EngineTrack:
        req = self.reqs.get(rid)
        if req is None:
            self.broke(PROTOCOL, f"{where} names rid {rid!r}, which is not an accepted, unfinished request")
        assert req is not None
        return req


class _Stop(Exception):
    """A PROTOCOL break: the trace cannot be followed further."""


def check_engine_trace(
    lines: Iterable[bytes | str], rules: Iterable[str] | None = None, progress: Callable[[str], None] | None = None,
) -> EngineVerdict:
    """Judge a trace (v2, or v1) against `rules` (all when None). Raises TraceError for a malformed trace."""
    checked = tuple(r.id for r in select(None if rules is None else list(rules)))
    started = time.monotonic()
    header, records = read(lines)
    c = header.config
    verdict = EngineVerdict(Config(c.token_budget, c.max_seqs, c.kv_tokens), checked, header.version)
    judge = Judge(header, checked, verdict)
    try:
        _judge_records(judge, verdict, records)
    except _Stop:
        pass
    finally:
        verdict.lines = judge.line
    label_partial(verdict, judge.saw_refusals, bool(judge.cancelled))
    verdict.seconds = time.monotonic() - started
    return verdict


def _judge_records(judge: Judge, verdict: EngineVerdict, records: Iterable[tuple[int, EngineStep | EngineEnd]]) -> None:
    """Each record in turn: a step by the shortcuts where they take it, else in full; the end line."""
    decode, clean = decode_step, clean_step  # looked up once (a test may put others in their place)
    closed: str | None = None  # why nothing may follow: after the end line, or a step that did not finish
    steps = verdict.steps
    try:
        for number, item in records:
            if closed is not None:
                raise TraceError(number, closed)
            judge.line = number
            if type(item) is EngineEnd:
                judge.sync()
                judge.offer((), item.refuse)
                judge.end()
                closed = "nothing may follow the end line"
                continue
            judge.step = item.step  # adds come just before their step: judged at it
            if item.add or item.refuse:
                judge.offer(item.add, item.refuse)
            if not (decode(judge, item) or clean(judge, item)):
                judge.sync()
                judge.run_step(item)
                judge._recount()
                if verdict.unfinished_step is not None:
                    closed = f"nothing may follow step {verdict.unfinished_step}, which did not finish (ran: false)"
            steps += 1
    finally:
        verdict.steps = steps


def label_partial(verdict: EngineVerdict, saw_refusals: bool, saw_cancels: bool = False) -> None:
    """What each rule that held could not judge from this trace's facts."""
    gaps = {}
    if saw_cancels:
        gaps["CANCEL"] = ("the trace records cancels by their effect, not the cancel() calls: only that a cancelled "
                          "request is never planned and emits nothing after was judged, not which cancels are refused")
    elif "CANCEL" in verdict.checked and "CANCEL" not in verdict.violations:
        verdict.not_judged["CANCEL"] = "(the trace cancels no request)"
    if not saw_refusals:
        gaps["NEVER-FIT"] = "the trace lists no refusals: only that accepted requests fit K was judged"
    if not verdict.ended:
        gaps["PROGRESS"] = "no end line: that every request finished was not judged"
    if verdict.unfinished_step is not None:
        for rule in verdict.checked:
            gaps.setdefault(rule, f"the trace ends in step {verdict.unfinished_step}, which did not finish (the engine "
                                  "stopped in it): its plan was judged, not its tokens")
    if PROTOCOL in verdict.violations:
        for rule in verdict.checked:
            step = verdict.violations[PROTOCOL][0].step
            gaps.setdefault(rule, f"judged only up to the PROTOCOL error at step {step}")
    for rule, why in gaps.items():
        if rule in verdict.checked and rule not in verdict.violations:
            verdict.partial[rule] = why
