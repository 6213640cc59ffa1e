"""The variants' rows of `stallfree prove`: each variant model-checked under its contract, and each
negative control model-checked under the same bounds, which must break the rule it names; then each
variant again with stops and cancels among the environment's actions (`Bounds.lifecycle`), and each
lifecycle fault on it (`faults.variant_lifecycle`), which must break its rule. Static batching, the
teaching baseline, is checked the same way under its own contract (it has one rendering, on `Stepwise`).

Bounds are small on purpose (a few seconds each); `stallfree prove --methods variants --profile deep`
adds each variant's check with stops and cancels a step up (`Case.deep`); `docs/variants.md` gives the
times. Last come the code theorems of each variant on `Stepwise` (`variant_code_rows`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stallfree.faults.aligned import ALIGNED_FAULTS
from stallfree.faults.budget import BUDGET_FAULTS
from stallfree.faults.priority import PRIORITY_FAULTS
from stallfree.faults.static import STATIC_FAULTS
from stallfree.faults.variant_lifecycle import VARIANT_LIFECYCLE_FAULTS
from stallfree.spec.contract import Contract
from stallfree.spec.variants.aligned import contract as aligned
from stallfree.spec.variants.budget_change import BUDGET_CONTRACT, ROTATION_CONTRACT
from stallfree.spec.variants.priority import contract as aging
from stallfree.spec.variants.static import STATIC_CONTRACT
from stallfree.spec.verdict import Verdict
from stallfree.variants.aligned import Aligned, BatchedAligned
from stallfree.variants.batched import BatchedResizable
from stallfree.variants.priority import BatchedPrioritized, Prioritized
from stallfree.variants.rotating import BatchedRotating, Resizable, Rotating
from stallfree.variants.static import StaticBatching

from .controls import wrong_lifecycle_state
from .explicit.bounds import Bounds
from .explicit.snapshot import Hidden
from .explicit.variants import VariantBounds, VariantResult, check

BLOCK = 2  # block size of the aligned rows: budgets of 5 leave 2 whole blocks and 1 token over
AGING = 1  # aging period of the priority rows: a level a step, so the bound is reached within the bounds


def _aligned(cls: type) -> Callable[..., Any]:
    def make(**config: int) -> Any:
        return cls(**config, block_size=BLOCK)

    make.__name__ = cls.__name__
    return make


def _aged(cls: type) -> type:
    return type(f"{cls.__name__}A{AGING}", (cls,), {"aging": AGING}) if cls.aging is not None else cls


@dataclass(frozen=True, slots=True)
class Case:
    contract: Contract
    bounds: tuple[VariantBounds, ...]  # the variants are checked at each; the controls at the first
    variants: tuple[tuple[str, Callable[..., Any]], ...]  # its renderings: stepwise, batched
    controls: dict[str, Callable[..., Any]]  # rule -> a scheduler that breaks it
    control_bounds: dict[str, VariantBounds]  # a control's own bounds, where the first would not show it
    lifecycle: VariantBounds | None = None  # with stops and cancels: the variants and their lifecycle faults
    wrap: Callable[[type], Callable[..., Any]] = lambda cls: cls  # a fault class as the variants' factory
    deep: VariantBounds | None = None  # --profile deep: the variants with stops and cancels again, a step up


# The bounds with stops and cancels: a partial prompt in each (so a stop may name a request that emits
# nothing), three requests (so a cancel can reorder a line of two behind it), a budget drop under rotation.
ALIGNED_LIFECYCLE = VariantBounds(Bounds(3, 2, 12, 3, 4, 2, lifecycle=True))
ROTATION_LIFECYCLE = VariantBounds(Bounds(2, 3, 9, 3, 2, 2, lifecycle=True), budgets=(0, 1), max_changes=1)
AGING_LIFECYCLE = VariantBounds(Bounds(2, 1, 10, 3, 3, 2, never_fit=False, lifecycle=True), priorities=(-1, 0, 3))
STATIC_LIFECYCLE = VariantBounds(Bounds(2, 2, 10, 3, 3, 2, lifecycle=True))
# `--profile deep`: each bound above with the same B, S, K (a larger one plans differently, so reaches
# other states, not more) and the field that costs least to grow grown by one: a third token a request
# (aligned), a fourth request (rotation, static), a prompt of four (aging; a third token there took over
# 300 s on the shared machine), so that every state of the default bound is among the deep one's.
ALIGNED_DEEP = VariantBounds(Bounds(3, 2, 12, 3, 4, 3, lifecycle=True))
ROTATION_DEEP = VariantBounds(Bounds(2, 3, 9, 4, 2, 2, lifecycle=True), budgets=(0, 1), max_changes=1)
AGING_DEEP = VariantBounds(Bounds(2, 1, 10, 3, 4, 2, never_fit=False, lifecycle=True), priorities=(-1, 0, 3))
STATIC_DEEP = VariantBounds(Bounds(2, 2, 10, 4, 3, 2, lifecycle=True))


def cases() -> list[Case]:
    # A bad budget (0) and a bad priority (-1) among the environment's choices: BUDGET-CHANGE and the
    # priority's validation are judged on every state.
    rotation = VariantBounds(Bounds(3, 3, 12, 3, 2, 4), budgets=(0, 1, 2, 3), max_changes=2)
    one_slot = VariantBounds(Bounds(4, 1, 12, 3, 2, 4, never_fit=False), priorities=(-1, 0, 3))
    two_slots = VariantBounds(Bounds(4, 2, 12, 3, 2, 3, never_fit=False), priorities=(-1, 0, 3))
    return [
        Case(aligned(BLOCK), (VariantBounds(Bounds(3, 2, 12, 3, 6, 2)), VariantBounds(Bounds(5, 2, 12, 3, 6, 2))),
             (("Aligned", _aligned(Aligned)), ("BatchedAligned", _aligned(BatchedAligned))),
             {rule: _aligned(cls) for rule, cls in ALIGNED_FAULTS.items()}, {}, ALIGNED_LIFECYCLE, _aligned,
             ALIGNED_DEEP),
        Case(BUDGET_CONTRACT, (rotation,), (("Resizable", Resizable), ("BatchedResizable", BatchedResizable)), {}, {},
             ROTATION_LIFECYCLE, deep=ROTATION_DEEP),
        Case(ROTATION_CONTRACT, (rotation,), (("Rotating", Rotating), ("BatchedRotating", BatchedRotating)),
             dict(BUDGET_FAULTS), {}, ROTATION_LIFECYCLE, deep=ROTATION_DEEP),
        Case(aging(AGING), (one_slot, two_slots),
             (("Prioritized", _aged(Prioritized)), ("BatchedPrioritized", _aged(BatchedPrioritized))),
             {rule: _aged(cls) for rule, cls in PRIORITY_FAULTS.items()}, {"PRIORITY-WORK-CONSERVING": two_slots},
             AGING_LIFECYCLE, _aged, AGING_DEEP),
        Case(STATIC_CONTRACT, (VariantBounds(Bounds(3, 2, 12, 3, 6, 2)),), (("StaticBatching", StaticBatching),),
             dict(STATIC_FAULTS), {}, STATIC_LIFECYCLE, deep=STATIC_DEEP),
    ]


def caught(yes: bool) -> Verdict:
    """A negative control's row: its claim holds when the control was caught breaking its rule."""
    return Verdict.HOLDS if yes else Verdict.BROKEN


