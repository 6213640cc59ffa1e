"""Workloads for the variants' contracts: the kit's workloads, plus a budget schedule where the
contract has set_budget (BUDGET-CHANGE), and a priority per request where it has priorities.

Budget schedules drop the budget below the number of running streams and raise it again, and now and
then set a value set_budget must refuse (0, a bool, a float); priorities are drawn over the whole range,
a low-priority request early and higher ones after it being the case aging is for.

Under a contract with aging (AGING-BOUND), one workload in four is an aging scenario: the kit's short
workloads end long before a request has waited the (P - p) * A steps the bound is about (A = 64 by
default), so a scheduler that never ages would pass them all. In the scenario a long request holds the
memory or the slot, a request of priority p waits behind it, and one of higher priority arrives
(P - p) * A steps or more after it: the later one must not be admitted first.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

from hypothesis import strategies as st

from stallfree.spec import Arrival, Config, Workload
from stallfree.spec.contract import Contract
from stallfree.spec.variants.priority import MAX_PRIORITY, PriorityContract
from stallfree.spec.workload import BudgetChange

from .grid import Shape
from .strategies import _kv_for, integers, workloads

MAX_CHANGES = 4
MAX_BURST = 6
MAX_BURST_NEW = 12
MAX_CHANGE_STEP = 12  # the kit's requests are short: a drop matters while several of them decode
BAD_BUDGETS = (0, -1, True, 2.0)
PRIORITIES = st.one_of(st.integers(0, MAX_PRIORITY), st.sampled_from((-1, MAX_PRIORITY + 1, 1.0)))  # bad ones too


@cache  # built once, as every strategy a workload draws from (see `strategies`)
def budgets(max_budget: int) -> st.SearchStrategy[Any]:
    """Mostly 1 and other small budgets (below the ready count is the case that matters), a rise now
    and then, and a bad value."""
    return st.one_of(st.just(1), st.integers(1, 3), st.integers(1, max_budget), st.sampled_from(BAD_BUDGETS))


@cache
@st.composite
def aging_workloads(draw: Any, shape: Shape, aging: int, max_priority: int) -> Workload:
    """A request of priority p waits (P - p) * A steps or more behind one that holds the memory or the
    only slot, and one of priority P arrives after that wait, with a few short requests around them."""
    p = draw(integers(max(0, max_priority - 2), max_priority - 1))
    wait = (max_priority - p) * aging
    hold = wait + draw(integers(1, 4))  # the holder's tokens: it runs past the late arrival
    late = 1 + wait + draw(integers(0, 2))
    requests = [Arrival(0, 1, hold, 0, max_priority), Arrival(1, draw(integers(1, 3)), 1, 1, p),
                Arrival(2, draw(integers(1, 3)), 1, late, max_priority)]
    for rid in range(3, 3 + draw(integers(0, 3))):
        requests.append(Arrival(rid, draw(integers(1, 3)), draw(integers(1, 3)), draw(integers(0, late)),
                                draw(integers(0, max_priority))))
    kv = shape.kv_tokens
    if kv is None:
        kv = draw(_kv_for([a.prompt_len + a.max_new for a in requests], shape.kv_room))
    requests = [replace(a, max_new=max(1, min(a.max_new, kv - a.prompt_len))) for a in requests]
    return Workload(Config(shape.token_budget, shape.max_seqs, kv), tuple(requests))


@st.composite
def variant_workloads(
    draw: Any, shape: Shape, refusals: bool, contract: Contract, stops: bool = False, cancels: bool = False,
    shared: bool = False,
) -> Workload:
    if isinstance(contract, PriorityContract) and contract.aging is not None and draw(integers(0, 3)) == 0:
        return draw(aging_workloads(shape, contract.aging, contract.max_priority))
    workload = draw(workloads(shape, refusals, stops, cancels, shared))
    if "BUDGET-CHANGE" in contract.ids:
        # A burst of short requests, so that several streams decode when the budget drops.
        kv, first = workload.config.kv_tokens, len(workload.requests)
        burst = tuple(
            Arrival(first + i, draw(integers(1, 3)), draw(integers(1, max(1, min(MAX_BURST_NEW, kv - 3)))),
                    draw(integers(0, 2)))
            for i in range(draw(integers(0, MAX_BURST)))
        )
        workload = replace(workload, requests=workload.requests + burst)
        num = draw(integers(1, MAX_CHANGES))
        changes = [BudgetChange(draw(integers(1, MAX_CHANGE_STEP)), draw(budgets(2 * shape.token_budget)))
                   for _ in range(num)]
        workload = replace(workload, budgets=tuple(sorted(changes, key=lambda c: c.step)))
    if "PRIORITY-ORDER" in contract.ids:
        workload = replace(workload, requests=tuple(
            replace(a, priority=draw(PRIORITIES if refusals else integers(0, MAX_PRIORITY)))
            for a in workload.requests
        ))
    return workload
