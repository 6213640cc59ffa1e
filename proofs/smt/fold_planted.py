"""Look-ahead schedulers, the negative controls of FOLD (`code_fold`, `fold_stepwise`): subclasses of the
reference, in its fields, whose admission reads the line beyond its head. Each admits a shorter prompt
LOOK places behind the head first, so that its decision about the head depends on a request after it.

- `EarlyLookAhead` looks one place behind (LOOK = 1): a state of three requests shows it.
- `LateLookAhead` looks three places behind (LOOK = 3): it needs four waiting requests, past the
  symbolic check's N = 3, so only the stepwise check at N = 12 refutes it.
"""

from __future__ import annotations

from stallfree.reference import Scheduler
from stallfree.spec.types import Plan


class _LookAhead(Scheduler):
    look = 0

    def schedule(self) -> Plan:
        line = list(self._waiting.values())
        if len(line) > self.look and line[self.look].request.prompt_len < line[0].request.prompt_len:
            self._waiting.move_to_end(line[self.look].rid, last=False)  # the short one to the head, those
            # it passed behind it
        return super().schedule()


class EarlyLookAhead(_LookAhead):
    """Admits the second in line first when its prompt is shorter than the head's."""

    look = 1


class LateLookAhead(_LookAhead):
    """Admits the fourth in line first when its prompt is shorter than the head's."""

    look = 3