def rows(row: Callable[..., Any], say: Callable[[str], None], deep: bool = False) -> list[Any]:
    """One row per variant and bound (its model check's verdict) and one per negative control (holds
    when caught, BROKEN when it is not), made by `row(claim, method, bound, result, seconds, detail)`;
    `deep` adds the checks with stops and cancels at each case's deep bound."""
    out = []
    for case in cases():
        for (name, factory), bounds in ((v, b) for v in case.variants for b in case.bounds):
            say(f"variants: model check {name} under {case.contract.name}, {bounds.label()}")
            out.append(model_row(row, case.contract, bounds, name, factory))
        for rule, control in case.controls.items():
            label = getattr(control, "__name__", rule)
            bounds = case.control_bounds.get(rule, case.bounds[0])
            say(f"variants: negative control for {rule} under {case.contract.name}")
            c = check(case.contract, bounds, control, rules=(rule,))
            ok = c.rule == rule and c.replayed is not None and c.replayed.startswith(f"{rule} at step")
            detail = f"{c.rule}: {c.message}; replayed: {c.replayed}" if c.rule else "no counterexample found"
            out.append(row(rule, f"model check, negative control ({label})", bounds.label(), caught(ok), c.seconds,
                           detail))
    from .variant_code_rows import code_rows  # Z3 over the variants' own code (smt.variant_code)

    return out + lifecycle_rows(row, say, deep) + z3_rows(row, say) + code_rows(row, say, deep)


