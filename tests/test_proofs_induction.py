"""Any N by induction: for each loop of the step, Z3 proves initiation, consecution and exit over
arrays of any length, on the reference policy; each fails on a wrong policy, among them an
admission cap of 12 and a policy that stalls, both of which every one-iteration theorem lets pass."""

from __future__ import annotations

import pytest

from stallfree.proofs.smt import induction
from stallfree.proofs.smt.loops import LOOP_THEOREMS, prove_loop


@pytest.mark.parametrize("loop", induction.INDUCTIONS, ids=lambda loop: loop.name)
def test_each_loop_is_proved_by_induction_and_fails_on_its_control(loop: induction.LoopInduction) -> None:
    proved = induction.prove_induction(loop)
    assert proved.result == "holds", proved.counterexample
    refuted = induction.prove_induction(loop, induction.control(loop))
    assert refuted.result == "counterexample", (loop.control, refuted.result)
    assert refuted.counterexample is not None and refuted.counterexample["obligation"]


def test_the_cap_and_the_stall_pass_the_one_iteration_theorems_but_not_the_induction() -> None:
    for control, claim in (("CappedAdmissions", "ADMITS"), ("Stalls", "PROGRESS")):
        policy = induction.CONTROLS[control]()
        assert all(prove_loop(t, policy).holds for t in LOOP_THEOREMS)  # what "any N" was before
        loop = next(loop for loop in induction.INDUCTIONS if loop.name.startswith(claim))
        assert induction.prove_induction(loop, policy).result == "counterexample"
