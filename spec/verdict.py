"""Verdicts: what a check says about one claim (a rule, a theorem, a contract), the same six words in
every command's report and JSON; and the IDs that are reported where a rule ID would be, but are not
rules of the contract.

A claim reads `holds` only when it was checked on what was run and nothing broke it. Anything less
says so: not checked (left out of the selection), not judged (checked, but the run stopped, or never
reached what the rule judges), not refuted (searched, no counterexample found, nothing proved), unknown
(the method gave no answer).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CLAIM_WIDTH = 16  # the claim column of every verdict table


class Verdict(StrEnum):
    """The JSON spelling of each verdict is its value."""

    HOLDS = "holds"
    BROKEN = "broken"
    NOT_CHECKED = "not checked"
    NOT_JUDGED = "not judged"
    NOT_REFUTED = "not refuted"
    UNKNOWN = "unknown"

    @property
    def label(self) -> str:
        """The text word: BROKEN in capitals, so a broken claim stands out in a column of verdicts."""
        return "BROKEN" if self is Verdict.BROKEN else self.value


# What is reported in place of a rule ID when no rule of the contract judged what went wrong.
PROTOCOL = "PROTOCOL"
CRASH = "CRASH"
TIMEOUT = "TIMEOUT"
KIT_ERROR = "KIT-ERROR"

NOT_RULES: dict[str, str] = {
    PROTOCOL: "the scheduler speaks the plain protocol: add() returns or refuses with ValueError/TypeError, "
              "schedule() returns (rid, n) pairs of ints for added requests, complete(plan) returns the rids "
              "that emitted a token",
    CRASH: "no call of the plain protocol raises, except add() refusing a request with ValueError or TypeError",
    TIMEOUT: "every call of the plain protocol returns",
    KIT_ERROR: "(a bug in stallfree itself, not in the target: please report it)",
}


@dataclass(frozen=True, slots=True)
class Judgement:
    """One claim's verdict and the facts behind it ("12 steps", "at step 3: ...", the reason it is not
    judged). `data` holds machine-readable facts for the JSON (step, line, ...)."""

    claim: str
    verdict: Verdict
    detail: str = ""
    data: tuple[tuple[str, Any], ...] = ()

    def line(self, width: int = CLAIM_WIDTH) -> str:
        head = f"{self.claim:<{width}} {self.verdict.label}"
        if not self.detail:
            return head
        joiner = " " if self.detail.startswith(("(", "at ")) else ": "
        return head + joiner + self.detail

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "detail": self.detail, **dict(self.data)}


def lines(judgements: Iterable[Judgement], width: int = CLAIM_WIDTH) -> list[str]:
    return [j.line(width) for j in judgements]


def as_json(judgements: Iterable[Judgement]) -> dict[str, dict[str, Any]]:
    """{claim: {"verdict": ..., "detail": ..., ...}}, in the judgements' order."""
    return {j.claim: j.to_json() for j in judgements}


def any_broken(judgements: Iterable[Judgement]) -> bool:
    return any(j.verdict is Verdict.BROKEN for j in judgements)
