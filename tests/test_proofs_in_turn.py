"""`proofs.smt.in_turn`: the one "prove each part in turn, then assume it" of the Z3 theorems. Each
verdict is shown on parts that earn it: holds only when every part is proved, BROKEN with the
refuted part's model, unknown (never holds) when Z3 gives no answer (forced with a solver that
decides nothing, not by the clock)."""

from __future__ import annotations

import pytest

from stallfree.spec.verdict import Verdict

z3 = pytest.importorskip("z3")

from stallfree.proofs.smt.in_turn import prove_in_turn, refuted  # noqa: E402


def _solver(*hypothesis: object) -> z3.Solver:
    solver = z3.Solver()
    solver.add(*hypothesis)
    return solver


def test_every_part_proved_holds_and_each_is_assumed_after() -> None:
    x, y = z3.Ints("x y")
    solver = _solver(x >= 1, y == x + 1)
    parts = [x >= 0, y >= 2, y > x]
    turn = prove_in_turn(solver, parts)
    assert turn.verdict is Verdict.HOLDS and turn.part is None
    held = [str(a) for a in solver.assertions()]
    assert all(str(p) in held for p in parts), held  # proved, then asserted for the next
    assert solver.num_scopes() == 0


def test_a_refuted_part_is_broken_names_its_index_and_keeps_its_negation() -> None:
    x, y = z3.Ints("x y")
    solver = _solver(x >= 1, y == x + 1)
    turn = prove_in_turn(solver, [x >= 0, y >= 3, y > x], keep_model=True)
    assert turn.verdict is Verdict.BROKEN and turn.part == 1
    assert solver.num_scopes() == 1 and str(z3.Not(y >= 3)) in [str(a) for a in solver.assertions()]
    assert solver.model().eval(y).as_long() < 3  # what a minimiser over solver.assertions() starts from


def test_without_keep_model_a_refuted_part_leaves_the_solver_as_before_it() -> None:
    x, y = z3.Ints("x y")
    solver = _solver(x >= 1, y == x + 1)
    assert prove_in_turn(solver, [x >= 0, y >= 3]).verdict is Verdict.BROKEN
    assert solver.num_scopes() == 0 and [str(a) for a in solver.assertions()][-1] == str(x >= 0)


def test_parts_after_a_refuted_one_are_not_tried() -> None:
    x = z3.Int("x")
    tried: list[int] = []

    def parts():  # type: ignore[no-untyped-def]
        for i, part in enumerate([x >= 0, x >= 5, x >= 0]):
            tried.append(i)
            yield part

    assert prove_in_turn(_solver(x >= 1), parts()).verdict is Verdict.BROKEN
    assert tried == [0, 1]


def test_no_answer_is_unknown_not_holds() -> None:
    x, y = z3.Ints("x y")
    solver = z3.Tactic("skip").solver()  # a solver that decides nothing: every answer is unknown
    solver.add(x >= 1, y == x + 1)
    turn = prove_in_turn(solver, [y >= 2, y > x])
    assert turn.verdict is Verdict.UNKNOWN and turn.part == 0  # a true part, but not proved: not holds


def test_refuted_maps_each_solver_answer_to_its_verdict() -> None:
    assert [refuted(z3.unsat), refuted(z3.sat), refuted(z3.unknown)] == [Verdict.HOLDS, Verdict.BROKEN,
                                                                          Verdict.UNKNOWN]
