"""A Hypothesis state machine that checks a paged scheduler against the paged rules.

    from stallfree.testing.paged_machine import paged_machine_for
    TestMyPaged = paged_machine_for(MyPagedScheduler).TestCase

The sibling of `machine` for the paged design. Actions: add a request that fits the pool alone,
add one whose peak cannot (NEVER-FIT), offer a bad field; run a step in which some emitted tokens
stop their request; run several steps; cancel a live request between steps or while a plan is
pending; cancel a rid that is not live (it must be refused); drain. Every action goes through the
`PagedMonitor`; every state is judged by the paged invariants (`spec.paged.invariants`).

The pool is drawn too: blocks of 1 to 4 tokens, 1 to 12 blocks, a watermark of 0 to 2 blocks, passed
to `factory(token_budget=, max_seqs=, kv_tokens=, block_size=, watermark=)`; with `fixed_pool` the
factory is called with the three plain fields only and declares its own pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from stallfree.spec.errors import RuleViolation
from stallfree.spec.paged.invariants import broken
from stallfree.spec.paged.monitor import PagedMonitor
from stallfree.spec.types import Config

from .machine import BAD_VALUES, FIELDS

MAX_RUN = 12


class PagedMachine(RuleBasedStateMachine):
    factory: ClassVar[Callable[..., Any] | None] = None
    fixed_pool: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self.monitor: PagedMonitor | None = None
        self.next_rid = 0

    @initialize(budget=st.integers(1, 12), slots=st.integers(1, 6), block_size=st.integers(1, 4),
                num_blocks=st.integers(1, 12), watermark=st.integers(0, 2))
    def start(self, budget: int, slots: int, block_size: int, num_blocks: int, watermark: int) -> None:
        factory = self.factory
        if factory is None:
            raise TypeError("PagedMachine has no factory: build it with paged_machine_for(factory)")
        config = Config(budget, slots, block_size * num_blocks)
        pool = {} if self.fixed_pool else {"block_size": block_size, "watermark": min(watermark, num_blocks - 1)}
        scheduler = factory(token_budget=budget, max_seqs=slots, kv_tokens=config.kv_tokens, **pool)
        self.monitor = PagedMonitor(scheduler, config)
        pool_note = self.monitor.shadow.pool
        note(f"config: budget {budget}, max_seqs {slots}, kv_tokens {config.kv_tokens}, pool {pool_note}")

    @property
    def m(self) -> PagedMonitor:
        assert self.monitor is not None
        return self.monitor

    def usable_tokens(self) -> int:
        pool = self.m.shadow.pool
        return (pool.num_blocks - pool.watermark) * pool.block_size

    # -- arrivals ------------------------------------------------------------------------------------

    @rule(data=st.data())
    def add_fitting(self, data: st.DataObject) -> None:
        """A request whose peak fits the pool less the watermark: it must be accepted (NEVER-FIT)."""
        usable = self.usable_tokens()
        if usable < 1:
            return
        peak = data.draw(st.integers(1, usable), label="prompt_len + max_new - 1")
        max_new = data.draw(st.integers(1, peak), label="max_new")
        self.offer(peak - max_new + 1, max_new, expect=True)

    @rule(data=st.data(), n=st.integers(2, 4))
    def add_burst(self, data: st.DataObject, n: int) -> None:
        """`n` fitting requests before the same step: several waiting behind a preempted one."""
        for _ in range(n):
            self.add_fitting(data)

    @rule(over=st.integers(1, 8))
    def add_never_fit(self, over: int) -> None:
        """A request whose peak exceeds the pool less the watermark: it must be refused."""
        pool = self.m.shadow.pool
        self.offer(self.usable_tokens() + over * pool.block_size, 1, expect=False)

    @rule(field=st.sampled_from(FIELDS), bad=st.sampled_from(BAD_VALUES))
    def add_bad(self, field: str, bad: object) -> None:
        values: dict[str, object] = {"rid": self.next_rid, "prompt_len": 1, "max_new": 1}
        values[field] = -1 if field == "rid" and bad == 0 else bad  # rid 0 is a valid rid
        note(f"add({values['rid']!r}, {values['prompt_len']!r}, {values['max_new']!r})  # bad {field}")
        self.m.add(values["rid"], values["prompt_len"], values["max_new"])

    def offer(self, prompt_len: int, max_new: int, expect: bool) -> None:
        rid = self.next_rid
        self.next_rid += 1
        note(f"add({rid}, {prompt_len}, {max_new})")
        accepted = self.m.add(rid, prompt_len, max_new)
        assert accepted == expect, (rid, prompt_len, max_new, accepted)

    # -- steps, stops, cancels -----------------------------------------------------------------------

    @rule(data=st.data())
    def step(self, data: st.DataObject) -> None:
        """One step; each token it emits may end its request (a stop)."""
        self.m.plan()
        stops = [rid for rid in self.m.due() if data.draw(st.integers(0, 4), label=f"stop r{rid}?") == 0]
        note(f"step {self.m.shadow.step}" + (f", stopped {stops}" if stops else ""))
        self.m.complete(stops)

    @rule(n=st.integers(2, MAX_RUN))
    def run_steps(self, n: int) -> None:
        note(f"{n} steps")
        for _ in range(n):
            self.m.step()

    @precondition(lambda self: self.monitor is not None and bool(self.monitor.shadow.tracks))
    @rule(data=st.data(), pending=st.booleans())
    def cancel_live(self, data: st.DataObject, pending: bool) -> None:
        """Cancel a live request, between steps or while a plan is pending."""
        if pending:
            self.m.plan()
        rids = sorted(self.m.shadow.tracks)
        rid = data.draw(st.sampled_from(rids), label="rid")
        note(f"cancel({rid})" + (" while a plan is pending" if pending else ""))
        self.m.cancel(rid)
        if pending:
            self.m.complete()

    @rule(data=st.data())
    def cancel_not_live(self, data: st.DataObject) -> None:
        """Cancel a rid that was never accepted or has ended: it must be refused, nothing changing."""
        ended = sorted(self.m.shadow.ended)
        rid = data.draw(st.sampled_from([self.next_rid + 100, *ended]), label="rid")
        note(f"cancel({rid})  # not live")
        assert self.m.cancel(rid) is False

    @rule()
    def drain(self) -> None:
        note("drain")
        bound = PagedMonitor.work_bound_of(self.m.shadow)
        while not self.m.is_idle:
            if bound == 0:
                raise RuleViolation("PROGRESS", self.m.shadow.step, "the drain did not finish within its bound")
            self.m.step()
            bound -= 1

    @invariant()
    def paged_invariants(self) -> None:
        if self.monitor is None:
            return
        found = broken(self.monitor.shadow, self.monitor.scheduler)
        if found is not None:
            raise RuleViolation(found[0], self.monitor.shadow.step, found[1])


def paged_machine_for(factory: Callable[..., Any], fixed_pool: bool = False) -> type[PagedMachine]:
    """The paged machine over `factory`; see the module doc for `fixed_pool`."""
    return type(f"PagedMachineFor{getattr(factory, '__name__', 'Scheduler')}", (PagedMachine,),
                {"factory": staticmethod(factory), "fixed_pool": fixed_pool})
