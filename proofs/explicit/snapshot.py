"""Canonical states for the model checker: a key read off the monitor's shadow, and a copy of a live
scheduler and monitor to branch from.

The key is what the contract can see: how many adds the environment has made, the waiting requests
(prompt_len, max_new) in arrival order, and the running requests (prompt_len, max_new, num_prefilled,
num_emitted) in admission order. Rids, step numbers and finished requests are left out: no rule and
no decision of the policy depends on them, so states that differ only there are one state.

A scheduler whose decisions depend on more than that (a step counter, a cache) has hidden state; two
of its states with one key may behave differently. `hidden(scheduler)` names that state and becomes
part of the key. The reference has none in this sense: its step counter and the steps it records
only ever enter its decisions relative to one another, so two reference states with one key behave
alike (tests check this: states reached by different paths continue identically).

The search keeps one live copy per key and branches by copying it (`fork`); it never writes a
scheduler's private fields, so it is not tied to any scheduler's layout.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from typing import Any

from stallfree.spec import Monitor

from .clone import clone_pair

Hidden = Callable[[Any], Hashable]
Key = tuple[int, Hashable, tuple[tuple[int, int], ...], tuple[tuple[int, int, int, int], ...]]


def encode(monitor: Monitor, hidden: Hidden | None = None) -> Key:
    """The canonical key of the state `monitor` has followed (plus the scheduler's hidden state)."""
    shadow = monitor.shadow
    waiting = tuple((t.request.prompt_len, t.request.max_new) for t in shadow.waiting)
    running = tuple(
        (t.request.prompt_len, t.request.max_new, t.num_prefilled, t.num_emitted) for t in shadow.running.values()
    )
    return (monitor.num_adds, None if hidden is None else hidden(monitor.scheduler), waiting, running)


def symmetric(key: Key) -> Key:
    """The representative of `key`'s class under every permutation of its ready requests (prompt
    done, tokens to emit): those sorted, then the partial ones in admission order. Sound where the
    order of ready requests decides nothing (docs/proofs.md, Symmetry): every ready request is
    decoded each step while READY-WITHIN-BUDGET holds, and no rule reads their order then."""
    count, hidden, waiting, running = key
    ready = sorted(r for r in running if r[2] == r[0])
    return count, hidden, waiting, (*ready, *(r for r in running if r[2] < r[0]))


def remaining_work(key: Key) -> int:
    """Prompt positions still to run plus tokens still to emit: the ranking function of PROGRESS."""
    _, _, waiting, running = key
    return sum(p + m for p, m in waiting) + sum(p - f + m - e for p, m, f, e in running)


def is_idle(key: Key) -> bool:
    return not key[2] and not key[3]


def fork(monitor: Monitor) -> Monitor:
    """An independent copy of `monitor` and the scheduler it drives, for any scheduler. The monitor's
    rules and counters are shared or plain ints; only the scheduler and the shadow are copied."""
    scheduler, shadow = clone_pair(monitor.scheduler, monitor.shadow)
    own = getattr(type(monitor), "__copy__", None)  # what `copy.copy` calls, without its dispatch
    twin = copy.copy(monitor) if own is None else own(monitor)
    twin.scheduler = scheduler
    twin.shadow = shadow
    return twin
