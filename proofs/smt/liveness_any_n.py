"""LIVENESS (induction, any N): every request finishes within floor(P / B) + D steps of its arrival, for
any number of requests, from two parts, both proved in Z3:

- **(a) the ranking**: `LIVENESS-STEPS (induction, phases chained)` (`liveness_induction`), for any N:
  over a waiting or running r and the requests before it, P and D do not grow and D falls by 1 or P
  by B. Its result is reused when the caller has it (`stallfree prove` proves it once, for its own
  row), else its obligations are discharged here: never a second proof of the same thing.
- **(b) the bound from the ranking** (`liveness_bound`): that step repeated brings r to its end within
  floor(P / B) + D steps (the sequence theorem), and zero tokens left over r's group is r's end.

The row holds only if both hold; BROKEN or unknown names the part, and its obligation, that failed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from stallfree.spec.verdict import Verdict

from .induction import _prove, prove_induction
from .liveness_bound import Falls, bound
from .liveness_induction import LIVENESS_INDUCTIONS
from .liveness_steps import falls
from .policy import Policy
from .theorems import TheoremResult

NAME = "LIVENESS (induction, any N)"
STEPS = LIVENESS_INDUCTIONS[0]  # part (a)
PART_A, PART_B = f"(a) {STEPS.name}", "(b) the bound from the ranking (sequence, zero work)"
CLAIM = ("every waiting or running request finishes within floor(P / B) + D steps of its arrival (P prompt "
         "positions, D tokens of it and the requests ahead of it then), for any N")
ASSUMES = ("assumes: the budget B fixed; weak fairness of Step (always enabled: the executor keeps stepping; "
           "nothing of arrivals); the ranking's premise at every step (PER-REQUEST, FCFS, PARTIAL-YOUNGEST and "
           "KV, each kept for any N by its chain); arrivals join behind r (ADD), so they add nothing to P or D")
TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    seconds: float  # this row's own: part (b), and part (a) only where it was proved here
    detail: str
    counterexample: dict[str, Any] | None = None


def prove(policy: Policy | None = None, steps: TheoremResult | None = None, ranking: Falls = falls,
          timeout_ms: int = TIMEOUT_MS) -> Outcome:
    """The row for `policy` (default the reference's). `steps`: part (a)'s result, if already proved for
    this policy; `ranking`: the step part (b) starts from (a wrong one is a negative control)."""
    policy = Policy() if policy is None else policy
    began = time.perf_counter()
    if steps is None:
        steps = prove_induction(STEPS, policy, timeout_ms)
    elif steps.policy != policy.name:
        raise ValueError(f"steps: a result for policy {steps.policy!r}, not {policy.name!r}")
    derived = _prove(bound(ranking), NAME, policy, timeout_ms)
    seconds = time.perf_counter() - began
    for part, result in ((PART_A, steps), (PART_B, derived)):
        if result.verdict is not Verdict.HOLDS:
            failed = {"part": part, **(result.counterexample or {})}
            return Outcome(result.verdict, seconds, _failed(part, result), failed)
    return Outcome(Verdict.HOLDS, seconds, f"{CLAIM}: {PART_A} holds, {PART_B} holds (initiation, consecution, "
                                           f"exit of each); {ASSUMES}")


def _failed(part: str, result: TheoremResult) -> str:
    """Why the row is not `holds`: the part, its verdict and the obligation that failed or went undecided."""
    why = result.counterexample or {}
    where = why.get("obligation", "?")
    extra = [f"its premise {why['premise not met']} not met"] if "premise not met" in why else []
    extra += [f"{k} {why[k]}" for k in ("premise", "vacuous", "reason") if k in why]
    said = "not decided" if result.verdict is Verdict.UNKNOWN else "refuted"
    return f"{part}: {said} at {where}" + (f" ({'; '.join(extra)})" if extra else "") + ": nothing proved of the bound"
