"""A safety check that keeps 8 bytes a state in its visited set, as TLC keeps: `check` explores what
`modelcheck.check` explores, judging every rule on every transition and every state invariant in every
state it reaches (the monitor and `Design.broken`, per transition), but stores no graph: the visited
set is an open-addressed table of 64-bit fingerprints (`FingerprintSet`, at most half full, so 8 to 16
bytes a state), and each state keeps its parent's number and the action that reached it (6 bytes), from
which a counterexample's path is read and a state rebuilt. What it gives up: the liveness analysis
(cycles and the drain bound need the graph: `modelcheck.check` does that), the coverage counts, and
the revisit comparison, so a scheduler's hidden state must be declared (`hidden`) or its states merge.
Two keys with one fingerprint are merged, as in compact mode (about n^2 / 2^65).
"""

from __future__ import annotations

import gc
import multiprocessing
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stallfree.reference import Scheduler

from .bounds import Bounds
from .counterexample import Counterexample
from .design import Design
from .modelcheck import Tally, _Explorer
from .snapshot import Hidden

EMPTY = 0  # a free slot; a fingerprint of 0 is stored as 1
MASK = (1 << 64) - 1


class FingerprintSet:
    """64-bit fingerprints in one array, open addressing with linear probing, grown at half full."""

    __slots__ = ("num", "table")

    def __init__(self, capacity: int = 1 << 10) -> None:
        self.table = array("Q", bytes(8 * capacity))
        self.num = 0

    def add(self, key_hash: int) -> bool:
        """Add the fingerprint of `key_hash`; True where it was not there."""
        fp = (key_hash & MASK) or 1
        table = self.table
        mask = len(table) - 1
        i = (fp * 0x9E3779B97F4A7C15 & MASK) >> 16 & mask
        while True:
            slot = table[i]
            if slot == EMPTY:
                table[i] = fp
                self.num += 1
                if 2 * self.num > len(table):
                    self._grow()
                return True
            if slot == fp:
                return False
            i = (i + 1) & mask

    def _grow(self) -> None:
        old = self.table
        self.table = array("Q", bytes(16 * len(old)))
        self.num = 0
        for fp in old:
            if fp != EMPTY:
                self.add(fp)

    @property
    def nbytes(self) -> int:
        return len(self.table) * 8


@dataclass(frozen=True, slots=True)
class LeanResult(Tally):
    bounds: Bounds
    states: int
    transitions: int
    depth: int
    seconds: float
    complete: bool
    counterexample: Counterexample | None
    visited_bytes: int  # the fingerprint table
    path_bytes: int  # parents and actions

    @property
    def bytes_per_state(self) -> float:
        return (self.visited_bytes + self.path_bytes) / self.states if self.states else 0.0



Task = tuple[int, int, bytes, bool]  # a state, its parent, its path (array "h" bytes), a sibling follows
BATCH = 512  # states a worker expands per message
_worker: Any = None  # a worker process's copy of the explorer, set when it forks


def _start(explorer: _Explorer) -> None:
    global _worker
    _worker = explorer
    gc.freeze()  # the forked heap stays shared with the parent


def _expand(explorer: _Explorer, batch: list[Task]) -> list[tuple[int, list[Any]]]:
    """Rebuild each state of `batch` and judge its every action: (state, [(action, fingerprint or None,
    summary or (rule, message))])."""
    out = []
    for state, _parent, packed, follows in batch:
        path = array("h")
        path.frombytes(packed)
        node = explorer.rebuild(path.tolist(), follows) if path else explorer.fresh()
        out.append((state, explorer.outcomes(node)))
    return out


def _in_worker(batch: list[Task]) -> list[tuple[int, list[Any]]]:
    return _expand(_worker, batch)


def check(bounds: Bounds, factory: Callable[..., Any] = Scheduler, max_states: int | None = None,
          hidden: Hidden | None = None, workers: int = 1, design: Design | None = None) -> LeanResult:
    """Every state reachable under `bounds`, breadth first, judged per transition; see the module doc.
    `hidden` is the scheduler's state the key leaves out, as `modelcheck.check` takes it: with no
    revisit comparison here, a scheduler with hidden state must declare it. With `workers` > 1, forked
    processes rebuild and judge each level's states; this process keeps the table and the paths.
    `design` as for `modelcheck.check` (the paged design's counts of what it met, by `Design.seen`)."""
    began = time.perf_counter()
    explorer = _Explorer(bounds, factory, hidden, compact=True, design=design)  # `stored`: the key's 64-bit hash
    explorer.coverage = None  # not counted here
    seen = FingerprintSet()
    parent, via = array("i", [-1]), array("h", [0])
    seen.add(explorer.stored(explorer.key(explorer.fresh())))
    pool = multiprocessing.get_context("fork").Pool(workers, _start, (explorer,)) if workers > 1 else None
    frontier, depth, transitions = [0], 0, 0
    try:
        while frontier:
            batches = [_tasks(frontier[i:i + BATCH], frontier, i, parent, via) for i in range(0, len(frontier), BATCH)]
            results = pool.imap(_in_worker, batches) if pool else (_expand(explorer, b) for b in batches)
            next_frontier: list[int] = []
            for expanded in results:
                for state, outcomes in expanded:
                    for index, stored, summary in outcomes:
                        transitions += 1
                        if stored is None:
                            path = [explorer.actions[a] for a in [*_path(state, parent, via), index]]
                            ce = explorer.counterexample(path, *summary)
                            return _result(bounds, seen, parent, transitions, depth + 1, began, True, ce)
                        if seen.add(stored):
                            explorer.design.seen(summary)
                            parent.append(state)
                            via.append(index)
                            next_frontier.append(len(parent) - 1)
                if max_states is not None and len(parent) > max_states:
                    return _result(bounds, seen, parent, transitions, depth + 1, began, False, None)
            depth += bool(next_frontier)
            frontier = next_frontier
    finally:
        if pool is not None:
            pool.terminate()
    return _result(bounds, seen, parent, transitions, depth, began, True, None)


def _path(state: int, parent: array, via: array) -> list[int]:
    out = []
    while state > 0:
        out.append(via[state])
        state = parent[state]
    return out[::-1]


def _tasks(batch: list[int], frontier: list[int], begin: int, parent: array, via: array) -> list[Task]:
    tasks = []
    for i, state in enumerate(batch, begin):
        follows = i + 1 < len(frontier) and parent[frontier[i + 1]] == parent[state]
        tasks.append((state, parent[state], array("h", _path(state, parent, via)).tobytes(), follows))
    return tasks


def _result(bounds: Bounds, seen: FingerprintSet, parent: array, transitions: int, depth: int, began: float,
            complete: bool, ce: Counterexample | None) -> LeanResult:
    return LeanResult(bounds, len(parent), transitions, depth, time.perf_counter() - began, complete, ce,
                      seen.nbytes, len(parent) * (parent.itemsize + 2))
