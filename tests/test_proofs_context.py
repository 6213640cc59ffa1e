"""proofs/smt/context.py: an obligation's own Z3 context, built whole even when a Ctrl-C lands."""

from __future__ import annotations

import os
import signal

import pytest
import z3

from stallfree.proofs.smt import context

REAL_CONTEXT = z3.Context


def _interrupted_build(built: list[z3.Context]) -> z3.Context:
    os.kill(os.getpid(), signal.SIGINT)  # lands as the construction begins
    ctx = REAL_CONTEXT()
    built.append(ctx)
    return ctx


def test_a_ctrl_c_while_a_context_is_built_is_delivered_once_it_is_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[z3.Context] = []
    monkeypatch.setattr(z3, "Context", lambda: _interrupted_build(built))
    with pytest.raises(KeyboardInterrupt):
        context.fresh_context()
    assert len(built) == 1 and built[0].owner  # whole: its __del__ has what it needs
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler put back


def test_without_the_hold_the_ctrl_c_lands_before_the_context_is_made() -> None:
    built: list[z3.Context] = []  # the negative control: what fresh_context prevents
    with pytest.raises(KeyboardInterrupt):
        _interrupted_build(built)
    assert built == []


def test_a_solver_in_its_own_context_answers_on_translated_facts() -> None:
    x = z3.Int("x")
    ctx = context.fresh_context()
    solver = context.solver_for(ctx, 1_000, x > 2, x < 4)
    assert solver.ctx is ctx and solver.check() == z3.sat and solver.model().eval(x.translate(ctx)).as_long() == 3
    solver.add((x < 3).translate(ctx))
    assert solver.check() == z3.unsat
