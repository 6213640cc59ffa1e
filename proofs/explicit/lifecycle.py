"""The environment's stop and cancel actions, for a model check with `Bounds.lifecycle`.

Beyond adds and plain steps, from every state the environment may:

- run a step in which any non-empty subset of the requests due a token stop on it (`Stop(mask)`:
  bit i stops the i-th due request, in plan order): every emitted token may be a stop;
- cancel any waiting or running request between steps (`CancelNow(j)`: the j-th of the waiting
  requests, then the running ones, in the shadow's order), or while a step's plan is pending
  (`CancelPending(j)`, the j-th before the plan);
- offer calls that must be refused: a cancel of a rid never added (`CancelUnknown`), and a stop of
  a rid that emits nothing in the step (`BadStop`, then the step completes with no stop).

Actions whose index names no request in the state are not enabled (`Disabled`). Every action goes
through the monitor, so the rules judge it as they judge every other check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from stallfree.spec import Arrival, Cancel, Config, Monitor, Workload
from stallfree.spec.reservation.shadow import Track

NEVER_ADDED = -1  # a rid no add() ever gets (adds take 0, 1, 2...)


class Disabled(Exception):
    """The action names no request of this state."""


@dataclass(frozen=True, slots=True)
class Stop:
    mask: int


@dataclass(frozen=True, slots=True)
class CancelNow:
    index: int


@dataclass(frozen=True, slots=True)
class CancelPending:
    index: int


@dataclass(frozen=True, slots=True)
class CancelUnknown:
    pass


@dataclass(frozen=True, slots=True)
class BadStop:
    pass


LifecycleAction = Stop | CancelNow | CancelPending | CancelUnknown | BadStop
STEPS = (Stop, CancelPending, BadStop)  # the actions that run a step


def actions(max_seqs: int, num_requests: int) -> tuple[LifecycleAction, ...]:
    """Every lifecycle action at these bounds: due requests are running ones, so at most S. The stops
    come in ascending masks: once one names more requests than are due, every later one does too (the
    model checker skips them, `modelcheck`)."""
    out: list[LifecycleAction] = [Stop(mask) for mask in range(1, 2 ** max_seqs)]
    out += [CancelNow(j) for j in range(num_requests)]
    out += [CancelPending(j) for j in range(num_requests)]
    out += [CancelUnknown(), BadStop()]
    return tuple(out)


def live(monitor: Monitor) -> list[Track]:
    shadow = monitor.shadow
    return [*shadow.waiting, *shadow.running.values()]


def apply(monitor: Monitor, action: LifecycleAction) -> None:
    """Run `action` on `monitor` (and its scheduler); raise Disabled if it names no request."""
    if isinstance(action, Stop):
        monitor.plan()
        due = monitor.due()
        if action.mask >= 1 << len(due):
            raise Disabled
        monitor.complete([rid for i, rid in enumerate(due) if action.mask >> i & 1])
    elif isinstance(action, CancelNow):
        tracks = live(monitor)
        if action.index >= len(tracks):
            raise Disabled
        monitor.cancel(tracks[action.index].rid)
    elif isinstance(action, CancelPending):
        tracks = live(monitor)
        if action.index >= len(tracks):
            raise Disabled
        monitor.plan()
        monitor.cancel(tracks[action.index].rid)
        monitor.complete()
    elif isinstance(action, CancelUnknown):
        monitor.cancel(NEVER_ADDED)
    else:
        monitor.plan()
        due = set(monitor.due())
        others = [t.rid for t in live(monitor) if t.rid not in due]
        monitor.refuse_stop([others[0] if others else NEVER_ADDED])
        monitor.complete()


def record(monitor: Monitor, action: LifecycleAction, stop_after: dict[int, int], cancels: list[Cancel]) -> None:
    """Run lifecycle `action` on `monitor`, writing what it does as a workload says it: each stop as
    its request's `stop_after`, each cancel with its step (a BadStop has no workload form: the step
    runs with no stop, as `play` runs it)."""
    step = monitor.shadow.step
    if isinstance(action, Stop):
        monitor.plan()
        due = monitor.due()
        stopped = [rid for i, rid in enumerate(due) if action.mask >> i & 1]
        for rid in stopped:
            stop_after[rid] = monitor.shadow.tracks[rid].num_emitted + 1
        monitor.complete(stopped)
    elif isinstance(action, CancelNow | CancelPending):
        rid = live(monitor)[action.index].rid
        cancels.append(Cancel(rid, step, isinstance(action, CancelPending)))
        apply(monitor, action)
    elif isinstance(action, CancelUnknown):
        cancels.append(Cancel(NEVER_ADDED, step))
        apply(monitor, action)
    else:
        monitor.step()


def workload_of(config: Config, path: list[object], factory: Callable[..., Any]) -> tuple[Workload, int]:
    """The workload that takes a fresh scheduler along `path` (adds as arrivals, stops as each
    request's `stop_after`, cancels with their step), read off a replay of the path under a monitor
    that checks no rule (the scheduler may break one on the way: the replay stops there; `record`).
    `play` runs no step once nothing waits or runs, so where the path's last step starts from such a
    state (a scheduler planning a request the contract says has ended), a one-token request arrives
    just before it, to keep the replay stepping."""
    monitor = Monitor(factory(token_budget=config.token_budget, max_seqs=config.max_seqs,
                              kv_tokens=config.kv_tokens), config, rules=())
    arrivals: list[Arrival] = []
    stop_after: dict[int, int] = {}
    cancels: list[Cancel] = []
    idle_step: int | None = None  # the step of the last step action, if it started idle
    try:
        for action in path:
            step = monitor.shadow.step
            runs_step = action is None or isinstance(action, STEPS)
            idle_step = step if runs_step and monitor.is_idle else None if runs_step else idle_step
            if action is None:
                monitor.step()
            elif isinstance(action, tuple):
                arrivals.append(Arrival(len(arrivals), action[0], action[1], step))
                monitor.add(len(arrivals) - 1, action[0], action[1])
            else:
                record(monitor, action, stop_after, cancels)  # type: ignore[arg-type]
    except Exception:  # the broken step itself: the workload up to it is what replays it
        pass
    arrivals = [replace(a, stop_after=stop_after.get(a.rid)) for a in arrivals]
    if idle_step is not None:
        arrivals.append(Arrival(len(arrivals), 1, 1, idle_step))
    return Workload(config, tuple(arrivals), cancels=tuple(cancels)), monitor.shadow.step
