"""The variants' code theorems (`proofs/smt/variant_code.py`): Z3 over each variant's own
`schedule()`, `complete()` and `cancel()`, in both renderings, run on symbolic values along every
path, under the variant's contract. Each theorem holds of every variant at N = 2, and each reads BROKEN,
with the rule and a concrete state, on a copy of a variant with one lifecycle or policy step wrong:
the faults of `stallfree.faults` (a stop's KV back a step late, a stop of a rid that emits nothing, a
cancel that accepts anything or keeps the KV or leaves a tombstone in line, a line reordered by a
cancel, the aligned, priority and static policy faults) and a few planted here (an end one token
late, a stop forgotten, a decode skipped, a first token not emitted, a chunk recorded one position
long). A fault whose code leaves the fragment reads unknown,
naming the path, never holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import z3

from stallfree.faults.aligned import ALIGNED_FAULTS
from stallfree.faults.lifecycle import (
    CancelAnything,
    CancelKeepsKV,
    CancelTombstone,
    LateStopRelease,
    PlansCancelled,
    StopsAnyRid,
    SwapRemoveCancel,
)
from stallfree.faults.priority import IgnorePriority, NoAging, OnePriorityAdmission
from stallfree.faults.static import STATIC_FAULTS
from stallfree.faults.variant_lifecycle import (
    CancelQuietly,
    EndKeepsKV,
    LevelSwapRemove,
    StopAnyRunning,
    SwapLeaveLine,
    TombstoneLine,
    on,
)
from stallfree.proofs.smt import symexec, variant_code
from stallfree.proofs.smt.variant_code import THEOREMS, prove
from stallfree.proofs.variant_code_rows import variant_cases
from stallfree.spec.variants.aligned import contract as aligned
from stallfree.spec.variants.budget_change import BUDGET_CONTRACT, ROTATION_CONTRACT
from stallfree.spec.variants.priority import contract as aging
from stallfree.spec.variants.static import STATIC_CONTRACT
from stallfree.spec.verdict import Verdict
from stallfree.variants.aligned import Aligned, BatchedAligned
from stallfree.variants.batched import BatchedResizable
from stallfree.variants.priority import Prioritized
from stallfree.variants.rotating import BatchedRotating, Resizable, Rotating
from stallfree.variants.static import StaticBatching
from stallfree.variants.stepwise import StepwiseSequence

THEOREM = {t.name: t for t in THEOREMS}
BLOCK, AGING = 2, 1  # as the model checker's rows (proofs/variant_rows.py)


class EndsOneLate(Resizable):
    """A request ends one token after its max_new-th."""

    def is_done(self, seq: StepwiseSequence) -> bool:
        return seq.num_emitted > seq.request.max_new


class StopForgotten(Rotating):
    """A stop is accepted and forgotten: the request runs on."""

    def on_stop(self, seq: StepwiseSequence) -> None:
        pass


def skip_newest_decode(cls: type) -> type:
    """`cls` whose newest ready request goes without its decode whenever another is decoded."""

    def plan_decodes(self: Any, plan: list[tuple[int, int]], left: int) -> int:
        left = cls.plan_decodes(self, plan, left)
        if len(plan) > 1:
            plan.pop()
            left += 1
        return left

    return type(f"SkipsNewestDecode{cls.__name__}", (cls,), {"plan_decodes": plan_decodes})


class SilentFirstToken(Aligned):
    """A chunk that completes its prompt emits no first token."""

    def on_prompt_done(self, seq: StepwiseSequence, emitted: list[int]) -> None:
        pass


class PrefillsOneMore(Resizable):
    """A chunk that leaves its prompt unfinished is recorded one position longer than it ran."""

    def complete(self, plan: list[tuple[int, int]], stopped: Any = ()) -> list[int]:  # type: ignore[override]
        def recorded(rid: int, n: Any) -> Any:
            seq = self.running[rid]
            return n + 1 if not seq.is_ready and seq.num_prefilled + n + 1 < seq.request.prompt_len else n

        return super().complete([(rid, recorded(rid, n)) for rid, n in plan], stopped)


def aligned_copy(cls: type) -> Callable[[], Any]:
    return lambda: cls(BLOCK, 1, 1, block_size=BLOCK)


def aged(cls: type) -> Callable[[], Any]:
    """`cls` aging a level every AGING steps (a scheduler with no aging, NoAging, is left without)."""
    return lambda: type(f"{cls.__name__}A{AGING}", (cls,), {"aging": AGING} if cls.aging is not None else {})(1, 1, 1)


def plain(cls: type) -> Callable[[], Any]:
    return lambda: cls(1, 1, 1)


CASES = variant_cases()


@pytest.mark.parametrize("theorem", THEOREMS, ids=lambda t: t.name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_each_code_theorem_holds_of_each_variant(case: tuple[str, Any, Any],
                                                         theorem: variant_code.Theorem) -> None:
    name, make, contract = case
    outcome = prove(theorem, make, contract, 2)
    assert outcome.verdict is Verdict.HOLDS, f"{name}: {outcome.detail}"
    assert outcome.states > 0 and outcome.paths > outcome.states  # some states are refused by the hypothesis


def test_every_variant_has_its_rows() -> None:
    assert sorted(name for name, *_ in CASES) == [
        "Aligned", "BatchedAligned", "BatchedPrioritized", "BatchedResizable", "BatchedRotating", "Prioritized",
        "Resizable", "Rotating", "StaticBatching"]


# (theorem, a maker of the faulty copy, its contract, N, the rule it must be refuted under)
CONTROLS: dict[str, tuple[str, Callable[[], Any], Any, int, str]] = {
    "LateStopRelease": ("END (code)", aligned_copy(on(Aligned, LateStopRelease)), aligned(BLOCK), 2, "KV"),
    "EndsOneLate": ("END (code)", plain(EndsOneLate), BUDGET_CONTRACT, 2, "END"),
    "StopForgotten": ("END (code)", plain(StopForgotten), ROTATION_CONTRACT, 2, "END"),
    "StopsAnyRid": ("STOP-READY (code)", aged(on(Prioritized, StopsAnyRid)), aging(AGING), 2, "STOP-READY"),
    "StopsAnyRid (static)": ("STOP-READY (code)", plain(on(StaticBatching, StopsAnyRid)), STATIC_CONTRACT, 2,
                             "STOP-READY"),
    "CancelAnything": ("CANCEL (code)", aligned_copy(on(Aligned, CancelAnything)), aligned(BLOCK), 2, "CANCEL"),
    "CancelKeepsKV": ("CANCEL (code)", plain(on(Resizable, CancelKeepsKV)), BUDGET_CONTRACT, 2, "KV"),
    "CancelTombstone": ("CANCEL (code)", plain(on(StaticBatching, CancelTombstone)), STATIC_CONTRACT, 2, "CANCEL"),
    "SwapRemoveCancel": ("CANCEL (code)", plain(on(Rotating, SwapRemoveCancel)), ROTATION_CONTRACT, 3, "CANCEL"),
    "LevelSwapRemove": ("CANCEL (code)", aged(LevelSwapRemove), aging(AGING), 3, "CANCEL"),
    "EndKeepsKV": ("END (code)", aligned_copy(on(BatchedAligned, EndKeepsKV)), aligned(BLOCK), 2, "KV"),
    "StopAnyRunning": ("STOP-READY (code)", plain(on(BatchedResizable, StopAnyRunning)), BUDGET_CONTRACT, 2,
                       "STOP-READY"),
    "CancelQuietly": ("CANCEL (code)", plain(on(BatchedRotating, CancelQuietly)), ROTATION_CONTRACT, 2, "CANCEL"),
    "TombstoneLine": ("CANCEL (code)", aligned_copy(on(BatchedAligned, TombstoneLine)), aligned(BLOCK), 2, "CANCEL"),
    "SwapLeaveLine": ("CANCEL (code)", plain(on(BatchedResizable, SwapLeaveLine)), BUDGET_CONTRACT, 3, "CANCEL"),
    "SkipsNewestDecode": ("STEP (code)", plain(skip_newest_decode(Rotating)), ROTATION_CONTRACT, 2, "DECODE-FAIR"),
    "SkipsNewestDecode (DECODE-FIRST)": ("STEP (code)", plain(skip_newest_decode(Resizable)), BUDGET_CONTRACT, 2,
                                         "DECODE-FIRST"),
    "SilentFirstToken": ("STEP (code)", aligned_copy(SilentFirstToken), aligned(BLOCK), 2, "TOKENS"),
    "PrefillsOneMore": ("STEP (code)", plain(PrefillsOneMore), BUDGET_CONTRACT, 2, "PREFILL-ONCE"),
    "NoAging": ("STEP (code)", aged(NoAging), aging(AGING), 2, "PRIORITY-ORDER"),
    "NoAging (AGING-BOUND)": ("STEP (code)", aged(NoAging), aging(AGING), 2, "AGING-BOUND"),
    "IgnorePriority": ("STEP (code)", aged(IgnorePriority), aging(AGING), 2, "PRIORITY-ORDER"),
    "OnePriorityAdmission": ("STEP (code)", aged(OnePriorityAdmission), aging(AGING), 2, "PRIORITY-WORK-CONSERVING"),
    **{cls.__name__: ("STEP (code)", aligned_copy(cls), aligned(BLOCK), 2, rule)
       for rule, cls in ALIGNED_FAULTS.items()},
    **{cls.__name__: ("STEP (code)", plain(cls), STATIC_CONTRACT, 2, rule) for rule, cls in STATIC_FAULTS.items()},
}


@pytest.mark.parametrize("control", sorted(CONTROLS))
def test_each_fault_makes_its_theorem_read_broken(control: str) -> None:
    theorem, make, contract, n, rule = CONTROLS[control]
    outcome = prove(THEOREM[theorem], make, contract, n)
    assert outcome.verdict is Verdict.BROKEN, outcome.detail
    assert rule in outcome.broken, (outcome.broken, outcome.detail)
    assert outcome.counterexample is not None and outcome.counterexample["values"]  # a concrete state


def test_a_fault_whose_code_leaves_the_fragment_reads_unknown_naming_the_path() -> None:
    # Its ghost decodes are sliced by the budget left (`sorted(ghosts)[:left]`): no symbolic value can be an index.
    outcome = prove(THEOREM["CANCEL (code)"], aligned_copy(on(Aligned, PlansCancelled)), aligned(BLOCK), 2)
    assert outcome.verdict is Verdict.UNKNOWN
    assert "cannot run symbolically" in outcome.detail and "cancel(0)" in outcome.detail


def test_every_theorem_has_a_negative_control() -> None:
    assert {theorem for theorem, *_ in CONTROLS.values()} == set(THEOREM)


def test_after_a_budget_drop_resizable_holds_and_rotating_reads_unknown() -> None:
    # Without READY-WITHIN-BUDGET among the hypotheses (a state after a drop: more ready than B), the
    # oldest-first decodes run symbolically and keep every claim; rotation's choice of the B longest
    # waiting slices the sorted ready requests by the budget, which no symbolic value can do.
    step = THEOREM["STEP (code)"]
    resizable = prove(step, plain(Resizable), BUDGET_CONTRACT, 2, fixed_budget=False)
    assert resizable.verdict is Verdict.HOLDS, resizable.detail
    rotating = prove(step, plain(Rotating), ROTATION_CONTRACT, 2, fixed_budget=False)
    assert rotating.verdict is Verdict.UNKNOWN
    assert "2 ready, 0 partial, 0 waiting" in rotating.detail and "cannot run symbolically" in rotating.detail


def test_mod_by_a_positive_constant_is_pythons_floor_modulus_and_nothing_else_runs() -> None:
    # The aligned chunk's `left - left % b` runs symbolically: `%` joined the fragment for this.
    x = z3.Int("x")
    for value in range(-7, 8):
        term = (symexec.Int(x, None) % 3).term  # type: ignore[arg-type]  # arithmetic asks no explorer
        assert z3.simplify(z3.substitute(term, (x, z3.IntVal(value)))).as_long() == value % 3
    for divisor in (0, -2, True, 2.0):
        with pytest.raises(TypeError):
            symexec.Int(x, None) % divisor  # type: ignore[arg-type, operator]
    with pytest.raises(TypeError):
        5 % symexec.Int(x, None)  # type: ignore[arg-type, operator]
