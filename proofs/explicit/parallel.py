"""Breadth-first levels expanded by worker processes, for `modelcheck.check(..., workers=N)`.

This process keeps what must be one: the visited set (fingerprints), the graph and the numbering of
states. Each level's frontier is cut into batches of consecutive states; a worker rebuilds each
state of a batch from its path (from the deepest state on it the last rebuild kept, as the
one-process search does for the states it keeps no live copy of; workers keep none), runs every
action under the monitor and sends back plain outcomes: the fingerprint of each successor with its
idleness and remaining work, or the rule an action broke. Outcomes are recorded in frontier order,
so states get the numbers that one process gives them. The revisits compared one step ahead
(`record`) are stepped in the workers once a level is recorded, so a state that behaves otherwise is
reported at the end of its level (its counterexample may then differ from the one-process search's;
the verdict does not).

Workers are forked from this process, so the scheduler factory, hidden-state function, rules and
design need not be picklable; each worker holds its own copy of the explorer.
"""

from __future__ import annotations

import gc
import multiprocessing
from array import array
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .counterexample import Counterexample
    from .modelcheck import Outcome, Progress, _Explorer

BATCH = 512  # states a worker expands per message
IN_FLIGHT = 4  # batches queued per worker, so none waits while this process records

Task = tuple[int, int, bytes, bool]  # state, its parent, its path (action indexes, array "h"), a sibling follows
_explorer: Any = None  # the worker process's copy of the explorer, set once by `_start` when it forks


def _start(explorer: Any) -> None:
    global _explorer
    _explorer = explorer
    if explorer.coverage is not None:
        explorer.coverage.take()  # the counts made before the fork are this process's parent's
    gc.freeze()  # the forked heap is never collected here, so its pages stay shared with this process


def _expand(batch: list[Task]) -> tuple[list[tuple[int, list[Outcome]]], list[int] | None]:
    """Rebuild and expand each state of `batch` (in a worker); with the coverage counts of its transitions."""
    explorer = _explorer
    out = []
    for state, _parent, packed, sibling_follows in batch:
        path = array("h")
        path.frombytes(packed)
        out.append((state, explorer.outcomes(explorer.rebuild(path.tolist(), sibling_follows))))
    return out, None if explorer.coverage is None else explorer.coverage.take()


def search(explorer: _Explorer, workers: int, start: float, max_states: int | None,
           on_progress: Progress | None) -> tuple[Counterexample | None, bool, int]:
    """Breadth first with `workers` processes. Returns (counterexample, explored everything, depth)."""
    node = explorer.root()
    first: list[Any] = []
    counterexample = explorer.expand(0, node, first)  # the initial state is expanded here, live
    if counterexample is not None:
        return counterexample, True, 1
    frontier = [state for state, _ in first]
    depth = 1 if frontier else 0
    with multiprocessing.get_context("fork").Pool(workers, _start, (explorer,)) as pool:
        while frontier:
            next_frontier: list[int] = []
            pending: deque[Any] = deque()
            batches = _batches(explorer, frontier)
            for batch in batches:
                pending.append(pool.apply_async(_expand, (batch,)))
                if len(pending) >= IN_FLIGHT * workers:
                    break
            while pending:
                results, counts = pending.popleft().get()
                if counts is not None:
                    explorer.coverage.merge(counts)
                batch = next(batches, None)
                if batch is not None:
                    pending.append(pool.apply_async(_expand, (batch,)))
                for state, outcomes in results:
                    counterexample = _record(explorer, state, outcomes, next_frontier)
                    if counterexample is not None:
                        pool.terminate()
                        return counterexample, True, depth + 1
                if explorer.past(max_states, on_progress, depth + 1, start):
                    pool.terminate()
                    return None, False, depth + 1
            counterexample = _compare(explorer, pool, workers) if explorer.deferred else None
            if counterexample is not None:
                return counterexample, True, depth + 1
            if next_frontier:
                depth += 1
            frontier = next_frontier
    return None, True, depth


def _batches(explorer: _Explorer, frontier: list[int]) -> Any:
    """The frontier as batches of tasks, in order."""
    parent = explorer.graph.parent
    for begin in range(0, len(frontier), BATCH):
        batch = []
        for i in range(begin, min(begin + BATCH, len(frontier))):
            state = frontier[i]
            sibling_follows = i + 1 < len(frontier) and parent[frontier[i + 1]] == parent[state]
            path = array("h", explorer.graph.path_to(state)).tobytes()
            batch.append((state, parent[state], path, sibling_follows))
        yield batch


def _record(explorer: _Explorer, state: int, outcomes: list[Outcome], frontier: list[int]) -> Counterexample | None:
    for index, stored, summary in outcomes:
        explorer.transitions += 1
        if stored is None:
            return explorer.fail(state, index, *summary)  # (rule, message) of the broken action
        found = explorer.record(state, index, stored, summary, None)
        if not isinstance(found, bool):
            return found
        if found:
            frontier.append(explorer.graph.num_states - 1)
    return None


def _twins(tasks: list[bytes]) -> list[Any]:
    """For each path (a state, then the action that reached a known key), rebuilt: its twin step's
    outcome (`twin_step`), in a worker."""
    explorer = _explorer
    out = []
    for packed in tasks:
        path = array("h")
        path.frombytes(packed)
        out.append(explorer.twin_step(explorer.replay(path.tolist())))
    return out


def _compare(explorer: _Explorer, pool: Any, workers: int) -> Counterexample | None:
    """The revisits this level deferred, stepped in the workers and compared in order (`differs`)."""
    deferred, explorer.deferred = explorer.deferred, []
    paths = [array("h", [*explorer.graph.path_to(state), index]).tobytes() for state, index, _ in deferred]
    size = max(1, len(paths) // (workers * IN_FLIGHT))
    twins = pool.map(_twins, [paths[i:i + size] for i in range(0, len(paths), size)])
    for (state, index, known), twin in zip(deferred, (t for chunk in twins for t in chunk), strict=True):
        differs = explorer.differs(twin, known)
        if differs is not None:
            path = [explorer.actions[s] for s in explorer.graph.path_to(state)] + [explorer.actions[index], None]
            return explorer.counterexample(path, *differs)
    return None
