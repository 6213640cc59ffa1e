"""Every contract stallfree judges, by name, in one registry: the three designs (reservation, paged,
prefix) and the variants' contracts (aligned[-B], budget-change, rotation, aging[-A], priority, static).

A design is a value here and nowhere else: a consumer asks `of(scheduler)` (the design a scheduler
declares in its `design` attribute, the reservation's if none) or `contract(name)`, and reads what it
needs off the `Contract`. A new design is one `register` call, from any module (a test's included).
`aligned-B` and `aging-A` are families: `contract("aligned-32")` builds the member for B = 32.

    aligned, aligned-B      block-aligned chunks, blocks of B tokens (aligned: 16)   spec/variants/aligned.py
    budget-change           the reference's rules with set_budget(B)                 spec/variants/budget_change.py
    rotation                set_budget(B), decodes to the longest waiting            spec/variants/budget_change.py
    aging, aging-A          priorities 0..3, one level gained every A steps (64)     spec/variants/priority.py
    priority                priorities 0..3 without aging                            spec/variants/priority.py
    static                  static batching: a batch closed until it has all finished spec/variants/static.py
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stallfree.prefix.contract.invariants import PREFIX_INVARIANTS
from stallfree.prefix.contract.monitor import PrefixMonitor  # the prefix design's contract: layer 0
from stallfree.prefix.contract.rules import PREFIX_RULES

from .capability import CANCEL, STOP
from .contract import CONTENTS, RESERVATION_DESIGN, STOPS, Contract
from .paged.invariants import PAGED_INVARIANTS
from .paged.monitor import PagedMonitor
from .paged.rules import PAGED_RULES
from .reservation.invariants import INVARIANTS
from .reservation.monitor import Monitor
from .reservation.rules import RULES
from .types import Config
from .variants import aligned, priority
from .variants.budget_change import BUDGET_CONTRACT, ROTATION_CONTRACT
from .variants.static import STATIC_CONTRACT

_CONTRACTS: dict[str, Contract] = {}
_FAMILIES: dict[str, tuple[Callable[[int], Contract], tuple[int, ...]]] = {}  # name -> (member of N, listed Ns)
_ORDER: list[str] = []  # every name, in registration order


def register(value: Contract) -> Contract:
    """Add `value` under its name (a name taken raises ValueError naming it)."""
    if value.name in _CONTRACTS or value.name in _FAMILIES:
        raise ValueError(f"contract {value.name!r} is already registered")
    _CONTRACTS[value.name] = value
    _ORDER.append(value.name)
    return value


def register_family(name: str, member: Callable[[int], Contract], listed: tuple[int, ...]) -> None:
    """`name-N` is `member(N)` (N >= 1), `name` alone `member(listed[0])`; the simulator's table lists `listed`."""
    if name in _CONTRACTS or name in _FAMILIES:
        raise ValueError(f"contract {name!r} is already registered")
    _FAMILIES[name] = (member, listed)
    _ORDER.append(name)


def unregister(name: str) -> None:
    """Remove the contract or family called `name` (a test's own design, when the test is done)."""
    _CONTRACTS.pop(name, None)
    _FAMILIES.pop(name, None)
    if name in _ORDER:
        _ORDER.remove(name)


def names() -> tuple[str, ...]:
    """The names `contract` takes, in registration order (a family by its name alone)."""
    return tuple(_ORDER)


def knows(name: str) -> bool:
    """Whether `name` names a contract or a family's member (aligned-0 is named, and refused by `contract`)."""
    return name in _CONTRACTS or name.partition("-")[0] in _FAMILIES


def contract(name: str) -> Contract:
    """The contract called `name`; ValueError naming the value and the names if there is none."""
    if name in _CONTRACTS:
        return _CONTRACTS[name]
    family, _, number = name.partition("-")
    if family in _FAMILIES:
        member, listed = _FAMILIES[family]
        if not number:
            return member(listed[0])
        if not number.isdigit() or int(number) < 1:
            raise ValueError(f"contract {name!r}: {family}-N needs an int N >= 1, got {number!r}")
        return member(int(number))
    variants = ", ".join(n for n in names() if not _is_design(n))
    families = ", ".join(f"{f}-N" for f in _FAMILIES)
    raise ValueError(f"contract {name!r} is unknown; the contracts are {variants} ({families})")


def designs() -> tuple[Contract, ...]:
    """The designs, in registration order (the reservation's first)."""
    return tuple(c for c in _CONTRACTS.values() if c.is_design)


def variants() -> tuple[Contract, ...]:
    """Each variant's contract: the registered ones and each family's listed members."""
    found: list[Contract] = []
    for name in _ORDER:
        if name in _FAMILIES:
            member, listed = _FAMILIES[name]
            found.extend(member(n) for n in listed)
        elif not _CONTRACTS[name].is_design:
            found.append(_CONTRACTS[name])
    return tuple(found)


