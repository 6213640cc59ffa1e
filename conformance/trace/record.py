"""Recording any plain-protocol scheduler's run of a workload as a JSON Lines trace (see `tracefile`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import IO, Any

from stallfree.spec import Arrival, Cancel, Monitor, RunStats, StepFacts, Workload, play
from stallfree.spec.reservation.facts import stops

from .tracefile import TraceWriter


def record_trace(
    workload: Workload, factory: Callable[..., Any], out: IO[str], rules: Iterable[str] | None = (),
    meta: dict[str, Any] | None = None,
) -> RunStats:
    """Play `workload` through `factory`, writing each step to `out` as it happens. By default no rule
    is checked (only the protocol), so a wrong scheduler's whole run is recorded, for check-trace to
    judge. The end line is written when the run ends with every request finished."""
    writer = TraceWriter(out, workload.config, meta)

    def on_add(a: Arrival, accepted: bool) -> None:
        writer.offered(a.rid, a.prompt_len, a.max_new, accepted)

    def on_cancel(c: Cancel, accepted: bool, pending: bool) -> None:
        if accepted:
            writer.cancelled(c.rid, pending)

    def on_step(monitor: Monitor, facts: StepFacts) -> None:
        writer.step(facts.step, facts.plan, facts.emitted, [t.rid for t in facts.finished], stops(facts))

    counts = play(workload, factory, rules, on_step, on_add, on_cancel=on_cancel)
    if counts.stopped_at_bound is None:
        writer.end()
    return counts
