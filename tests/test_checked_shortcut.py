"""Checked simulation with the shortcut for steps of decodes alone (sim/cleansteps.py) gives exactly the
verdicts and figures of the monitor judging every step: on the simulate workloads, on the faults, and on
faults that break a rule only on a step the shortcut would take (its negative controls)."""

from __future__ import annotations

from typing import Any

import pytest

from stallfree.costs import Deployment, Roofline, gpu, model
from stallfree.faults import FAULTS
from stallfree.reference import Scheduler
from stallfree.sim import checked
from stallfree.sim.policies import factory
from stallfree.sim.simulator import simulate
from stallfree.sim.trace import load
from stallfree.spec import Config, Entry, Monitor, Plan, RuleViolation

DEPLOYMENT = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8")
FULL = Roofline(DEPLOYMENT, "full")
SERVING = Config(token_budget=2048, max_seqs=256, kv_tokens=DEPLOYMENT.kv_tokens)
SMALL = Config(token_budget=64, max_seqs=4, kv_tokens=3000)


def outcome(shortcut: bool, monkeypatch: pytest.MonkeyPatch, trace: str, requests: int, scheduler: Any,
            config: Config) -> tuple[Any, ...]:
    """The figures of a checked run, or its verdict (rule, step, message); and the steps the shortcut took (the
    completions `Calls.complete` judged without the monitor's `complete` or `completed`)."""
    counts = {"taken": 0, "monitor": 0}
    calls = checked.Calls  # the module's, planted or not
    complete, judged_complete, completed = calls.complete, Monitor.complete, Monitor.completed

    def given(self: Any, plan: Any, stopped: Any = ()) -> Any:
        before = counts["monitor"]
        emitted = complete(self, plan, stopped)
        counts["taken"] += counts["monitor"] == before
        return emitted

    def by_monitor(judge: Any) -> Any:
        def counted(self: Monitor, *args: Any) -> Any:
            counts["monitor"] += 1
            return judge(self, *args)
        return counted

    with monkeypatch.context() as patch:
        patch.setattr(calls, "complete", given)
        patch.setattr(Monitor, "complete", by_monitor(judged_complete))
        patch.setattr(Monitor, "completed", by_monitor(completed))
        if not shortcut:
            patch.setattr(checked, "usable", lambda monitor: False)
        try:
            r = simulate(load(trace).head(requests), scheduler, config, FULL, "reference", check=True)
        except RuleViolation as error:
            return ("broken", error.rule, error.step, str(error)), counts["taken"]
    streams = [(s.request, s.num_emitted, s.first_token, s.last_token, s.max_gap) for s in r.streams]
    return ("kept", r.step_tokens, streams, r.clock, r.busy_seconds, r.num_finished), counts["taken"]


