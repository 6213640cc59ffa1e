"""A module that registers a design of its own on import (the one-slot design "own-slot", its rule
ONE-SLOT), and schedulers under it: one that keeps it, one that breaks it, and two that attack the oracle
(stuck in one C call; swapping the rule's judgement in whatever process runs its calls). Used by
tests/test_hosted_registered.py: the schedulers' calls run hosted although the design is the module's."""

from __future__ import annotations

import ctypes
from typing import Any

from stallfree.reference import Scheduler as Reference
from stallfree.spec import Kind, Rule, Shadow, StepFacts, registry
from stallfree.spec.contract import Contract
from stallfree.spec.reservation.contract import ContractMonitor, keeping

RULE = "ONE-SLOT"
JUDGED = {"on": True}  # what PatchesTheRule turns off, in the process its calls run in


def one_slot(s: Shadow, f: StepFacts) -> str | None:
    """ONE-SLOT: an admission only with nothing running, one at most."""
    if JUDGED["on"] and f.admitted and (s.running or len(f.admitted) > 1):
        return f"admitted rid {f.admitted[-1].track.rid} while {len(s.running) + len(f.admitted) - 1} request(s) run"
    return None


OWN_SLOT = Contract(
    "own-slot", keeping("WORK-CONSERVING", extra=(Rule(RULE, Kind.POLICY, "one request runs at a time.",
                                                      plan_check=one_slot),)),
    widens=(("WORK-CONSERVING", RULE),), monitor=ContractMonitor, design="own-slot",
    scheduler=f"{__name__}:OneSlot",
)
if "own-slot" not in registry.names():
    registry.register(OWN_SLOT)


class OneSlot(Reference):
    design = "own-slot"

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget=token_budget, max_seqs=1, kv_tokens=kv_tokens)


class AllSlots(Reference):
    """Breaks ONE-SLOT: the reference with every slot."""

    design = "own-slot"


class LongCCall(OneSlot):
    def schedule(self) -> Any:
        ctypes.CDLL(None).sleep(3600)  # one C call holding the thread; no signal handler runs meanwhile


class PatchesTheRule(AllSlots):
    """Breaks ONE-SLOT and turns the rule's judgement off where its calls run."""

    def schedule(self) -> Any:
        JUDGED["on"] = False
        return super().schedule()
