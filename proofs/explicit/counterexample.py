"""A counterexample: the path to a broken rule, as a workload anyone can replay with `stallfree trace`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stallfree.spec import Arrival, Config, Monitor, RuleViolation, Workload, play

Action = Any  # (prompt_len, max_new): the environment adds it; None: one step runs; or a lifecycle action


@dataclass(frozen=True, slots=True)
class Counterexample:
    rule: str  # the rule ID broken
    message: str  # what happened, as the checker saw it
    workload: Workload  # adds and their steps, up to the breaking action
    num_steps: int  # steps on the path
    replayed: str | None = None  # what `play` reports on the workload: the independent confirmation
    trace: tuple[str, ...] = ()  # the behaviour state by state, as `trace_of` prints it

    def describe(self) -> str:
        lines = [f"{self.rule} broken after {self.num_steps} step(s): {self.message}"]
        if self.replayed is not None:
            lines.append(f"replayed under the monitor: {self.replayed}")
        lines += self.trace
        lines.append(f"workload (replay it: stallfree trace --workload FILE --scheduler MODULE:FACTORY): "
                     f"{self.workload.dumps()}")
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


def trace_of(workload: Workload, factory: Callable[..., Any], num_steps: int,
             rules: Sequence[str] | None = None) -> tuple[str, ...]:
    """The behaviour of `factory` on `workload`, state by state, as TLC prints an error trace: before
    each step the waiting requests (rid: prompt/max_new) and the running ones (rid: prefilled of
    prompt, emitted of max_new), then the plan and what it emitted; the rule the monitor reports
    ends it. `rules` (default all) are those the monitor judges: none, to show a whole behaviour."""
    cfg = workload.config
    monitor = Monitor(factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens), cfg,
                      rules)
    lines = [f"trace ({cfg.token_budget} budget, {cfg.max_seqs} slots, {cfg.kv_tokens} KV):"]
    arrivals = sorted(workload.requests, key=lambda a: a.arrival_step)
    for step in range(num_steps + 1):
        try:
            for a in [a for a in arrivals if a.arrival_step == step]:
                accepted = monitor.add(a.rid, a.prompt_len, a.max_new)
                lines.append(f"  add rid {a.rid} ({a.prompt_len}/{a.max_new}){'' if accepted else ': refused'}")
            if step == num_steps:
                break
            s = monitor.shadow
            waiting = ", ".join(f"{t.rid}: {t.request.prompt_len}/{t.request.max_new}" for t in s.waiting) or "-"
            running = ", ".join(f"{t.rid}: {t.num_prefilled}/{t.request.prompt_len} {t.num_emitted}/"
                                f"{t.request.max_new}" for t in s.running.values()) or "-"
            lines.append(f"  state {step}: waiting [{waiting}]; running [{running}]; free KV {s.free_kv}")
            facts = monitor.step()
            plan = ", ".join(f"{rid}:{n}" for rid, n in facts.plan) or "empty"
            lines.append(f"  step {step}: plan [{plan}]; emitted {sorted(facts.emitted)}")
        except RuleViolation as violation:
            lines.append(f"  step {step}: {violation}")
            break
        except Exception as error:  # a scheduler that crashes: shown, not raised
            lines.append(f"  step {step}: {type(error).__name__}: {error}")
            break
    return tuple(lines)


def build(
    config: Config, path: Sequence[Action], rule: str, message: str, factory: Callable[..., Any],
    trace_rules: Sequence[str] | None = None,
) -> Counterexample:
    if all(action is None or isinstance(action, tuple) for action in path):
        workload, num_steps = workload_of(config, path)
    else:
        from .lifecycle import workload_of as lifecycle_workload  # stops and cancels: read off a replay

        workload, num_steps = lifecycle_workload(config, list(path), factory)
    return Counterexample(rule, message, workload, num_steps, replay(workload, factory),
                          trace_of(workload, factory, num_steps, trace_rules))
