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
from stallfree.sim.cleansteps import Decodes
from stallfree.sim.policies import factory
from stallfree.sim.simulator import simulate
from stallfree.sim.trace import load
from stallfree.spec import Config, Entry, Plan, RuleViolation

DEPLOYMENT = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8")
FULL = Roofline(DEPLOYMENT, "full")
SERVING = Config(token_budget=2048, max_seqs=256, kv_tokens=DEPLOYMENT.kv_tokens)
SMALL = Config(token_budget=64, max_seqs=4, kv_tokens=3000)


def outcome(shortcut: bool, monkeypatch: pytest.MonkeyPatch, trace: str, requests: int, scheduler: Any,
            config: Config) -> tuple[Any, ...]:
    """The figures of a checked run, or its verdict (rule, step, message); and the steps the shortcut took."""
    taken = [0]
    done = Decodes.done

    def counted(self: Decodes, emitted: object, free_kv: object) -> bool:
        took = done(self, emitted, free_kv)
        taken[0] += took
        return took

    with monkeypatch.context() as patch:
        patch.setattr(Decodes, "done", counted)
        if not shortcut:
            patch.setattr(checked, "usable", lambda monitor: False)
        try:
            r = simulate(load(trace).head(requests), scheduler, config, FULL, "reference", check=True)
        except RuleViolation as error:
            return ("broken", error.rule, error.step, str(error)), taken[0]
    streams = [(s.request, s.num_emitted, s.first_token, s.last_token, s.max_gap) for s in r.streams]
    return ("kept", r.step_tokens, streams, r.clock, r.busy_seconds, r.num_finished), taken[0]


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
        return super().complete(self._pending.plan, stopped)  # type: ignore[union-attr]


class Leaky(Scheduler):
    """Shows one KV token more free than it has from step 40 on (KV after the step)."""

    @property
    def free_kv(self) -> int:
        return self._free_kv + (self._num_steps > 40)


class Floats(Scheduler):
    """Names a rid as a float on step 40 (PROTOCOL: rid and n must be ints; 1.0 == 1 to a set)."""

    def schedule(self) -> Plan:
        plan = super().schedule()
        if plan.step != 40:
            return plan
        first = plan.entries[0]
        return Plan(plan.step, ((float(first.rid), 1), *plan.entries[1:]))  # type: ignore[arg-type]

    def complete(self, plan: Plan, stopped: Any = ()) -> tuple[int, ...]:
        return super().complete(self._pending.plan, stopped)  # type: ignore[union-attr]


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
