"""Prove each part in turn, then assume it for the next: how every Z3 theorem here with several parts
(a goal's conjuncts, a theorem's lemmas, a cancel obligation's stepping stones, END's parts of the
invariant, a paged step claim's conjuncts and stepping stones) is decided. A long conjunction of
per-request facts is far easier for Z3 one fact at a time, each assumed once proved. Sound: each
part is proved under what the solver held and the parts before it, every one of them proved.

The answer is a `spec.verdict` verdict from the start: holds (every part proved), BROKEN (Z3 found a
model breaking a part), unknown (Z3 gave no answer on a part: nothing is claimed of it, nor of the
parts after it, which were not tried)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import z3

from stallfree.spec.verdict import Verdict

from .symbolic import check


@dataclass(frozen=True, slots=True)
class InTurn:
    """What proving the parts in turn found: the verdict, the index of the part that decided it (None
    when every part was proved), and the last part tried."""

    verdict: Verdict
    part: int | None = None
    # The last part tried (the one that decided it, or the last proved). A caller keeps the InTurn
    # where the loop this replaced kept its loop variable (to the end of the function): Z3 then frees
    # its terms in the same order as before, and a theorem refuted later in the same run gets the same
    # model (which model Z3 returns depends on its terms' ids, reused as terms are freed).
    last: z3.BoolRef | None = None


def refuted(answer: z3.CheckSatResult) -> Verdict:
    """Z3's answer to "is there a model of the hypothesis where the claim fails?" as a verdict: unsat
    (none) holds, sat BROKEN, anything else (a timeout, a give-up) unknown."""
    if answer == z3.unsat:
        return Verdict.HOLDS
    if answer == z3.sat:
        return Verdict.BROKEN
    return Verdict.UNKNOWN


def prove_in_turn(solver: z3.Solver, parts: Iterable[z3.BoolRef], keep_model: bool = False) -> InTurn:
    """Prove each of `parts` in order under what `solver` holds, asserting each once proved. On the
    first part not proved the solver is left as it was before that part, or, with `keep_model`,
    holding that part's negation (one scope pushed), so that `solver.model()` is the counterexample
    when the verdict is BROKEN (the caller then drops the solver or pops that scope)."""
    part: z3.BoolRef | None = None
    for index, part in enumerate(parts):
        solver.push()
        solver.add(z3.Not(part))
        verdict = refuted(check(solver))
        if verdict is not Verdict.HOLDS:
            if not keep_model:
                solver.pop()
            return InTurn(verdict, index, part)
        solver.pop()
        solver.add(part)
    return InTurn(Verdict.HOLDS, None, part)
