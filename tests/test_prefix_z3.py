"""The prefix design's Z3 theorems (proofs/smt/prefix.py), proved of the scheduler's own methods by
symbolic execution down every feasible path (proofs/smt/symexec.py), each refuted on the prefix fault that
overrides that method; the executor refuses code outside its fragment rather than half-prove it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import z3

from stallfree.main import main
from stallfree.prefix import Scheduler, faults
from stallfree.proofs.smt import prefix, symexec
from stallfree.proofs.smt.symexec import Int


@pytest.mark.parametrize("theorem", prefix.THEOREMS, ids=lambda t: t.name)
def test_each_theorem_holds_of_the_scheduler_and_fails_on_its_fault(theorem: prefix.PrefixTheorem) -> None:
    assert prefix.prove(theorem).result == "holds"
    refuted = prefix.prove(theorem, prefix.control(theorem))
    assert refuted.result == "counterexample" and refuted.counterexample is not None


def test_a_fault_of_another_method_keeps_the_theorem() -> None:
    """The theorems speak of the method they name: a fault elsewhere (WriteShared's hold) keeps them."""
    assert all(prefix.prove(t, faults.WriteShared).result == "holds" for t in prefix.THEOREMS)


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
    assert "3 of 3 claims hold" in capsys.readouterr().out
    assert main([*base, "--fault", "CACHED-NOT-CHARGED"]) == 1
    out = capsys.readouterr().out
    assert "ChargeCached.first_chunk" in out and "BROKEN" in out
