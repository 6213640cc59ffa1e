"""The prefix monitor: the paged monitor over a prefix-caching scheduler, with the cache the contract
expects in its shadow. It reads, beyond the paged protocol, the plan's `cached` claims ((rid, cached
tokens) per admission) and, where shown, the scheduler's `cached` view (its free cached blocks' keys,
least recently freed first); add() takes a request's `content` (`keys`), passed on to the scheduler.

It shares no decision with the scheduler: it works out each admission's hit, each eviction and each
release on its own cache (`shadow`), and judges what the scheduler claims and shows against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from stallfree.spec.errors import InvalidField
from stallfree.spec.paged.monitor import PagedMonitor, pool_of, refusal
from stallfree.spec.paged.rules import PagedCheck
from stallfree.spec.paged.shadow import PagedFacts
from stallfree.spec.types import Config

from .keys import Content, check_content
from .rules import AFTER_STEP, BEFORE_PREEMPTION, select
from .shadow import PrefixFacts, PrefixShadow, allocate, apply, read_cached


class PrefixMonitor(PagedMonitor):
    """Drives a prefix-caching `scheduler` under `config`, checking the prefix `rules` (all when None)."""

    def __init__(self, scheduler: Any, config: Config, rules: Iterable[str] | None = None) -> None:
        self._start(scheduler, select(rules))
        self.config = config
        self.shadow: PrefixShadow = PrefixShadow(config, pool_of(scheduler, config))
        ids = {r.id for r in self.rules}
        self._before = [(i, cast(PagedCheck, c)) for i, c in BEFORE_PREEMPTION.items() if i in ids]
        self._after = [(i, cast(PagedCheck, c)) for i, c in AFTER_STEP.items() if i in ids]
        self._checks_cancel = "CANCEL" in ids
        self.num_cancels = 0
        self._content: Content = ()

    def add(self, rid: object, prompt_len: object, max_new: object, content: object = ()) -> bool:
        """Offer a request with its `content` (none: every token its own)."""
        self._content = ()
        try:
            self._content = check_content(content, prompt_len) if content else ()  # type: ignore[arg-type]
        except (InvalidField, TypeError):
            self._content = content  # type: ignore[assignment]  # refused: judged under NEVER-FIT
        self.shadow.offered = self._content
        try:
            return super().add(rid, prompt_len, max_new)
        finally:
            self.shadow.offered = ()

    def offer(self, rid: object, prompt_len: object, max_new: object) -> None:
        if self._content:
            self.scheduler.add(rid, prompt_len, max_new, self._content)
        else:
            self.scheduler.add(rid, prompt_len, max_new)

    def refusal(self, rid: object, prompt_len: object, max_new: object) -> str | None:
        found = refusal(self.shadow, rid, prompt_len, max_new)
        if found is None and self._content:
            try:
                check_content(self._content, prompt_len)  # type: ignore[arg-type]
            except (InvalidField, TypeError) as error:
                return str(error)
        return found

    def _facts(self, step: int) -> PrefixFacts:
        return PrefixFacts(step)

    def _observe_more(self, plan: object, facts: PagedFacts) -> None:
        """The plan's cache claims, and the blocks they would take (not yet committed)."""
        facts = cast(PrefixFacts, facts)
        shadow = self.shadow
        read_cached(shadow, plan, facts)
        shown = getattr(self.scheduler, "cached", None)
        facts.planned_cached = tuple(shown) if isinstance(shown, tuple | list) else None
        allocate(shadow, shadow.cache.copy(), facts, commit=False)

    def _apply(self, facts: PagedFacts) -> None:
        """The prefix shadow's step: the expectations of the done checks are dropped, then it advances."""
        facts = cast(PrefixFacts, facts)
        facts.expected.clear()
        facts.free_after.clear()
        apply(self.shadow, facts)

    def _read_after(self, facts: PagedFacts) -> None:
        shown = getattr(self.scheduler, "cached", None)
        cast(PrefixFacts, facts).reported_cached = tuple(shown) if isinstance(shown, tuple | list) else None