def of(obj: object) -> Contract:
    """The design a scheduler or factory declares (its `design` attribute), the reservation's if none.
    Raises ValueError naming an unknown design."""
    name = getattr(obj, "design", RESERVATION_DESIGN)
    if not isinstance(name, str) or name not in _CONTRACTS or not _CONTRACTS[name].is_design:
        raise ValueError(f"design {name!r} is unknown; the designs are {', '.join(d.name for d in designs())}")
    return _CONTRACTS[name]


def policies() -> dict[str, tuple[str, Contract]]:
    """Each scheduler name the simulator and trace take -> (its MODULE:FACTORY, the contract it is judged under)."""
    return {policy: (target, c) for c in (*designs(), *variants()) for policy, target in c.policies}


def statement(rule_id: str, design: str | None = None) -> str | None:
    """The statement of `rule_id` in `design`'s rules, else in whichever design holds it (the
    reservation's first)."""
    first = [_CONTRACTS[design]] if design in _CONTRACTS else []
    for held in (*first, *designs()):
        text = held.statement(rule_id)
        if text:
            return text
    return None


def _is_design(name: str) -> bool:
    return name in _CONTRACTS and _CONTRACTS[name].is_design


@dataclass(frozen=True, slots=True)
class DesignMonitor:
    """A design's monitor class, built as `contract.watch` builds one: (scheduler, config, rules,
    contract); a value, not a closure, so that a contract crosses a process boundary (the executor's
    ranks)."""

    monitor: Callable[..., Any]

    def __call__(self, scheduler: Any, config: Config, rules: Any, _contract: Contract) -> Any:
        return self.monitor(scheduler, config, rules)


def _reserved(scheduler: Any, config: Config) -> int:
    return config.kv_tokens - scheduler.free_kv  # type: ignore[no-any-return]


def _in_blocks(scheduler: Any, config: Config) -> int:
    """KV held in blocks: the pool the contract defines (kv_tokens // block_size) less the free blocks
    the scheduler shows, read as the monitor reads them (a hosted scheduler's answer them over the pipe)."""
    block_size = scheduler.block_size
    return (config.kv_tokens // block_size - scheduler.free_blocks) * block_size  # type: ignore[no-any-return]


RESERVATION = register(Contract(
    RESERVATION_DESIGN, RULES, monitor=DesignMonitor(Monitor), noun="rule",
    invariants=INVARIANTS, faults="stallfree.faults.catalog:FAULTS",
    policies=(("reference", "stallfree.reference:Scheduler"),  # decodes first, chunked prefill (the contract)
              ("prefill-first", "stallfree.variants.prefill_first:PrefillFirst"),  # chunked, prompts before decodes
              ("unchunked", "stallfree.variants.unchunked:UnchunkedPrefillFirst")),  # whole prompts in their own steps
    held=_reserved, executor="stallfree.executor.engine.executor:Executor",
))
PAGED = register(Contract(
    "paged", PAGED_RULES, monitor=DesignMonitor(PagedMonitor), design="paged",
    invariants=PAGED_INVARIANTS, scheduler="stallfree.paged:Scheduler",
    faults="stallfree.faults.paged:PAGED_FAULTS", bound=PagedMonitor.work_bound, noun="paged rule",
    capability_rules=((STOP, ("TOKENS-KEPT", "BLOCKS", "PROGRESS")),
                      (CANCEL, ("CANCEL", "FCFS", "BLOCKS", "PROGRESS"))),
    guard="stallfree.conformance.isolation.paged_guard:PagedGuard", policies=(("paged", "stallfree.paged:Scheduler"),),
    held=_in_blocks, drawer="stallfree.view.paged", executor="stallfree.executor.engine.paged:PagedExecutor",
))
PREFIX = register(Contract(
    "prefix", PREFIX_RULES, monitor=DesignMonitor(PrefixMonitor), design="prefix",
    invariants=PREFIX_INVARIANTS, scheduler="stallfree.prefix:Scheduler",
    faults="stallfree.prefix.faults:PREFIX_FAULTS", bound=PagedMonitor.work_bound, noun="prefix rule",
    carries=frozenset({STOPS, CONTENTS}),
    capability_rules=((STOP, ("TOKENS-KEPT", "BLOCKS", "FREE-AT-ZERO", "PROGRESS")),
                      (CANCEL, ("CANCEL", "FCFS", "BLOCKS", "FREE-AT-ZERO", "PROGRESS"))),
    guard="stallfree.conformance.isolation.paged_guard:PrefixGuard", held=_in_blocks, drawer="stallfree.view.paged",
    executor="stallfree.executor.engine.prefix:PrefixExecutor",
))
register_family("aligned", aligned.contract, aligned.LISTED_BLOCKS)
register(BUDGET_CONTRACT)
register(ROTATION_CONTRACT)
register_family("aging", priority.contract, priority.LISTED_AGING)
register(priority.contract(None))
register(STATIC_CONTRACT)

