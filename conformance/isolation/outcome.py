"""What one run of one workload through the target came to: it held, or the first thing that broke.

`rule` names what broke: a rule ID, PROTOCOL (the plain protocol was not spoken), CRASH (the target
raised), or TIMEOUT (a call did not return in time). Outcomes cross the worker's pipe as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

# CRASH: the target raised where the protocol has no place for an exception; TIMEOUT: a call to the
# target did not return within the per-call timeout; KIT_ERROR: a bug in stallfree itself, never the
# target's fault: reported, not hidden.
from stallfree.spec.verdict import CRASH, KIT_ERROR, REFUSED, TIMEOUT

# REFUSED: the factory refused the config with ValueError or TypeError (an engine that cannot run a
# budget below its slots, say): the workload is not judged, and the config is reported as refused.
__all__ = ["CRASH", "KIT_ERROR", "REFUSED", "TIMEOUT", "Outcome"]


@dataclass(frozen=True, slots=True)
class Outcome:
    rule: str | None = None  # None: every checked rule held
    step: int | None = None
    message: str = ""
    call: str = ""  # the protocol call in progress when it broke: add(...), schedule(), complete()
    traceback: str = ""  # the target's traceback, for CRASH and TIMEOUT
    steps: int = 0  # steps judged
    adds: int = 0  # add() calls judged
    stopped_at_bound: bool = False  # PROGRESS not checked and work was still pending at the bound
    # A rule already found broken broke again in this run: the run was judged up to that step only
    # (past it, the kit's model of the scheduler may no longer match the scheduler).
    cut_by: str | None = None
    # Whether the scheduler showed an int `free_kv` after every step judged (rule KV's return check
    # needs it); None when no step was judged.
    free_kv_shown: bool | None = None
    # Rule -> how often the run's judged steps reached its premise (`stallfree.spec.rule.Premise`), for
    # the checked rules that have one: a rule whose premise no run reached was not exercised.
    exercised: dict[str, int] = field(default_factory=dict)

    @property
    def held(self) -> bool:
        return self.rule is None

    def to_json(self) -> dict[str, Any]:
        """Every field by name: not dataclasses.asdict, which copies each value deeply (the worker answers
        each run so)."""
        return {name: getattr(self, name) for name in FIELDS}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        return cls(**data)


FIELDS = tuple(f.name for f in fields(Outcome))
