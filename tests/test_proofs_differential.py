"""The differential test that ties the Z3 model to stallfree's code: on workloads Hypothesis draws,
the Z3 step, evaluated on the reference's state before every step, plans, emits and leaves exactly
what the reference does. A wrong Z3 policy is told apart on a known workload."""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from stallfree.proofs.smt.concrete import Evaluator, compare
from stallfree.proofs.smt.mutants import MUTANTS
from stallfree.spec import Arrival, Config, Workload

SLOTS = 6
EVALUATOR = Evaluator(SLOTS)


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    sizes = draw(st.lists(st.tuples(st.integers(1, 12), st.integers(1, 5)), min_size=1, max_size=SLOTS))
    steps = sorted(draw(st.lists(st.integers(0, 6), min_size=len(sizes), max_size=len(sizes))))
    largest, total = max(p + m for p, m in sizes), sum(p + m for p, m in sizes)
    config = Config(draw(st.integers(1, 8)), draw(st.integers(1, 4)), draw(st.integers(largest, total + 1)))
    return Workload(config, tuple(Arrival(i, p, m, s) for i, ((p, m), s) in enumerate(zip(sizes, steps, strict=True))))


@settings(max_examples=25)
@given(workloads())
def test_z3_step_is_what_the_reference_does(workload: Workload) -> None:
    note(workload.dumps())
    differences = list(compare(workload, EVALUATOR))
    assert not differences, differences[0]


# Budget 3, one request decoding while another's prompt is prefilled: every wrong policy below plans
# this differently from the reference.
KNOWN = Workload(Config(3, 2, 32), (Arrival(0, 1, 4, 0), Arrival(1, 9, 2, 1), Arrival(2, 2, 2, 1)))


@pytest.mark.parametrize("name", ["FreeDecodes", "PartialsBeforeDecodes", "AdmitBeforePartial", "LateFirstToken"])
def test_a_wrong_z3_policy_is_told_apart(name: str) -> None:
    assert not list(compare(KNOWN, EVALUATOR))
    assert list(compare(KNOWN, Evaluator(SLOTS, MUTANTS[name]())))
