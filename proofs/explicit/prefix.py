"""The model checker over the prefix-caching design: the paged design's search (`paged.Paged`), run on
a prefix-caching scheduler under the prefix monitor, with adds whose prompts share prefixes, each
state judged by the prefix invariants.

The adds are every shape of the bound's universe under each content of `CONTENTS` that fits its
prompt: none, or a system prompt of one or two blocks (content 0), so that requests share blocks,
hit them after their first holder has gone and evict them when the pool is short. The key adds to the
paged key each request's content and the cache (its empty count, held keys with their counts, free
cached keys in order; a request's own keys by the request's place in the line), and what the scheduler
shows of its cache, so no two states with different caches are merged.

Beside the paged figures it reports how often the search met what the new rules are about: states
reached by a step in which an admission hit the cache, states reached by a step that evicted, and
states in which a block was held by two requests at once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from stallfree.prefix import small_blocks
from stallfree.prefix.contract.invariants import broken
from stallfree.prefix.contract.monitor import PrefixMonitor
from stallfree.spec import Arrival, Config, Workload

from . import modelcheck
from .bounds import Bounds
from .counterexample import Action, Counterexample
from .design import Summary
from .modelcheck import Progress
from .paged import FIRST_ADD, STOP, Paged, PagedResult
from .paged import key as paged_key
from .snapshot import Hidden

Content = tuple[tuple[int, int], ...]
CONTENTS: tuple[Content, ...] = ((), ((0, 2),), ((0, 4),))


@dataclass(frozen=True, slots=True)
class PrefixResult(PagedResult):
    hit_states: int = 0  # states reached by a step in which an admission held cached blocks
    evicting_states: int = 0  # states reached by a step that evicted a cached block
    shared_states: int = 0  # states in which a block is held by two running requests


class Environment(PrefixMonitor):
    """The prefix monitor, with the paged environment's counts (`events`, `preempting`) and whether the
    last action hit the cache or evicted."""

    def __init__(self, scheduler: Any, config: Config, rules: Iterable[str] | None = None) -> None:
        super().__init__(scheduler, config, rules)
        self.events = 0
        self.preempting = self.hitting = self.evicting = False


def cache_key(m: PrefixMonitor) -> Hashable:
    """The cache by content, a request's own keys by its place in the line."""
    s = m.shadow
    place = {rid: i for i, rid in enumerate([*s.running, *(t.rid for t in s.waiting)])}

    def canon(key: Any) -> Any:
        return (-1, place.get(key[1], -1), key[2]) if isinstance(key, tuple) else key

    shown = getattr(m.scheduler, "cached", None)
    return (s.cache.num_empty, tuple(sorted(s.cache.refs.items())), tuple(canon(k) for k in s.cache.lru),
            None if shown is None else tuple(canon(k) for k in shown))


def key(m: Environment, hidden: Hidden | None = None) -> Hashable:
    s = m.shadow
    contents = tuple(tuple(t.keys) for t in [*s.running.values(), *s.waiting])  # type: ignore[attr-defined]
    return (paged_key(m, hidden), contents, cache_key(m))  # type: ignore[arg-type]


class Prefix(Paged):
    """The paged side of the search, with adds that share prefixes and the prefix monitor's counts."""

    def __init__(self, bounds: Bounds, events: int = 1, contents: Sequence[Content] = CONTENTS) -> None:
        super().__init__(bounds, events)
        shapes = [a for a in self.actions[FIRST_ADD:]]
        adds = [(p, q, c) for p, q in shapes for c in contents if sum(n for _, n in c) <= p]  # type: ignore[misc]
        self.actions = (*self.actions[:FIRST_ADD], *adds)
        self.adds = range(FIRST_ADD, len(self.actions))
        self.hit_states = self.evicting_states = self.shared_states = 0

    def monitor(self, scheduler: Any, config: Config, rules: Iterable[str] | None) -> Environment:  # type: ignore[override]
        return Environment(scheduler, config, rules)

    def act(self, monitor: Any, action: Action) -> None:
        m: Environment = monitor
        hits, evictions = m.shadow.num_hits, m.shadow.cache.num_evictions
        if isinstance(action, tuple) and len(action) == 3:
            m.add(m.num_adds, action[0], action[1], action[2])
            m.preempting = False
        else:
            super().act(m, action)
        m.hitting = m.shadow.num_hits > hits
        m.evicting = m.shadow.cache.num_evictions > evictions

    def key(self, monitor: Any, hidden: Hidden | None) -> Hashable:
        return key(monitor, hidden)

    def summary(self, monitor: Any, key: Any) -> Summary:
        shared = any(n > 1 for n in monitor.shadow.cache.refs.values())
        return (*super().summary(monitor, key), monitor.hitting, monitor.evicting, shared)

    def seen(self, summary: Summary) -> None:
        super().seen(summary[:5])
        self.hit_states += summary[5]
        self.evicting_states += summary[6]
        self.shared_states += summary[7]

    def broken(self, monitor: Any) -> tuple[str, str] | None:
        return broken(monitor.shadow, monitor.scheduler)

    def counterexample(self, config: Config, path: Sequence[Action], rule: str, message: str,
                       factory: Callable[..., Any]) -> Counterexample:
        """The adds (with their content) and steps of `path` as a workload; stops and cancels in its note."""
        arrivals, steps, events = [], 0, []
        for a in path:
            if a is None or a == STOP:
                steps += 1
            elif isinstance(a, tuple):
                arrivals.append(Arrival(len(arrivals), a[0], a[1], steps, content=[list(c) for c in a[2]] or None))
            if isinstance(a, str):
                events.append(a)
        note = f"the path also holds {events}: replay it with the prefix state machine" if events else None
        return Counterexample(rule, message, Workload(config, tuple(arrivals)), steps, note)


def check(
    bounds: Bounds, factory: Callable[..., Any] = small_blocks, events: int = 1, max_states: int | None = None,
    on_progress: Progress | None = None, hidden: Hidden | None = None, contents: Sequence[Content] = CONTENTS,
) -> PrefixResult:
    """Explore every state reachable under `bounds` (and `events` stops or cancels) from a fresh prefix
    `factory(...)`, adds sharing prefixes; see the module doc."""
    design = Prefix(bounds, events, contents)
    r = modelcheck.check(bounds, factory, hidden, max_states, on_progress, design=design)
    return PrefixResult(bounds, r.states, r.transitions, r.depth, r.seconds, r.complete, r.longest_steps,
                        r.drain_bound, design.max_preemptions, design.preempting_states, design.running_states,
                        r.counterexample, design.hit_states, design.evicting_states, design.shared_states)
