"""The prefix design's Z3 theorems (proofs/smt/prefix.py), proved of the scheduler's own methods by
symbolic execution down every path (proofs/smt/symexec_methods.py), each refuted on the prefix fault that
overrides that method; the executor refuses code outside its fragment rather than half-prove it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import z3

from stallfree.main import main
from stallfree.prefix import Scheduler, faults
from stallfree.proofs.smt import prefix
from stallfree.proofs.smt import symexec_methods as symexec
from stallfree.proofs.smt.symexec_methods import Sym


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
    paths = symexec.explore(lambda: min(Sym(a), Sym(b)) + max(Sym(a), 3))
    assert len(paths) == 4
    solver = z3.Solver()
    solver.add(z3.Not(symexec.as_term(paths) == z3.If(a < b, a, b) + z3.If(a > 3, a, 3)))
    assert solver.check() == z3.unsat


def test_code_outside_the_fragment_is_refused() -> None:
    scheduler = Scheduler(4, 2, 64, block_size=2, watermark=0)
    seq = SimpleNamespace(target=Sym(z3.Int("target")), rid=0)
    scheduler._keys[0] = []
    with pytest.raises(symexec.Refused):
        symexec.explore(lambda: scheduler.match(seq))  # a loop over a symbolic range


def test_prove_prints_the_prefix_theorems_and_their_controls(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["prove", "--scheduler", "stallfree.prefix:small_blocks", "--methods", "z3"]
    assert main(base) == 0
    assert "3 of 3 claims hold" in capsys.readouterr().out
    assert main([*base, "--fault", "CACHED-NOT-CHARGED"]) == 1
    out = capsys.readouterr().out
    assert "ChargeCached.first_chunk" in out and "BROKEN" in out
