"""The contract of static batching, the policy continuous batching replaced: a teaching baseline.

A static batch is formed only when nothing runs: the step that finds the scheduler empty admits the
waiting requests first come first served while a slot, their KV and budget are free, and then the
batch is closed: no request joins it until every request in it has finished. Inside the batch the
budget is spent as the contract's policy spends it (decodes first, then the partial prompts).

What changes against the reference's contract:

- WORK-CONSERVING is left out: while a batch runs, budget goes unused with the waiting head fitting in
  a free slot and free KV. That is the cost static batching pays, and the reference's contract names
  it: judged under `RULES`, a static batch breaks WORK-CONSERVING and only it.
- BATCH-CONSERVING widens it: budget is left unused only with the batch served in full and, when
  nothing runs, the waiting head blocked or absent (so the batch, once formed, is as full as fits).
- BATCH-CLOSED is new: no admission in a step that begins with a request running.

Every other rule reads the same (a closed batch still decodes first and chunks its prompts).
"""

from __future__ import annotations

from ..contract import Contract
from ..reservation.contract import ContractMonitor, keeping
from ..reservation.facts import StepFacts
from ..reservation.rules import head_blocked, running_served
from ..reservation.shadow import Shadow
from ..rule import Kind, Rule


def batch_closed(s: Shadow, f: StepFacts) -> str | None:
    """BATCH-CLOSED, judged on the plan: admissions only in a step that begins with nothing running."""
    if not f.admitted or not s.running:
        return None
    batch = sorted(s.running)
    return f"admitted rid {f.admitted[0].track.rid} while the batch {batch[:5]} still runs"


def batch_conserving(s: Shadow, f: StepFacts) -> str | None:
    """BATCH-CONSERVING, judged on the plan: unused budget only with the batch served in full, and,
    when nothing ran at the step's start, the waiting head blocked or absent."""
    return running_served(s, f) or (None if s.running else head_blocked(s, f))


RULES_OF_STATIC = (
    Rule("BATCH-CLOSED", Kind.POLICY,
         "a request is admitted only in a step that begins with no request running: a batch, once formed, "
         "takes no request until every request in it has finished.",
         plan_check=batch_closed),
    Rule("BATCH-CONSERVING", Kind.POLICY,
         "budget is left unused only when nothing more of the batch may run (every ready request decoded, "
         "every partial prompt given all it has left) and, in a step that begins with nothing running, the "
         "waiting head is blocked (no slot, not enough free KV) or there is none.",
         plan_check=batch_conserving),
)

STATIC_CONTRACT = Contract(
    "static", keeping("WORK-CONSERVING", extra=RULES_OF_STATIC),
    widens=(("WORK-CONSERVING", "BATCH-CONSERVING"),), monitor=ContractMonitor,
    scheduler="stallfree.variants.static:StaticBatching", faults="stallfree.faults.static:STATIC_FAULTS",
    policies=(("static", "stallfree.variants.static:StaticBatching"),),  # static batching: the teaching baseline
)
