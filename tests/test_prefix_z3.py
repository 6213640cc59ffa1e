"""The prefix design's Z3 theorems (proofs/smt/prefix.py, prefix_cache.py), proved of the scheduler's own
methods by symbolic execution down every feasible path (proofs/smt/symexec.py), each refuted on the prefix
fault (or planted copy, prefix_planted.py) that overrides that method; the executor refuses code outside
its fragment rather than half-prove it, and the rule it cannot reach (EVICT-LRU) is a row not checked."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import z3

from stallfree.main import main
from stallfree.prefix import Scheduler, faults
from stallfree.prefix.contract.rules import NEW_IDS
from stallfree.proofs.smt import prefix, prefix_cache, symexec
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
    by = {t.name: t for t in prefix.THEOREMS}
    assert all(prefix.prove(t, faults.WriteShared).verdict is Verdict.HOLDS for t in prefix.THEOREMS[:3])
    assert all(prefix.prove(t, faults.EvictNewest).verdict is Verdict.HOLDS
               for t in prefix.THEOREMS if t.name != "EVICT-LRU")
    assert prefix.prove(by["FREE-AT-ZERO"], faults.FreeShared).verdict is Verdict.HOLDS
    assert prefix.prove(by["EVICT-LRU"], faults.FreeShared).verdict is Verdict.HOLDS


def test_each_admission_fault_breaks_its_own_theorem_and_not_the_hit_soundness_of_others() -> None:
    """HitOneMore holds a block not cached: HIT-SAME-TOKENS fails and SHARED-READONLY (its chunk still starts
    on a block boundary) holds; HitOneShort holds too few: CACHED-NOT-PREFILLED fails, HIT-SAME-TOKENS holds."""
    by = {t.name: t for t in prefix.THEOREMS}
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
    assert "8 of 8 claims hold" in out
    rows = {line.split()[0] for line in out.splitlines() if "Z3 prefix" in line}
    assert rows == {*NEW_IDS, "WATERMARK", "WORK-CONSERVING"}  # every rule of the design's own has a theorem
    assert main([*base, "--fault", "CACHED-NOT-CHARGED"]) == 1
    out = capsys.readouterr().out
    assert "ChargeCached.first_chunk" in out and "BROKEN" in out
    assert main([*base, "--fault", "FREE-AT-ZERO"]) == 1
    out = capsys.readouterr().out
    assert "FreeWhileHeld.release" in out and "BROKEN" in out
