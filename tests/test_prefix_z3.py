"""The prefix design's Z3 theorems (proofs/smt/prefix.py, prefix_cache.py, prefix_admit.py), proved of the
scheduler's own methods (and of its own schedule() then complete() for the admission step) by symbolic
execution down every feasible path (proofs/smt/symexec.py), each refuted on the prefix fault (or planted
copy, prefix_planted.py) that overrides that method; the executor refuses code outside its fragment
rather than half-prove it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import z3

from stallfree.main import main
from stallfree.prefix import Scheduler, faults
from stallfree.prefix.contract.rules import NEW_IDS
from stallfree.proofs.smt import prefix, prefix_admit, prefix_cache, prefix_planted, symexec
from stallfree.proofs.smt.symexec import Int
from stallfree.spec.verdict import Verdict


@pytest.mark.parametrize("theorem", prefix.THEOREMS, ids=lambda t: t.name)
def test_each_theorem_holds_of_the_scheduler_and_fails_on_its_fault(theorem: prefix.PrefixTheorem) -> None:
    assert prefix.prove(theorem).verdict is Verdict.HOLDS
    refuted = prefix.prove(theorem, prefix.control(theorem))
    assert refuted.verdict is Verdict.BROKEN and refuted.counterexample is not None


def test_a_fault_of_another_method_keeps_the_theorem() -> None:
    """The theorems speak of the methods they name: a fault elsewhere keeps them (WriteShared's hold keeps
    the budget and watermark theorems; EvictNewest's evict keeps all but EVICT-LRU; FreeShared, which errs
    in complete(), keeps the theorems of release())."""
    by = {t.name: t for t in prefix.THEOREMS if t.method != prefix.STEP}  # the method theorems
    assert all(prefix.prove(t, faults.WriteShared).verdict is Verdict.HOLDS for t in prefix.THEOREMS[:3])
    assert all(prefix.prove(t, faults.EvictNewest).verdict is Verdict.HOLDS
               for t in prefix.THEOREMS if t.name != "EVICT-LRU")
    assert prefix.prove(by["FREE-AT-ZERO"], faults.FreeShared).verdict is Verdict.HOLDS
    assert prefix.prove(by["EVICT-LRU"], faults.FreeShared).verdict is Verdict.HOLDS
    assert all(prefix.prove(t, faults.FreeShared).verdict is Verdict.HOLDS for t in STEP_THEOREMS)


def test_each_admission_fault_breaks_its_own_theorem_and_not_the_hit_soundness_of_others() -> None:
    """HitOneMore holds a block not cached: HIT-SAME-TOKENS fails and SHARED-READONLY (its chunk still starts
    on a block boundary) holds; HitOneShort holds too few: CACHED-NOT-PREFILLED fails, HIT-SAME-TOKENS holds."""
    by = {t.name: t for t in prefix.THEOREMS if t.method != prefix.STEP}  # the method theorems
    assert prefix.prove(by["SHARED-READONLY"], faults.HitOneMore).verdict is Verdict.HOLDS
    assert prefix.prove(by["HIT-SAME-TOKENS"], faults.HitOneShort).verdict is Verdict.HOLDS
    assert prefix.prove(by["SHARED-READONLY"], faults.HitOneShort).verdict is Verdict.HOLDS


def test_eviction_order_is_refuted_on_both_of_its_faults() -> None:
    """EVICT-LRU's theorem reads both halves of the rule: evict() takes the least recently freed
    (EvictNewest fails), and release() lets a request's blocks go last block first (FreeFirstBlockFirst fails)."""
    evict_lru = next(t for t in prefix.THEOREMS if t.name == "EVICT-LRU")
    assert prefix.prove(evict_lru, faults.FreeFirstBlockFirst).verdict is Verdict.BROKEN
    assert prefix.prove(evict_lru, faults.EvictNewest).verdict is Verdict.BROKEN


def test_the_symbolic_free_list_has_no_length() -> None:
    """SymFree (membership symbolic) has no len(): evict() on it is refused, never half-proved; the
    EVICT-LRU theorem runs evict() on a concrete list instead."""
    scheduler = Scheduler(4, 2, 64, block_size=2, watermark=0)
    free = z3.Int("free")

    def run(ex: symexec.Explorer) -> None:
        scheduler._lru = prefix_cache.SymFree({1: z3.Bool("f1")}, ex)
        scheduler._free_blocks = Int(free, ex)
        scheduler.evict()

    with pytest.raises(symexec.Refused):
        symexec.paths(run)


@pytest.mark.deep
def test_the_cache_theorems_hold_at_the_deep_bound() -> None:
    for t in prefix.THEOREMS[3:]:
        assert prefix.prove(t, deep=True).verdict is Verdict.HOLDS, t.name


def test_every_path_is_explored() -> None:
    a, b = z3.Ints("a b")
    paths = symexec.paths(lambda ex: min(Int(a, ex), Int(b, ex)) + max(Int(a, ex), 3))
    assert len(paths) == 4
    solver = z3.Solver()
    solver.add(z3.Not(symexec.as_term(paths) == z3.If(a < b, a, b) + z3.If(a > 3, a, 3)))
    assert solver.check() == z3.unsat


