"""A Hypothesis state machine that checks a prefix-caching scheduler against the prefix rules.

    from stallfree.testing.prefix_machine import prefix_machine_for
    TestMine = prefix_machine_for(MyPrefixScheduler).TestCase

The paged machine's actions (adds that fit and that do not, bad fields, steps with stops, runs of
steps, cancels between steps and while a plan is pending, refused cancels, drains) under the
`PrefixMonitor`, with adds that share prefixes: a request may start with one of a few system prompts,
with an earlier request's whole content (the same prompt again, or a next turn that extends it), or
with nothing shared; or a group of requests with the same system prompt at once. Every state is
judged by the prefix invariants (`prefix.contract.invariants`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from stallfree.prefix.contract.invariants import broken
from stallfree.prefix.contract.monitor import PrefixMonitor
from stallfree.spec.errors import RuleViolation
from stallfree.spec.types import Config

from .paged_machine import PagedMachine

NUM_SYSTEM_PROMPTS = 3


class PrefixMachine(PagedMachine):
    def __init__(self) -> None:
        super().__init__()
        self.contents: list[tuple[tuple[int, int], ...]] = []  # accepted contents, for later turns
        self.next_cid = NUM_SYSTEM_PROMPTS

    @initialize(budget=st.integers(1, 12), slots=st.integers(1, 6), block_size=st.integers(1, 4),
                num_blocks=st.integers(1, 12), watermark=st.integers(0, 2))
    def start(self, budget: int, slots: int, block_size: int, num_blocks: int, watermark: int) -> None:
        factory = self.factory
        if factory is None:
            raise TypeError("PrefixMachine has no factory: build it with prefix_machine_for(factory)")
        config = Config(budget, slots, block_size * num_blocks)
        pool = {} if self.fixed_pool else {"block_size": block_size, "watermark": min(watermark, num_blocks - 1)}
        scheduler = factory(token_budget=budget, max_seqs=slots, kv_tokens=config.kv_tokens, **pool)
        self.monitor = PrefixMonitor(scheduler, config)
        pool_note = self.monitor.shadow.pool
        note(f"config: budget {budget}, max_seqs {slots}, kv_tokens {config.kv_tokens}, pool {pool_note}")

    @rule(data=st.data())
    def add_sharing(self, data: st.DataObject) -> None:
        """A fitting request whose prompt starts with shared content: a system prompt, or an earlier
        request's content (the same prompt, or a next turn: it, then a message of its own)."""
        usable = self.usable_tokens()
        if usable < 1:
            return
        peak = data.draw(st.integers(1, usable), label="prompt_len + max_new - 1")
        max_new = data.draw(st.integers(1, peak), label="max_new")
        prompt_len = peak - max_new + 1
        kind = data.draw(st.sampled_from(("system", "again", "next turn")), label="sharing")
        content: tuple[tuple[int, int], ...]
        if kind == "system" or not self.contents:
            cid = data.draw(st.integers(0, NUM_SYSTEM_PROMPTS - 1), label="system prompt")
            content = ((cid, data.draw(st.integers(1, prompt_len), label="its length")),)
        else:
            base = data.draw(st.sampled_from(self.contents), label="earlier content")
            content = base if kind == "again" else (*base, (self.next_cid, data.draw(st.integers(1, 3))))
            self.next_cid += 1
        if sum(n for _, n in content) > prompt_len:
            content = ()
        rid = self.next_rid
        self.next_rid += 1
        note(f"add({rid}, {prompt_len}, {max_new}, content={content})")
        assert self.m.add(rid, prompt_len, max_new, content)
        if content:
            self.contents.append(content)

    @rule(data=st.data(), n=st.integers(2, 3))
    def add_group(self, data: st.DataObject, n: int) -> None:
        """`n` requests before the same step, all starting with the same system prompt: they run at
        once and hold its blocks together."""
        usable = self.usable_tokens()
        if usable < 2:
            return
        cid = data.draw(st.integers(0, NUM_SYSTEM_PROMPTS - 1), label="system prompt")
        length = data.draw(st.integers(1, max(1, usable // n)), label="its length")
        for _ in range(n):
            max_new = data.draw(st.integers(1, max(1, usable - length)), label="max_new")
            rid = self.next_rid
            self.next_rid += 1
            note(f"add({rid}, {length}, {max_new}, content={((cid, length),)})")
            self.m.add(rid, length, max_new, ((cid, length),))
            self.contents.append(((cid, length),))

    @invariant()
    def paged_invariants(self) -> None:
        if self.monitor is None:
            return
        found = broken(self.monitor.shadow, self.monitor.scheduler)  # type: ignore[arg-type]
        if found is not None:
            raise RuleViolation(found[0], self.monitor.shadow.step, found[1])


def prefix_machine_for(factory: Callable[..., Any], fixed_pool: bool = False) -> type[PrefixMachine]:
    """The prefix machine over `factory` (`fixed_pool`: as the paged machine's)."""
    return type(f"PrefixMachineFor{getattr(factory, '__name__', 'Scheduler')}", (PrefixMachine,),
                {"factory": staticmethod(factory), "fixed_pool": fixed_pool})
