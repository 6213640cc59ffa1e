"""The Quint spec's rows of `stallfree prove --methods quint`: the simulation of the contract (every
rule's invariant at once), the replay of its traces on the reference, and with `--fault RULE` the
planted bug of RULE, which must be found. A simulation proves nothing: its verdicts are "not refuted"
or "BROKEN", never "holds"."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from stallfree.spec.verdict import Verdict

from . import replay, simulate

STEPS, SAMPLES, SEED = 30, 100, 1  # `prove`'s bound: 100 traces of 30 actions


def rows(row: Callable[..., Any], fault_rule: str | None, say: Callable[[str], None]) -> list[Any]:
    try:
        simulate.quint_command()
    except simulate.QuintMissing as missing:
        return [row("QUINT SPEC", "Quint simulator", "-", Verdict.UNKNOWN, 0.0, str(missing))]
    if fault_rule is not None:
        return [_planted_row(row, fault_rule, say)]
    say(f"quint: every invariant of the contract, {SAMPLES} traces of {STEPS} steps")
    sim = simulate.simulate(simulate.CONTRACT, tuple(simulate.INVARIANTS), STEPS, SAMPLES, SEED, num_traces=SAMPLES)
    bound = sim.bound
    partial = "; partial: " + "; ".join(f"{r} {why}" for r, why in simulate.PARTIAL.items())
    if sim.violated:
        return [row("QUINT SPEC", "Quint simulator", bound, Verdict.BROKEN, sim.seconds, sim.output[-4000:])]
    out = [row("QUINT SPEC", "Quint simulator", bound, Verdict.NOT_REFUTED, sim.seconds,
               f"{len(simulate.INVARIANTS)} invariants ({', '.join(simulate.INVARIANTS)}): no violation "
               f"(a simulation, nothing proved){partial}")]
    config = simulate.constants(simulate.CONTRACT)
    started = time.perf_counter()
    for trace in sim.traces:
        replayed = replay.replay(trace, config)
        if replayed.disagreement is not None:
            return [*out, row("QUINT = REFERENCE", "trace replay", bound, Verdict.BROKEN,
                              time.perf_counter() - started, replayed.disagreement)]
    return [*out, row("QUINT = REFERENCE", "trace replay", bound, Verdict.NOT_REFUTED, time.perf_counter() - started,
                      f"the reference planned, emitted and left what the spec did in all {len(sim.traces)} traces")]


def _planted_row(row: Callable[..., Any], rule: str, say: Callable[[str], None]) -> Any:
    module = simulate.PLANTED.get(rule)
    if module is None:
        return row(rule, "Quint simulator", "-", f"n/a (no planted Quint module for {rule})", 0.0, "")
    say(f"quint: {module}, invariant {rule}")
    sim = simulate.simulate(module, (rule,), STEPS, SAMPLES, SEED, num_traces=1)
    if not sim.violated:
        return row(rule, f"Quint simulator ({module})", sim.bound, Verdict.NOT_REFUTED, sim.seconds,
                   "the planted bug was not found")
    replayed = replay.replay(sim.traces[0], simulate.constants(module))
    return row(rule, f"Quint simulator ({module})", sim.bound, Verdict.BROKEN, sim.seconds,
               f"{sim.output[-3000:]}\nreplayed on the reference: {replayed.disagreement or 'no disagreement'}")
