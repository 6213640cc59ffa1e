"""A counterexample: the path to a broken rule, as a workload anyone can replay with `stallfree trace`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stallfree.spec import Arrival, Config, RuleViolation, Workload, play

Action = Any  # (prompt_len, max_new): the environment adds it; None: one step runs; or a lifecycle action


@dataclass(frozen=True, slots=True)
class Counterexample:
    rule: str  # the rule ID broken
    message: str  # what happened, as the checker saw it
    workload: Workload  # adds and their steps, up to the breaking action
    num_steps: int  # steps on the path
    replayed: str | None = None  # what `play` reports on the workload: the independent confirmation

    def describe(self) -> str:
        lines = [f"{self.rule} broken after {self.num_steps} step(s): {self.message}"]
        if self.replayed is not None:
            lines.append(f"replayed under the monitor: {self.replayed}")
        lines.append(f"workload: {self.workload.dumps()}")
        return "\n".join(lines)


def workload_of(config: Config, path: Sequence[Action]) -> tuple[Workload, int]:
    """The workload that takes a fresh scheduler along `path`: add i gets rid i, before the step it
    precedes. Returns it with the number of steps on the path."""
    arrivals: list[Arrival] = []
    num_steps = 0
    for action in path:
        if action is None:
            num_steps += 1
        else:
            arrivals.append(Arrival(len(arrivals), action[0], action[1], num_steps))
    return Workload(config, tuple(arrivals)), num_steps


def replay(workload: Workload, factory: Callable[..., Any]) -> str | None:
    """Play `workload` through a fresh scheduler under the spec's monitor; the violation it reports."""
    try:
        play(workload, factory)
    except RuleViolation as violation:
        return str(violation)
    return None


def build(
    config: Config, path: Sequence[Action], rule: str, message: str, factory: Callable[..., Any]
) -> Counterexample:
    if all(action is None or isinstance(action, tuple) for action in path):
        workload, num_steps = workload_of(config, path)
    else:
        from .lifecycle import workload_of as lifecycle_workload  # stops and cancels: read off a replay

        workload, num_steps = lifecycle_workload(config, list(path), factory)
    return Counterexample(rule, message, workload, num_steps, replay(workload, factory))
