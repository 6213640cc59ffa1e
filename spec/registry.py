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

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .contract import RESERVATION_DESIGN, Contract
from .reservation.invariants import INVARIANTS
from .reservation.monitor import Monitor
from .reservation.rules import RULES
from .types import Config
from .variants import aligned, priority
from .variants.budget_change import BUDGET_CONTRACT, ROTATION_CONTRACT
from .variants.static import STATIC_CONTRACT

_CONTRACTS: dict[str, Contract] = {}
# The paged and prefix designs, built on first use (spec/block_designs.py): their monitors, shadows and
# rules are a third of a conformance worker's import, and a run judges one design.
_PENDING: dict[str, str] = {}  # name -> MODULE:NAME of the contract
_FAMILIES: dict[str, tuple[Callable[[int], Contract], tuple[int, ...]]] = {}  # name -> (member of N, listed Ns)
_ORDER: list[str] = []  # every name, in registration order


def register(value: Contract) -> Contract:
    """Add `value` under its name (a name taken raises ValueError naming it)."""
    if value.name in _CONTRACTS or value.name in _FAMILIES or value.name in _PENDING:
        raise ValueError(f"contract {value.name!r} is already registered")
    _CONTRACTS[value.name] = value
    _ORDER.append(value.name)
    return value


def register_later(name: str, where: str) -> None:
    """`name` is the contract at `where` (MODULE:NAME), imported the first time it is asked for."""
    if name in _CONTRACTS or name in _FAMILIES or name in _PENDING:
        raise ValueError(f"contract {name!r} is already registered")
    _PENDING[name] = where
    _ORDER.append(name)


def _load(name: object) -> None:
    """Build the contract called `name` if it is still pending (its module imported now)."""
    if isinstance(name, str) and name in _PENDING:
        module, _, attr = _PENDING[name].partition(":")
        _CONTRACTS[name] = getattr(importlib.import_module(module), attr)
        del _PENDING[name]


def register_family(name: str, member: Callable[[int], Contract], listed: tuple[int, ...]) -> None:
    """`name-N` is `member(N)` (N >= 1), `name` alone `member(listed[0])`; the simulator's table lists `listed`."""
    if name in _CONTRACTS or name in _FAMILIES or name in _PENDING:
        raise ValueError(f"contract {name!r} is already registered")
    _FAMILIES[name] = (member, listed)
    _ORDER.append(name)


def unregister(name: str) -> None:
    """Remove the contract or family called `name` (a test's own design, when the test is done)."""
    _CONTRACTS.pop(name, None)
    _FAMILIES.pop(name, None)
    _PENDING.pop(name, None)
    if name in _ORDER:
        _ORDER.remove(name)


def names() -> tuple[str, ...]:
    """The names `contract` takes, in registration order (a family by its name alone)."""
    return tuple(_ORDER)


def knows(name: str) -> bool:
    """Whether `name` names a contract or a family's member (aligned-0 is named, and refused by `contract`)."""
    return name in _CONTRACTS or name in _PENDING or name.partition("-")[0] in _FAMILIES


def contract(name: str) -> Contract:
    """The contract called `name`; ValueError naming the value and the names if there is none."""
    _load(name)
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
    for name in tuple(_PENDING):
        _load(name)
    return tuple(_CONTRACTS[n] for n in _ORDER if n in _CONTRACTS and _CONTRACTS[n].is_design)


def variants() -> tuple[Contract, ...]:
    """Each variant's contract: the registered ones and each family's listed members."""
    found: list[Contract] = []
    for name in _ORDER:
        if name in _FAMILIES:
            member, listed = _FAMILIES[name]
            found.extend(member(n) for n in listed)
        elif name in _CONTRACTS and not _CONTRACTS[name].is_design:  # a pending one is a design
            found.append(_CONTRACTS[name])
    return tuple(found)


def of(obj: object) -> Contract:
    """The design a scheduler or factory declares (its `design` attribute), the reservation's if none.
    Raises ValueError naming an unknown design."""
    name = getattr(obj, "design", RESERVATION_DESIGN)
    _load(name)
    if not isinstance(name, str) or name not in _CONTRACTS or not _CONTRACTS[name].is_design:
        raise ValueError(f"design {name!r} is unknown; the designs are {', '.join(d.name for d in designs())}")
    return _CONTRACTS[name]


def policies() -> dict[str, tuple[str, Contract]]:
    """Each scheduler name the simulator and trace take -> (its MODULE:FACTORY, the contract it is judged under)."""
    return {policy: (target, c) for c in (*designs(), *variants()) for policy, target in c.policies}


def statement(rule_id: str, design: str | None = None) -> str | None:
    """The statement of `rule_id` in `design`'s rules, else in whichever design holds it (the
    reservation's first)."""
    _load(design)
    first = [_CONTRACTS[design]] if design in _CONTRACTS else []
    for held in (*first, *designs()):
        text = held.statement(rule_id)
        if text:
            return text
    return None


def _is_design(name: str) -> bool:
    return name in _PENDING or (name in _CONTRACTS and _CONTRACTS[name].is_design)


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


RESERVATION = register(Contract(
    RESERVATION_DESIGN, RULES, monitor=DesignMonitor(Monitor), noun="rule",
    invariants=INVARIANTS, faults="stallfree.faults.catalog:FAULTS",
    policies=(("reference", "stallfree.reference:Scheduler"),  # decodes first, chunked prefill (the contract)
              ("prefill-first", "stallfree.variants.prefill_first:PrefillFirst"),  # chunked, prompts before decodes
              ("unchunked", "stallfree.variants.unchunked:UnchunkedPrefillFirst")),  # whole prompts in their own steps
    held=_reserved, executor="stallfree.executor.engine.executor:Executor",
))
register_later("paged", "stallfree.spec.block_designs:PAGED")
register_later("prefix", "stallfree.spec.block_designs:PREFIX")
register_family("aligned", aligned.contract, aligned.LISTED_BLOCKS)
register(BUDGET_CONTRACT)
register(ROTATION_CONTRACT)
register_family("aging", priority.contract, priority.LISTED_AGING)
register(priority.contract(None))
register(STATIC_CONTRACT)



def __getattr__(name: str) -> Contract:
    """`registry.PAGED` and `registry.PREFIX`: the pending designs, built on first use."""
    if name in ("PAGED", "PREFIX"):
        return contract(name.lower())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
