"""A Z3 context of its own for one obligation, so that its answer does not depend on what earlier proofs
left in Z3's shared main context.

Z3's search over quantified formulas (the loop inductions' invariants) depends on the terms a context
already holds: in one full test run the induction's control `CappedAdmissions` read unknown where every
run of it alone read BROKEN. An obligation translated into a fresh context is solved from the same start
whatever ran before it in the process.

A Ctrl-C that lands while `z3.Context()` is being built leaves a half-made context whose `__del__` then
prints a traceback; the signal is held for the few microseconds of the construction and delivered after.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType
from typing import Any

import z3


def fresh_context() -> z3.Context:
    """A new Z3 context, built with SIGINT held back and delivered once it is whole."""
    if threading.current_thread() is not threading.main_thread():
        return z3.Context()
    held: list[FrameType | None] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(frame)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        ctx = z3.Context()
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        _deliver(previous, held[0])
    return ctx


def _deliver(handler: Any, frame: FrameType | None) -> None:
    """Give a held SIGINT to the handler that was in place, as if it had arrived now."""
    if callable(handler):
        handler(signal.SIGINT, frame)
    elif handler == signal.SIG_DFL:
        os.kill(os.getpid(), signal.SIGINT)
    elif handler is None:  # a handler installed outside Python: take it as the default's Ctrl-C
        raise KeyboardInterrupt


def solver_for(ctx: z3.Context, timeout_ms: int, *facts: z3.BoolRef) -> z3.Solver:
    """A solver in `ctx` holding `facts`, translated from the context they were built in."""
    solver = z3.Solver(ctx=ctx)
    solver.set("timeout", timeout_ms)
    solver.add(*(fact.translate(ctx) for fact in facts))
    return solver
