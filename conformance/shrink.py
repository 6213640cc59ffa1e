"""Shrinking a counterexample to a minimal workload, after Hypothesis has shrunk its choices.

Greedy and local, on the workload itself: drop requests (halves, then one at a time), drop cancels
and stops (one at a time), lower each
number (prompt_len, max_new, arrival_step, then budget, slots, KV) to the smallest value that still
breaks the same rule, then number the rids 0, 1, 2... A result reached without hitting a limit is
1-minimal: dropping any one request, or lowering any one number by one, no longer shows the rule.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from stallfree.spec import Workload

from .outcome import Outcome

MAX_RUNS = 3000
MAX_SECONDS = 60.0
REQUEST_FIELDS = ("prompt_len", "max_new", "arrival_step")
CONFIG_FIELDS = ("token_budget", "max_seqs", "kv_tokens")
FIELD_MINIMUM = {"prompt_len": 1, "max_new": 1, "arrival_step": 0, "token_budget": 1, "max_seqs": 1, "kv_tokens": 1}


@dataclass(frozen=True, slots=True)
class Shrunk:
    workload: Workload
    outcome: Outcome
    runs: int
    minimal: bool  # True: a fixpoint of every move, reached within the limits


class Shrinker:
    def __init__(self, run: Callable[[Workload], Outcome], rule: str,
                 max_runs: int = MAX_RUNS, max_seconds: float = MAX_SECONDS) -> None:
        self.run_workload = run
        self.rule = rule
        self.max_runs = max_runs
        self.deadline = time.monotonic() + max_seconds
        self.runs = 0

    @property
    def out_of_time(self) -> bool:
        return self.runs >= self.max_runs or time.monotonic() >= self.deadline

    def breaks(self, workload: Workload) -> Outcome | None:
        """The outcome if `workload` still breaks the rule, else None."""
        self.runs += 1
        outcome = self.run_workload(workload)
        return outcome if outcome.rule == self.rule else None

    def shrink(self, workload: Workload, outcome: Outcome) -> Shrunk:
        changed = True
        while changed and not self.out_of_time:
            changed = False
            for candidates in (self._fewer_requests, self._fewer_ends, self._lower_numbers, self._renumber):
                for candidate in candidates(workload):
                    if self.out_of_time:
                        break
                    found = self.breaks(candidate)
                    if found is not None:
                        workload, outcome, changed = candidate, found, True
                        break
                if changed:
                    break
        return Shrunk(workload, outcome, self.runs, minimal=not changed)

    # -- moves: each yields smaller workloads, most ambitious first --------------------------------------

    def _fewer_requests(self, w: Workload) -> Iterator[Workload]:
        requests = w.requests
        size = len(requests) // 2
        while size >= 1:
            for start in range(0, len(requests), size):
                yield replace(w, requests=requests[:start] + requests[start + size:])
            size //= 2

    def _fewer_ends(self, w: Workload) -> Iterator[Workload]:
        """Without one cancel, or with one request running to max_new instead of stopping."""
        for i in range(len(w.cancels)):
            yield replace(w, cancels=w.cancels[:i] + w.cancels[i + 1:])
        for i, a in enumerate(w.requests):
            if a.stop_after is not None:
                yield replace(w, requests=(*w.requests[:i], replace(a, stop_after=None), *w.requests[i + 1:]))

    def _lower_numbers(self, w: Workload) -> Iterator[Workload]:
        for i, a in enumerate(w.requests):
            for name in REQUEST_FIELDS:
                for value in lower(getattr(a, name), FIELD_MINIMUM[name]):
                    yield replace(w, requests=(*w.requests[:i], replace(a, **{name: value}), *w.requests[i + 1:]))
        for name in CONFIG_FIELDS:
            for value in lower(getattr(w.config, name), FIELD_MINIMUM[name]):
                yield replace(w, config=replace(w.config, **{name: value}))

    def _renumber(self, w: Workload) -> Iterator[Workload]:
        """The rids as 0, 1, 2... in order of first appearance (a taken rid stays taken)."""
        numbers: dict[int, int] = {}
        for a in w.requests:
            if type(a.rid) is int and a.rid >= 0 and a.rid not in numbers:
                numbers[a.rid] = len(numbers)
        if all(old == new for old, new in numbers.items()):
            return
        yield replace(w, requests=tuple(
            replace(a, rid=numbers[a.rid]) if a.rid in numbers else a for a in w.requests
        ), cancels=tuple(replace(c, rid=numbers[c.rid]) if c.rid in numbers else c for c in w.cancels))


def lower(value: object, minimum: int) -> Iterator[int]:
    """Values below an int `value`, down to `minimum`: the minimum first, then ever closer to `value`
    (halving the distance), ending with value - 1. Nothing for values that are not valid ints."""
    if type(value) is not int or value <= minimum:
        return
    yield minimum
    distance = (value - minimum) // 2
    while distance >= 1:
        if value - distance != minimum:
            yield value - distance
        distance //= 2