@pytest.mark.parametrize("trace", ["conv", "code"])
def test_the_simulate_workloads_read_the_same(trace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, taken = outcome(True, monkeypatch, trace, 400, factory("reference"), SERVING)
    slow, none = outcome(False, monkeypatch, trace, 400, factory("reference"), SERVING)
    assert fast == slow
    assert fast[0] == "kept"
    assert taken > len(fast[1]) // 2  # a count of steps the shortcut took (most; without it none), no clock
    assert none == 0


CAUGHT = {"BUDGET", "ONE-ENTRY", "KV", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "FCFS", "DECODE-FIRST",
          "PARTIAL-NEXT", "PROGRESS"}  # the faults this small run catches (the rest need cancels or other configs)


@pytest.mark.parametrize("rule", sorted(FAULTS))
def test_each_fault_is_caught_at_the_same_step_with_the_same_message(rule: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fast, _ = outcome(True, monkeypatch, "code", 60, FAULTS[rule], SMALL)
    slow, _ = outcome(False, monkeypatch, "code", 60, FAULTS[rule], SMALL)
    assert fast == slow
    if rule in CAUGHT:
        assert fast[:2] == ("broken", rule)


class Silent(Scheduler):
    """Drops the first ready request's token on step 40, a step of decodes alone (TOKENS)."""

    def complete(self, plan: Plan, stopped: Any = ()) -> tuple[int, ...]:
        emitted = super().complete(plan, stopped)
        return emitted[1:] if plan.step == 40 else emitted


class Doubled(Scheduler):
    """Gives the first decode 2 tokens on step 40 (TOKENS: a decode with more than one)."""

    def schedule(self) -> Plan:
        plan = super().schedule()
        if plan.step != 40:
            return plan
        first = plan.entries[0]
        return Plan(plan.step, (Entry(first.rid, 2), *plan.entries[1:]))

    def complete(self, plan: Plan, stopped: Any = ()) -> tuple[int, ...]:
        return super().complete(self._step.plan, stopped)  # type: ignore[arg-type]


class Leaky(Scheduler):
    """Shows one KV token more free than it has from step 40 on (KV after the step)."""

    @property
    def free_kv(self) -> int:
        return self._free_kv + (self._step.number > 40)


class Floats(Scheduler):
    """Names a rid as a float on step 40 (PROTOCOL: rid and n must be ints; 1.0 == 1 to a set)."""

    def schedule(self) -> Plan:
        plan = super().schedule()
        if plan.step != 40:
            return plan
        first = plan.entries[0]
        return Plan(plan.step, ((float(first.rid), 1), *plan.entries[1:]))  # type: ignore[arg-type]

    def complete(self, plan: Plan, stopped: Any = ()) -> tuple[int, ...]:
        return super().complete(self._step.plan, stopped)  # type: ignore[arg-type]


@pytest.mark.parametrize(("fault", "rule"), [(Silent, "TOKENS"), (Doubled, "TOKENS"), (Leaky, "KV"),
                                             (Floats, "PROTOCOL")])
def test_a_break_on_a_decode_step_is_caught_as_without_the_shortcut(fault: Any, rule: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative controls: each breaks a rule on step 40, after steps the shortcut took."""
    fast, taken = outcome(True, monkeypatch, "conv", 60, fault, SERVING)
    slow, _ = outcome(False, monkeypatch, "conv", 60, fault, SERVING)
    assert fast == slow
    assert fast[:3] == ("broken", rule, 40)
    assert taken > 0


class Repeated(Scheduler):
    """Breaks complete()'s emitted rids (`broken`) on the first step from 40 whose plan is the last plan's entries
    again, each the same object, and of more than one decode: the step `Decodes.planned` reads first (the same
    plan of decodes alone again)."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.last: tuple[Entry, ...] = ()
        self.again = self.fired = False

    def schedule(self) -> Plan:
        plan = super().schedule()
        entries, last = plan.entries, self.last
        self.again = not self.fired and plan.step >= 40 and len(entries) == len(last) > 1 and \
            all(a is b for a, b in zip(entries, last, strict=True))
        self.last = entries
        return plan

    def complete(self, plan: Plan, stopped: Any = ()) -> tuple[int, ...]:
        emitted = super().complete(plan, stopped)
        if not self.again:
            return emitted
        self.fired = True
        return self.broken(emitted)

    def broken(self, emitted: tuple[int, ...]) -> tuple[Any, ...]:
        raise NotImplementedError


class FloatEmitted(Repeated):
    """The first ready rid emitted as a float (PROTOCOL; 1.0 == 1 to a set)."""

    def broken(self, emitted: tuple[int, ...]) -> tuple[Any, ...]:
        return (float(emitted[0]), *emitted[1:])


class TwiceEmitted(Repeated):
    """The first ready rid emitted twice, the second silent: as many rids as ready ones (TOKENS)."""

    def broken(self, emitted: tuple[int, ...]) -> tuple[Any, ...]:
        return (emitted[0], emitted[0], *emitted[2:])


class LeakyAgain(Repeated):
    """Shows one KV token more free than it has on that step (KV after the step)."""

    @property
    def free_kv(self) -> int:
        return self._free_kv + self.again

    def broken(self, emitted: tuple[int, ...]) -> tuple[Any, ...]:
        return emitted


@pytest.mark.parametrize(("fault", "rule"), [(FloatEmitted, "PROTOCOL"), (TwiceEmitted, "TOKENS"),
                                             (LeakyAgain, "KV")])
def test_a_break_on_the_same_plan_again_is_caught_as_without_the_shortcut(fault: Any, rule: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative controls of the judgement of a repeated plan of decodes alone (`Decodes.planned`, then `done`): each
    breaks a rule on a step it judges (the emitted rids by identity with the plan's, the shown free KV against the
    shadow's)."""
    fast, taken = outcome(True, monkeypatch, "conv", 120, fault, SERVING)
    slow, _ = outcome(False, monkeypatch, "conv", 120, fault, SERVING)
    assert fast == slow
    assert fast[:2] == ("broken", rule)
    assert fast[2] >= 40
    assert taken > 0


@pytest.mark.parametrize("trace", ["conv", "code"])
def test_the_monitor_read_after_a_run_counts_every_step(trace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcut leaves the monitor's step counts behind until they are read; `Checked.monitor` reads them
    moved up to the steps taken, as the monitor judging every step has them. The control reads the counts
    from the monitor itself, past the property: behind."""
    made: list[checked.Checked] = []
    init = checked.Checked.__init__

    def kept(self: checked.Checked, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    def counts(monitor: Any) -> tuple[int, int, int]:
        return monitor.num_steps, monitor.num_busy_steps, monitor.shadow.step

    seen = {}
    for shortcut in (True, False):
        with monkeypatch.context() as patch:
            patch.setattr(checked.Checked, "__init__", kept)
            if not shortcut:
                patch.setattr(checked, "usable", lambda monitor: False)
            r = simulate(load(trace).head(30), factory("reference"), SERVING, FULL, "reference", check=True)
        run = made.pop()
        if shortcut:
            behind = counts(run._monitor)  # the control: the counts as the shortcut left them
        seen[shortcut] = counts(run.monitor)
    assert seen[True] == seen[False] and seen[True][0] == len(r.step_tokens)
    assert behind[0] < seen[True][0]
