"""How a request ends, in every design: the reason (length, stop,
cancel), the step it ended on, and the words a message says it with."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class Reason(Enum):
    """How a request ended: the finish reasons of a serving API, and a cancel."""

    LENGTH = "length"  # it emitted its max_new-th token
    STOP = "stop"  # its token in this step ended it (an end-of-sequence token or a stop string)
    CANCEL = "cancel"  # cancel() took effect


class Ending(NamedTuple):
    """When and how a request ended. `step` is the step it ended on; a cancel that took effect
    between steps ended it at the step about to be planned. None: a record that keeps the ended rids
    compactly (a trace checker's, `conformance/trace/endings.py`) no longer knows it."""

    step: int | None
    reason: Reason


def ended_when(ending: Ending) -> str:
    """'at step N', or that the step is no longer kept, for a message."""
    return "long ago (its step is no longer kept)" if ending.step is None else f"at step {ending.step}"


ENDED = {Reason.LENGTH: "finished", Reason.STOP: "stopped", Reason.CANCEL: "was cancelled"}
