"""Shrinking a counterexample to a minimal workload, after Hypothesis has shrunk its choices.

Greedy and local, on the workload itself: drop requests (halves, then one at a time), drop cancels
and stops (one at a time), lower each
number (prompt_len, max_new, arrival_step, then budget, slots, KV) to the smallest value that still
breaks the same rule, then number the rids 0, 1, 2... A result reached without hitting a limit is
1-minimal: dropping any one request, or lowering any one number by one, no longer shows the rule.

Every candidate stays in the contract's domain as the original workload drew it: each request that
add() must accept stays one it must accept, each it must refuse stays refused (`verdicts`); a move
that would change one is not tried. Lowering K below an accepted request's reservation would turn the
counterexample into one whose requests add() refuses, and its pasted test would then pass on a
scheduler that still breaks the rule.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from stallfree.spec import Config, Workload
from stallfree.spec.errors import InvalidField
from stallfree.spec.types import Request, admissible

from ..isolation.outcome import Outcome

MAX_RUNS = 3000
MAX_SECONDS = 60.0
REQUEST_FIELDS = ("prompt_len", "max_new", "arrival_step", "priority")  # priority: a variant's; None is left
CONFIG_FIELDS = ("token_budget", "max_seqs", "kv_tokens")
FIELD_MINIMUM = {
    "prompt_len": 1, "max_new": 1, "arrival_step": 0, "priority": 0, "token_budget": 1, "max_seqs": 1, "kv_tokens": 1,
}


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
        domain = verdicts(workload)  # accepted or refused, request by request; every move keeps it
        changed = True
        while changed and not self.out_of_time:
            changed = False
            for candidates in (self._fewer_requests, self._fewer_ends, self._fewer_budget_changes, self._lower_numbers,
                               self._renumber):
                for candidate, kept in candidates(workload, domain):
                    if verdicts(candidate) != kept:
                        continue  # outside the original's domain: not a counterexample of the same kind
                    if self.out_of_time:
                        break
                    found = self.breaks(candidate)
                    if found is not None:
                        workload, outcome, changed, domain = candidate, found, True, kept
                        break
                if changed:
                    break
        return Shrunk(workload, outcome, self.runs, minimal=not changed)

    # -- moves: each yields smaller workloads, most ambitious first, with the domain they must keep --------

    def _fewer_requests(self, w: Workload, domain: list[bool]) -> Iterator[tuple[Workload, list[bool]]]:
        requests = w.requests
        size = len(requests) // 2
        while size >= 1:
            for start in range(0, len(requests), size):
                yield replace(w, requests=requests[:start] + requests[start + size:]), \
                    domain[:start] + domain[start + size:]
            size //= 2

    def _fewer_budget_changes(self, w: Workload, domain: list[bool]) -> Iterator[tuple[Workload, list[bool]]]:
        """A variant's budget schedule: drop changes one at a time, then move each earlier and lower its
        budget (a bad value, not an int >= 1, is kept as it is). The requests, and so the domain, stay."""
        changes = w.budgets
        for i in range(len(changes)):
            yield replace(w, budgets=changes[:i] + changes[i + 1:]), domain
        for i, c in enumerate(changes):
            for step in lower(c.step, 0):
                yield replace(w, budgets=tuple(sorted((*changes[:i], replace(c, step=step), *changes[i + 1:]),
                                                      key=lambda change: change.step))), domain
            for budget in lower(c.token_budget, 1):
                yield replace(w, budgets=(*changes[:i], replace(c, token_budget=budget), *changes[i + 1:])), domain

    def _fewer_ends(self, w: Workload, domain: list[bool]) -> Iterator[tuple[Workload, list[bool]]]:
        """Without one cancel, or with one request running to max_new instead of stopping (the
        requests, and so the domain, stay)."""
        for i in range(len(w.cancels)):
            yield replace(w, cancels=w.cancels[:i] + w.cancels[i + 1:]), domain
        for i, a in enumerate(w.requests):
            if a.stop_after is not None:
                yield replace(w, requests=(*w.requests[:i], replace(a, stop_after=None), *w.requests[i + 1:])), domain

    def _lower_numbers(self, w: Workload, domain: list[bool]) -> Iterator[tuple[Workload, list[bool]]]:
        for i, a in enumerate(w.requests):
            for name in REQUEST_FIELDS:
                for value in lower(getattr(a, name), FIELD_MINIMUM[name]):
                    yield replace(w, requests=(*w.requests[:i], replace(a, **{name: value}), *w.requests[i + 1:])), \
                        domain
        for name in CONFIG_FIELDS:
            for value in lower(getattr(w.config, name), FIELD_MINIMUM[name]):
                yield replace(w, config=replace(w.config, **{name: value})), domain

    def _renumber(self, w: Workload, domain: list[bool]) -> Iterator[tuple[Workload, list[bool]]]:
        """The rids as 0, 1, 2... in order of first appearance (a taken rid stays taken)."""
        numbers: dict[int, int] = {}
        for a in w.requests:
            if type(a.rid) is int and a.rid >= 0 and a.rid not in numbers:
                numbers[a.rid] = len(numbers)
        if all(old == new for old, new in numbers.items()):
            return
        yield replace(w, requests=tuple(
            replace(a, rid=numbers[a.rid]) if a.rid in numbers else a for a in w.requests
        ), cancels=tuple(replace(c, rid=numbers[c.rid]) if c.rid in numbers else c for c in w.cancels)), domain


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


def verdicts(w: Workload) -> list[bool]:
    """For each request of `w` (list position), whether add() must accept it: valid fields, a
    reservation within K, a rid not taken by a request accepted before it (arrival order)."""
    order = sorted(range(len(w.requests)), key=lambda i: w.requests[i].arrival_step)  # stable: list order
    taken: set[object] = set()
    result = [False] * len(w.requests)
    for i in order:
        a = w.requests[i]
        if _admissible(a.rid, a.prompt_len, a.max_new, w.config) and a.rid not in taken:
            taken.add(a.rid)
            result[i] = True
    return result


def _admissible(rid: object, prompt_len: object, max_new: object, config: Config) -> bool:
    try:
        admissible(Request(rid, prompt_len, max_new), config)  # type: ignore[arg-type]
    except (InvalidField, TypeError):
        return False
    return True