def lifecycle_caught(result: VariantResult, rule: str) -> bool:
    """The lifecycle control broke `rule`, and the workload of its path replays the break; a stop that
    must be refused has no workload form (`play` offers none), so such a break is its message alone."""
    if result.rule != rule:
        return False
    if result.replayed is not None and result.replayed.startswith(f"{rule} at step"):
        return True
    return rule == "TOKENS" and "stopped=" in (result.message or "")


def lifecycle_rows(row: Callable[..., Any], say: Callable[[str], None], deep: bool = False) -> list[Any]:
    """Each variant under its contract with stops and cancels (its model check's verdict; with `deep`,
    again at the case's deep bound), and each lifecycle fault on it at the first bound, checking only
    its rule (holds when caught, BROKEN when it is not)."""
    out = []
    for case in cases():
        if case.lifecycle is None:
            continue
        bounds = case.lifecycle
        for name, factory in case.variants:
            for at in (bounds, case.deep) if deep and case.deep is not None else (bounds,):
                say(f"variants: model check {name} under {case.contract.name} with stops and cancels, {at.label()}")
                out.append(model_row(row, case.contract, at, name, factory))
            for fault in VARIANT_LIFECYCLE_FAULTS.get(name, ()):
                rule = fault.breaks  # type: ignore[attr-defined]
                say(f"variants: lifecycle control {fault.__name__} for {rule} under {case.contract.name}")
                c = check(case.contract, bounds, case.wrap(fault), rules=(rule,), hidden=wrong_lifecycle_state)
                detail = f"{c.rule}: {c.message}; replayed: {c.replayed}" if c.rule else "no counterexample found"
                out.append(row(rule, f"model check, negative control ({fault.__name__})", bounds.label(),
                               caught(lifecycle_caught(c, rule)), c.seconds, detail))
    return out


def model_row(row: Callable[..., Any], contract: Contract, bounds: VariantBounds, name: str,
              factory: Callable[..., Any], hidden: Hidden | None = None) -> Any:
    """The row of `name`'s model check under `contract` within `bounds`, every rule judged: holds only
    for a search that exhausted them (`check` runs with no state limit here), BROKEN with the
    counterexample's workload otherwise; `hidden` as for `check`."""
    r = check(contract, bounds, factory, hidden=hidden)
    detail = (f"{r.states} states, {r.transitions} transitions; every rule of {contract.name}; "
              f"drain bound {r.drain_bound}")
    if not r.holds:
        detail = f"{r.rule}: {r.message}; workload {r.workload and r.workload.dumps()}"
    return row(contract.name, f"model check ({name})", bounds.label(), r.verdict, r.seconds, detail)


def z3_rows(row: Callable[..., Any], say: Callable[[str], None]) -> list[Any]:
    """The variants' arithmetic for every value (`smt.variants`): each claim holds, each control is
    refuted (its row holds when it is; BROKEN when Z3 proves the control; unknown when Z3 gives no answer)."""
    from .smt.variants import CLAIMS, decide

    out = []
    for rule, name, claim, must_hold in CLAIMS:
        say(f"variants: z3 {rule}: {name}")
        o = decide(name, claim)
        # A claim's row is its verdict; a control's holds when Z3 refutes it (unknown stays unknown).
        result = o.verdict if must_hold or o.verdict is Verdict.UNKNOWN else caught(o.verdict is Verdict.BROKEN)
        detail = name if o.counterexample is None else f"{name}; counterexample {o.counterexample}"
        out.append(row(rule, "Z3, any value" if must_hold else "Z3, negative control", "any N",
                       result, o.seconds, detail.replace("\n", " ")))
    return out
