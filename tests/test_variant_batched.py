"""The variants in the reference's incremental form (variants.batched) plan, emit and refuse exactly
what their `Stepwise` renderings do, step by step, on random workloads with budget changes and
priorities; so each keeps its contract wherever the other is checked (and the monitor checks both)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from stallfree.spec import play
from stallfree.spec.variants.aligned import contract as aligned_contract
from stallfree.spec.variants.budget_change import BUDGET_CONTRACT, ROTATION_CONTRACT
from stallfree.spec.variants.priority import contract as aging_contract
from stallfree.variants.aligned import Aligned, BatchedAligned
from stallfree.variants.batched import BatchedResizable
from stallfree.variants.priority import BatchedPrioritized, Prioritized
from stallfree.variants.rotating import BatchedRotating, Resizable, Rotating

BAD = (0, True, 2.0)


def workload(rng: random.Random) -> tuple[tuple[int, int, int], list[tuple[int, Any]], dict[int, list[Any]]]:
    """A config, a budget schedule (step, value) and adds by step: (rid, prompt_len, max_new, priority)."""
    budget = rng.randint(4, 24)
    config = (budget, rng.randint(1, 8), rng.choice((60, 200, 1000)))
    budgets = sorted((rng.randint(0, 40), rng.choice((1, 2, 3, rng.randint(4, 24), rng.choice(BAD))))
                     for _ in range(rng.randint(0, 4)))
    adds: dict[int, list[Any]] = {}
    for rid in range(rng.randint(1, 14)):
        step = rng.randint(0, 30)
        priority = rng.choice((0, 1, 2, 3, 3, -1))
        adds.setdefault(step, []).append((rid if rng.random() > 0.05 else 0, rng.randint(1, 60), rng.randint(1, 12),
                                          priority))
    return config, budgets, adds


def call(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except (ValueError, TypeError) as error:
        return "refused", type(error).__name__


def ended(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """`call`, with complete()'s refusal of a bad stop (ProtocolError) among the refusals."""
    try:
        return call(fn, *args)
    except RuntimeError as error:
        return "refused", type(error).__name__


def lifecycle(rng: random.Random, a: Any, z: Any, plan_a: Any, plan_z: Any, num_rids: int) -> tuple[Any, Any]:
    """Now and then a cancel while the plan is pending, and a stop of a rid, which both renderings
    must accept or refuse alike; then the step completes on both (without the stop if it was refused)."""
    if rng.random() < 0.15:
        rid = rng.randrange(num_rids + 1)
        assert call(a.cancel, rid) == call(z.cancel, rid)
    planned = [rid for rid, _ in plan_a]  # a decode or a completing chunk: a stop it must take
    stopped = [rng.choice(planned) if planned and rng.random() < 0.7 else rng.randrange(num_rids + 1)] \
        if rng.random() < 0.3 else []
    got_a, got_z = ended(a.complete, plan_a, stopped), ended(z.complete, plan_z, stopped)
    assert got_a == got_z
    if got_a[0] == "refused":
        got_a, got_z = ended(a.complete, plan_a), ended(z.complete, plan_z)
    return list(got_a[1]), list(got_z[1])


def lockstep(make_a: Callable[..., Any], make_b: Callable[..., Any], seed: int, budgets_on: bool,
             priorities_on: bool, ends: bool = False) -> int:
    rng = random.Random(seed)
    (b, s, k), budgets, adds = workload(rng)
    if b < 16 and make_a is Aligned:
        b = 16
    a, z = make_a(b, s, k), make_b(b, s, k)
    steps = 0
    for step in range(400):
        for at, value in budgets if budgets_on else ():
            if at == step:
                assert call(a.set_budget, value) == call(z.set_budget, value)
        for rid, prompt_len, max_new, priority in adds.get(step, ()):
            extra = (priority,) if priorities_on else ()
            assert call(a.add, rid, prompt_len, max_new, *extra) == call(z.add, rid, prompt_len, max_new, *extra)
        if ends and rng.random() < 0.1:
            rid = rng.randrange(16)
            assert call(a.cancel, rid) == call(z.cancel, rid), (seed, step, rid)
        plan_a, plan_z = a.schedule(), z.schedule()
        assert list(plan_a) == list(plan_z), (seed, step)
        if ends:
            emitted_a, emitted_z = lifecycle(rng, a, z, plan_a, plan_z, 16)
        else:
            emitted_a, emitted_z = list(a.complete(plan_a)), list(z.complete(plan_z))
        assert emitted_a == emitted_z, (seed, step)
        assert a.free_kv == z.free_kv
        steps += bool(plan_a)
    return steps


@pytest.mark.parametrize("readable, batched, budgets, priorities", [
    (Aligned, BatchedAligned, False, False),
    (Resizable, BatchedResizable, True, False),
    (Rotating, BatchedRotating, True, False),
    (Prioritized, BatchedPrioritized, False, True),
], ids=["aligned", "resizable", "rotating", "aging"])
def test_batched_variant_plans_what_its_stepwise_rendering_plans(readable: type, batched: type, budgets: bool,
                                                                 priorities: bool) -> None:
    busy = sum(lockstep(readable, batched, seed, budgets, priorities) for seed in range(80))
    assert busy > 1000


@pytest.mark.parametrize("readable, batched, budgets, priorities", [
    (Aligned, BatchedAligned, False, False),
    (Resizable, BatchedResizable, True, False),
    (Rotating, BatchedRotating, True, False),
    (Prioritized, BatchedPrioritized, False, True),
], ids=["aligned", "resizable", "rotating", "aging"])
def test_batched_variant_stops_and_cancels_what_its_stepwise_rendering_does(
        readable: type, batched: type, budgets: bool, priorities: bool) -> None:
    """CANCEL, TOKENS (a stop only on an emitted token), KV: cancels between steps and while a plan is
    pending, stops of any rid, accepted or refused alike, with the same plans and tokens after."""
    busy = sum(lockstep(readable, batched, seed, budgets, priorities, ends=True) for seed in range(80))
    assert busy > 1000


def test_batched_variants_keep_their_contracts_under_the_monitor() -> None:
    from stallfree.spec import Arrival, Config, Workload
    from stallfree.spec.workload import BudgetChange

    drop = Workload(Config(4, 4, 200), tuple(Arrival(i, 2, 12, 0) for i in range(4)), (BudgetChange(2, 1),))
    play(drop, BatchedRotating, contract=ROTATION_CONTRACT)
    play(drop, BatchedResizable, contract=BUDGET_CONTRACT)
    long = Workload(Config(40, 4, 500), (Arrival(0, 8, 6, 0), Arrival(1, 90, 3, 1), Arrival(2, 20, 2, 2)))
    play(long, BatchedAligned, contract=aligned_contract(16))
    stream = Workload(Config(8, 1, 256), (Arrival(0, 4, 8, 0, 0), Arrival(1, 4, 2, 0, 0),
                                          *(Arrival(2 + i, 4, 2, 1 + 2 * i, 3) for i in range(20))))
    play(stream, BatchedPrioritized, contract=aging_contract())