def test_code_outside_the_fragment_is_refused() -> None:
    scheduler = Scheduler(4, 2, 64, block_size=2, watermark=0)
    scheduler._keys[0] = []
    target = z3.Int("target")
    with pytest.raises(symexec.Refused):  # a loop over a symbolic range
        symexec.paths(lambda ex: scheduler.match(SimpleNamespace(target=Int(target, ex), rid=0)))
    with pytest.raises(symexec.Refused):  # // by a symbolic value
        symexec.paths(lambda ex: 7 // Int(target, ex))
    with pytest.raises(symexec.Refused):  # more paths than the bound
        symexec.paths(lambda ex: [Int(target, ex) > k for k in range(4) if Int(target, ex) > k], max_paths=3)


def test_floor_division_by_a_constant_is_pythons() -> None:
    """// rounds toward minus infinity, as Python's, for either sign of the divisor."""
    x = z3.Int("x")
    for divisor in (3, -3):
        term = symexec.as_term(symexec.paths(lambda ex, d=divisor: Int(x, ex) // d))
        for concrete in (-7, -1, 0, 5, 8):
            assert z3.simplify(z3.substitute(term, (x, z3.IntVal(concrete)))).as_long() == concrete // divisor


def test_prove_prints_the_prefix_theorems_and_their_controls(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["prove", "--scheduler", "stallfree.prefix:small_blocks", "--methods", "z3"]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "11 of 11 claims hold" in out
    rows = {line.split()[0] for line in out.splitlines() if "Z3 prefix" in line}
    assert rows == {*NEW_IDS, "WATERMARK", "WORK-CONSERVING"}  # every rule of the design's own has a theorem
    assert main([*base, "--fault", "CACHED-NOT-CHARGED"]) == 1
    out = capsys.readouterr().out
    assert "ChargeCached.first_chunk" in out and "BROKEN" in out
    assert main([*base, "--fault", "FREE-AT-ZERO"]) == 1
    out = capsys.readouterr().out
    assert "FreeWhileHeld.release" in out and "BROKEN" in out
    assert main([*base, "--fault", "CACHED-NOT-PREFILLED"]) == 1
    out = capsys.readouterr().out
    broken = [line for line in out.splitlines() if "SkipPrefilled.schedule+complete" in line]
    assert broken and broken[0].startswith("CACHED-NOT-PREFILLED") and "BROKEN" in broken[0]


STEP_THEOREMS = [t for t in prefix.THEOREMS if t.method == prefix.STEP]
# Each admission-step control and the step theorems it breaks: the planted ones and the registry's
# ChargeCached and HitOneShort break their own alone; WriteShared's plan reports the shorter hit, so its
# chunk is also owed more budget and starts before the cached run it holds.
BREAKS = {
    prefix_planted.ChargeInLoop: {"CACHED-NOT-CHARGED"},
    prefix_planted.WriteHeldQuietly: {"SHARED-READONLY"},
    prefix_planted.SkipPrefilled: {"CACHED-NOT-PREFILLED"},
    faults.ChargeCached: {"CACHED-NOT-CHARGED"},
    faults.HitOneShort: {"CACHED-NOT-PREFILLED"},
    faults.WriteShared: {"CACHED-NOT-CHARGED", "SHARED-READONLY", "CACHED-NOT-PREFILLED"},
}


def test_the_admission_step_has_a_theorem_of_each_of_its_three_rules() -> None:
    assert [t.name for t in STEP_THEOREMS] == ["CACHED-NOT-CHARGED", "SHARED-READONLY", "CACHED-NOT-PREFILLED"]


@pytest.mark.parametrize("fault", list(BREAKS), ids=lambda f: f.__name__)
def test_each_admission_control_breaks_the_step_theorems_it_names_and_no_other(fault: type) -> None:
    outcomes = {t.name: prefix.prove(t, fault) for t in STEP_THEOREMS}
    broken = {name for name, o in outcomes.items() if o.verdict is Verdict.BROKEN}
    assert broken == BREAKS[fault]
    assert all(o.verdict is Verdict.HOLDS for name, o in outcomes.items() if name not in broken)
    for name in broken:  # the counterexample names its rule, the values and the shape enumerated
        o = outcomes[name]
        assert o.theorem == name and o.counterexample is not None
        assert {"block_size", "budget", "shape"} <= set(o.counterexample)


def test_a_step_the_executor_cannot_follow_is_refused_not_judged() -> None:
    """HitOneMore's extra block leaves a symbolic count where complete() takes `%` of it, outside symexec's
    fragment: the step theorems read unknown (refused) on it, never holds."""
    o = prefix.prove(STEP_THEOREMS[0], faults.HitOneMore)
    assert o.verdict is Verdict.UNKNOWN and "refused" in (o.counterexample or {})


def test_the_step_theorems_are_not_vacuous() -> None:
    """Within the default bound the scheduler's own step admits two requests, takes hits and misses,
    caches a block another request's copy shares (a private copy), and (blocks of 1) preempts."""
    scheduler = Scheduler(4, 2, 64, block_size=2, watermark=0)
    steps = [step for _, step in prefix_admit.admissions(scheduler, 2)]
    admitted = [a for step in steps for a in step.admitted]
    assert any(len(step.admitted) == 2 for step in steps)
    assert any(a.hit > 0 for a in admitted) and any(a.hit == 0 and a.run == 0 for a in admitted)
    assert any(None in a.after for a in admitted)
    assert not any(step.raised for step in steps)
    one = Scheduler(4, 2, 64, block_size=1, watermark=0)  # a holder's decode needs a block in the step
    assert any(step.preempted for _, step in prefix_admit.admissions(one, 1))
    base = prefix_admit._setup(scheduler, 2, "hf")
    assert len(base.cached) == 1 and list(base._refs.values()) == [1] and len(base._running) == 1
