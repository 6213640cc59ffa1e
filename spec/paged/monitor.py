"""The paged monitor: an independent shadow model that watches a paged scheduler through the plain
protocol, plus what the paged design adds to it (the plan's `preempted` rids; the pool the scheduler
declares: `block_size` and `watermark`; `free_blocks` where it is shown; `complete(plan, stopped)`
and `cancel(rid)`), and raises `RuleViolation` on the first broken rule of `paged_rules`.

The sibling of `Monitor`, with the same face (add, plan, complete, step, shadow, counters), so the run
loop (`play.Player`), the kit and the model checker drive either. It shares no decision logic with
the paged scheduler: it judges what the scheduler did.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..ending import Reason
from ..errors import InvalidField, RuleViolation
from ..types import Config, Request
from ..verdict import PROTOCOL
from ..watch import Watch, judge
from ..workload import Workload
from .rules import AFTER_STEP, BEFORE_PREEMPTION, PagedCheck, Rule, select
from .shadow import (
    PagedFacts,
    PagedShadow,
    Pool,
    apply,
    observe,
    observe_emitted,
    read_live,
    read_preempted,
    read_view,
)


def pool_of(scheduler: Any, config: Config) -> Pool:
    """The pool a paged scheduler declares: its `block_size` and `watermark` (ints), over K tokens."""
    block_size = getattr(scheduler, "block_size", None)
    watermark = getattr(scheduler, "watermark", None)
    if type(block_size) is not int or block_size < 1 or type(watermark) is not int or watermark < 0:
        raise RuleViolation(PROTOCOL, 0, f"a paged scheduler declares int block_size >= 1 and watermark >= 0; "
                            f"got block_size={block_size!r:.40}, watermark={watermark!r:.40}")
    return Pool(block_size, config.kv_tokens // block_size, watermark)


def refusal(shadow: PagedShadow, rid: object, prompt_len: object, max_new: object) -> str | None:
    """Why the paged contract refuses add(rid, prompt_len, max_new) in this state, or None to accept."""
    try:
        request = Request(rid, prompt_len, max_new)  # type: ignore[arg-type]
    except (InvalidField, TypeError) as error:
        return str(error)
    if shadow.is_taken(request.rid):
        return f"rid {request.rid} is already taken by an earlier request"
    pool = shadow.pool
    if pool.peak(request) > pool.num_blocks - pool.watermark:
        return (f"its peak of {pool.peak(request)} blocks exceeds the pool of {pool.num_blocks} less the "
                f"watermark {pool.watermark}")
    return None


class PagedMonitor(Watch[PagedShadow, PagedFacts]):
    """Drives a paged `scheduler` under `config`, checking the paged `rules` (all when None)."""

    rules: tuple[Rule, ...]

    def __init__(self, scheduler: Any, config: Config, rules: Iterable[str] | None = None) -> None:
        # Every check reads the paged shadow and facts (the shared rules by the names both designs use).
        self._start(scheduler, select(rules))
        self.config = config
        self.shadow = PagedShadow(config, pool_of(scheduler, config))
        ids = {r.id for r in self.rules}
        self._before: list[tuple[str, PagedCheck]] = [(i, c) for i, c in BEFORE_PREEMPTION.items() if i in ids]
        self._after: list[tuple[str, PagedCheck]] = [(i, c) for i, c in AFTER_STEP.items() if i in ids]
        self._checks_cancel = "CANCEL" in ids
        self.num_cancels = 0

    @staticmethod
    def work_bound(workload: Workload) -> int:
        """Steps within which every request must have finished (PROGRESS under preemption): the
        oldest live request is never preempted (PREEMPT-BOUND) and gains a token every step it runs,
        so once it is the oldest it is admitted within a step and finishes within prompt_len + max_new
        more; requests become the oldest in arrival order. Recompute is inside that count."""
        last_arrival = max((a.arrival_step for a in workload.requests), default=0)
        work = 0
        for a in workload.requests:
            if type(a.prompt_len) is int and type(a.max_new) is int:
                work += max(a.prompt_len, 0) + max(a.max_new, 0) + 1
        return last_arrival + work + 1

    @staticmethod
    def work_bound_of(shadow: PagedShadow) -> int:
        """The same bound for the live requests of `shadow`, with no more arrivals."""
        live = [*shadow.waiting, *shadow.running.values()]
        return sum(t.request.prompt_len + t.request.max_new + 1 for t in live) + 1

    @property
    def checks_per_step(self) -> int:
        return len(self._before) + len(self._plan_checks) + len(self._done_checks) + len(self._after)

    def refusal(self, rid: object, prompt_len: object, max_new: object) -> str | None:
        return refusal(self.shadow, rid, prompt_len, max_new)

    def cancel(self, rid: object) -> bool:
        """Cancel `rid`. True if it was live (the scheduler must accept the cancel), False if the
        scheduler rightly refused; raises RuleViolation('CANCEL') if it did the other."""
        self.require("cancel")
        shadow = self.shadow
        track = shadow.tracks.get(rid) if type(rid) is int else None
        live = track is not None and rid not in shadow.cancelling
        raised: BaseException | None = None
        try:
            self.scheduler.cancel(rid)
        except (KeyError, ValueError, TypeError) as error:
            raised = error
        self.num_cancels += 1
        if self._checks_cancel and live == (raised is not None):
            message = (f"refused: {type(raised).__name__}: {raised}" if raised is not None
                       else "accepted, though the request is not live (never accepted, ended, or being cancelled)")
            raise RuleViolation("CANCEL", shadow.step, f"cancel({rid!r}) was {message}")
        if not live or raised is not None:
            return False
        assert track is not None
        if self._pending is not None:
            shadow.cancelling.add(track.rid)
        else:
            shadow.end(track, Reason.CANCEL)
            shown = read_live(self.scheduler) if self._checks_cancel else None
            if shown is not None and track.rid in shown:
                message = f"cancel({rid!r}) returned, but the scheduler still holds it"
                raise RuleViolation("CANCEL", shadow.step, message)
        return True

    def plan(self) -> object:
        """Ask for a plan; judge its preemptions, apply them to the shadow, then judge the plan."""
        if self._pending is not None:
            raise RuntimeError(f"{type(self).__name__}.plan() called twice without complete()")
        shadow = self.shadow
        plan = self.scheduler.schedule()
        facts = self._facts(shadow.step)
        facts.preempted = read_preempted(shadow, plan)
        judge(self._before, shadow, facts, shadow.step)
        for track in facts.preempted:
            shadow.preempt(track)
        observe(shadow, plan, facts)
        self._observe_more(plan, facts)
        judge(self._plan_checks, shadow, facts, shadow.step)
        self._pending = (plan, facts)
        return plan

    def _facts(self, step: int) -> PagedFacts:
        """The facts record of one step (a design that reads more facts makes its own)."""
        return PagedFacts(step)

    def _observe_more(self, plan: object, facts: PagedFacts) -> None:
        """What a design that extends this one reads from the plan after the preemptions and the
        entries, before the plan's checks (the paged design reads nothing more)."""

    def due(self) -> list[int]:
        """The rids the pending plan must make emit (decodes and completing chunks): those a stop may name."""
        facts = self.pending
        if facts is None:
            raise RuntimeError("PagedMonitor.due() called without a pending plan")
        rids = [t.rid for t, _ in facts.decodes]
        return rids + [c.track.rid for c in facts.chunks + facts.admitted if c.completes]

    def _apply(self, facts: PagedFacts) -> None:
        """Advance the shadow by the step that ran (a design with more state advances it too)."""
        apply(self.shadow, facts)

    def _read_after(self, facts: PagedFacts) -> None:
        """What a design that extends this one reads from the scheduler after the step, for the
        after-step checks (the paged design reads nothing more)."""

    def complete(self, stopped: Iterable[int] = ()) -> PagedFacts:
        """Tell the scheduler the pending plan ran (with the rids in `stopped` ending on their token),
        judge what it reports, and advance the shadow."""
        if self._pending is None:
            raise RuntimeError(f"{type(self).__name__}.complete() called without a pending plan")
        plan, facts = self._pending
        self._pending = None
        shadow = self.shadow
        stops = list(stopped)
        if stops:
            self.require("stop")
        emitted = self.scheduler.complete(plan, stops) if stops else self.scheduler.complete(plan)
        observe_emitted(shadow, facts, emitted, stops, getattr(self.scheduler, "free_blocks", None))
        judge(self._done_checks, shadow, facts, shadow.step)
        self.count_premises(shadow, facts)
        self._apply(facts)
        if self._after:
            facts.reported_live = read_live(self.scheduler)
            facts.reported_line = read_view(self.scheduler, "waiting")
            self._read_after(facts)
        judge(self._after, shadow, facts, facts.step)
        self.num_steps += 1
        if facts.plan:
            self.num_busy_steps += 1
        return facts
