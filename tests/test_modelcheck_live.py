"""The compact search keeps the live monitor of at most `live` frontier states (`modelcheck.LIVE_STATES`
by default) and rebuilds the others: whatever the cap, it finds the same graph (states, transitions,
depth, longest behaviour, steps to drain, verdict, coverage counts) and the same counterexample for a
broken rule; and it never holds more live states than the cap. The bound's check is shown failing on
a search that ignores the cap."""

from __future__ import annotations

import gc
from dataclasses import replace

import pytest

from stallfree.proofs.explicit import modelcheck
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.collector import young_only
from stallfree.proofs.explicit.modelcheck import CheckResult, _Explorer, _run, check
from stallfree.reference import Scheduler
from stallfree.spec import InvalidField, Monitor

BOUND = "2,3,8,3,3,3"


def figures(result: CheckResult) -> tuple[object, ...]:
    return (result.states, result.transitions, result.depth, result.longest_steps, result.drain_bound,
            result.verdict, repr(result.coverage))


@pytest.mark.parametrize("bounds", [Bounds.parse(BOUND), replace(Bounds.parse("2,2,6,3,2,2"), lifecycle=True)],
                         ids=["plain", "stops,cancels"])
def test_the_graph_is_the_same_whatever_the_live_cap(bounds: Bounds) -> None:
    rebuilt = figures(check(bounds, compact=True, live=0))
    assert figures(check(bounds, compact=True, live=40)) == rebuilt  # live and rebuilt states mixed
    assert figures(check(bounds, compact=True)) == rebuilt
    assert figures(check(bounds)) == rebuilt  # every state live, whole keys


def test_a_broken_rule_has_the_same_counterexample_whatever_the_cap() -> None:
    class Tokens(Scheduler):
        def complete(self, plan, stopped=()):  # type: ignore[no-untyped-def]
            emitted = super().complete(plan, stopped)
            return emitted[1:] if len(emitted) > 1 else emitted  # drops a token: TOKENS

    bounds = Bounds.parse(BOUND)
    one, other = (check(bounds, Tokens, compact=True, live=live) for live in (0, 40))
    assert one.counterexample is not None and other.counterexample is not None
    assert one.counterexample.rule == other.counterexample.rule
    assert repr(one.counterexample) == repr(other.counterexample)


class Counting(_Explorer):
    """Records the most live frontier states held at once: the initial state, then each `kept` returns
    live, less each the search hands back once it has expanded it."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.held = self.most_held = 1  # the initial state is always live

    def hold(self, node: Monitor | None) -> Monitor | None:
        self.held += node is not None
        self.most_held = max(self.most_held, self.held)
        return node

    def kept(self, after: Monitor) -> Monitor | None:
        return self.hold(super().kept(after))

    def released(self, frontier: list[modelcheck.Node], i: int) -> None:
        self.held -= frontier[i][1] is not None
        super().released(frontier, i)


class Careless(Counting):
    """Keeps every new state live, whatever the cap."""

    def kept(self, after: Monitor) -> Monitor | None:
        return self.hold(after)


def most_held(kind: type[Counting], live: int) -> int:
    explorer = kind(Bounds.parse(BOUND), Scheduler, None, compact=True, live=live)
    assert _run(explorer, 1, None, None).holds
    return explorer.most_held


def test_the_frontier_holds_no_more_live_states_than_the_cap() -> None:
    assert 1 < most_held(Counting, 40) <= 40  # the initial state counts against the cap
    assert most_held(Counting, 0) == 1  # the initial state alone: it is always live


def test_the_check_fails_a_search_that_ignores_the_cap() -> None:
    assert most_held(Careless, 40) > 40


def test_a_negative_cap_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidField, match="live must be >= 0, got -1"):
        check(Bounds.parse(BOUND), compact=True, live=-1)


def test_the_search_leaves_the_collector_as_it_found_it() -> None:
    before = gc.get_threshold()
    with young_only():
        assert gc.get_threshold()[2] > before[2]
    assert gc.get_threshold() == before
    check(Bounds.parse("2,2,6,2,3,3"), compact=True)
    assert gc.get_threshold() == before
