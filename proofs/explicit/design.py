"""What the explicit-state search needs of a memory design, and the reservation design's answers.

The search (`modelcheck`) is one breadth-first loop; what differs between designs is here: the
monitor that judges each transition, the environment's actions and when each is enabled, the state's
key, the invariants checked in every state, each new state's summary (idle, remaining work, and what
the design counts), how a path becomes a counterexample, and which rule a state that drains too
slowly breaks. `Reservation` is the reference's design (`stallfree.spec.Monitor`); the paged design's
answers are in `paged`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from stallfree.spec import Config, Monitor, invariant, registry
from stallfree.spec.contract import Contract
from stallfree.spec.reservation import invariants
from stallfree.spec.reservation.facts import StepFacts
from stallfree.spec.shown import shown

from . import lifecycle
from .bounds import Bounds
from .counterexample import Action, Counterexample, build
from .coverage import Coverage
from .graph import STEP
from .snapshot import Hidden, encode, is_idle, remaining_work, symmetric

Summary = tuple[Any, ...]  # a new state's (idle, remaining work, *what the design counts)


def act(monitor: Monitor, action: Action) -> StepFacts | None:
    """Apply one action to `monitor` (and the scheduler it drives): a step, an add, or a stop or
    cancel action (`lifecycle`; raises lifecycle.Disabled where it names no request). Returns a plain
    step's facts (None for any other action)."""
    if action is None:
        return monitor.step()
    if isinstance(action, tuple):
        monitor.add(monitor.num_adds, action[0], action[1])
    else:
        lifecycle.apply(monitor, action)
    return None


def _names_live(action: Action, num_live: int) -> bool:
    """False for a cancel of a live request (`lifecycle.CancelNow`, `CancelPending`) that a state with
    `num_live` live requests does not have, and for a stop of more requests than it has (`Stop`: the
    requests due a token are live ones); True for every other action."""
    if isinstance(action, lifecycle.CancelNow | lifecycle.CancelPending):
        return action.index < num_live
    if isinstance(action, lifecycle.Stop):
        return action.mask < 1 << num_live
    return True


class Design(ABC):
    """One memory design's side of a model check, built for one check's bounds."""

    actions: tuple[Action, ...]  # the environment's actions, by index; index STEP (0) is a plain step
    step_actions: frozenset[int]  # the indexes whose action runs a step (liveness counts them)
    symmetric: Callable[[Any], Any] | None = None  # a key's representative under symmetry, if the design has one

    @abstractmethod
    def monitor(self, scheduler: Any, config: Config, rules: Iterable[str] | None) -> Any:
        """The monitor that drives `scheduler` and judges every transition."""

    @abstractmethod
    def enabled(self, monitor: Any) -> Sequence[int]:
        """The action indexes to try from this state (an action may still raise `lifecycle.Disabled`)."""

    @abstractmethod
    def act(self, monitor: Any, action: Action) -> Any:
        """Apply `action` to `monitor` and the scheduler it drives (returns a plain step's facts, or None)."""

    def coverage(self) -> Coverage | None:
        """A new count of the cases each claim is about (`coverage`), or None where the design has none."""
        return None

    @abstractmethod
    def key(self, monitor: Any, hidden: Hidden | None) -> Hashable:
        """The state's canonical key (with the scheduler's `hidden` state where given)."""

    @abstractmethod
    def summary(self, monitor: Any, key: Any) -> Summary:
        """A state's (idle, remaining work, *what `seen` counts): plain values a worker sends back."""

    @abstractmethod
    def seen(self, summary: Summary) -> None:
        """A new state's summary, for the figures the design keeps of the states explored."""

    @abstractmethod
    def broken(self, monitor: Any) -> tuple[str, str] | None:
        """The first state invariant the state breaks, as (ID, what happened), or None."""

    @abstractmethod
    def counterexample(self, config: Config, path: Sequence[Action], rule: str, message: str,
                       factory: Callable[..., Any]) -> Counterexample:
        """The path (actions from the initial state) to a broken `rule`, written for replay."""

    @abstractmethod
    def over_rank(self, steps: int, work: int) -> tuple[str, str]:
        """(rule, what happened) for a state that needs `steps` steps to drain its `work` (its summary's)."""


class Reservation(Design):
    """The reservation design: the spec's `Monitor`, adds of the bounds' universe (and the lifecycle
    actions where the bounds have them), the key of `snapshot`, the state invariants of `spec`. With a
    `contract` (one whose monitor keeps the reservation design's shadow: a variant's, or a design of
    that memory registered from outside), the monitor is the contract's."""

    symmetric = staticmethod(symmetric)  # merges states that differ only in their ready requests' order

    def __init__(self, bounds: Bounds, contract: Contract = registry.RESERVATION) -> None:
        self.bounds = bounds
        self.watch = contract.watch
        more = lifecycle.actions(bounds.max_seqs, bounds.num_requests) if bounds.lifecycle else ()
        self.actions: tuple[Action, ...] = (None, *bounds.universe(), *more)
        num_adds = len(bounds.universe())  # indexes 1..num_adds are the adds
        steps = {i for i, a in enumerate(self.actions) if isinstance(a, lifecycle.STEPS)}
        self.step_actions = frozenset({STEP} | steps)
        self.every = list(range(len(self.actions)))
        self.no_adds = [i for i in self.every if not 1 <= i <= num_adds]
        # A cancel of the j-th live request is disabled in a state with j or fewer live requests, a stop
        # naming more requests than are live too (the action would raise lifecycle.Disabled): left out
        # before the state is copied for it.
        self.with_live = [([i for i in self.every if _names_live(self.actions[i], live)],
                           [i for i in self.no_adds if _names_live(self.actions[i], live)])
                          for live in range(bounds.num_requests + 1)]

    def monitor(self, scheduler: Any, config: Config, rules: Iterable[str] | None) -> Any:
        return self.watch(scheduler, config, rules)

    def enabled(self, monitor: Any) -> list[int]:
        adds_left = monitor.num_adds < self.bounds.num_requests
        shadow = monitor.shadow
        num_live = len(shadow.waiting) + len(shadow.running)
        if num_live >= len(self.with_live):
            return self.every if adds_left else self.no_adds
        every, no_adds = self.with_live[num_live]
        return every if adds_left else no_adds

    def act(self, monitor: Any, action: Action) -> StepFacts | None:
        return act(monitor, action)

    def coverage(self) -> Coverage:
        return Coverage(self.bounds.config, self.bounds.lifecycle)

    def key(self, monitor: Any, hidden: Hidden | None) -> Hashable:
        return encode(monitor, hidden)

    def summary(self, monitor: Any, key: Any) -> Summary:
        return is_idle(key), remaining_work(key)

    def seen(self, summary: Summary) -> None:
        """Nothing to count beyond idleness and work, which the graph keeps."""

    def broken(self, monitor: Any) -> tuple[str, str] | None:
        return invariant.broken(monitor.shadow, shown(monitor.scheduler), invariants.INVARIANTS)

    def counterexample(self, config: Config, path: Sequence[Action], rule: str, message: str,
                       factory: Callable[..., Any]) -> Counterexample:
        return build(config, path, rule, message, factory)

    def over_rank(self, steps: int, work: int) -> tuple[str, str]:
        return "PROGRESS", f"needs {steps} steps to finish {work} units of work: a step did no work"
