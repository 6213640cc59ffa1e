"""Planted bugs for ADD (code) (`code_add`), each a subclass of the reference whose add() errs in one
way, keeping the reference's fields so that the code theorems speak of it. With the contracts'
`PlantedNeverFit` (accepts a reservation of exactly K + 1) they are the theorem's negative controls:

- `AddAtFront` (FCFS): queues a new request at the front of the line instead of its back.
- `ForgetEndedFirst` (NEVER-FIT): drops the ended record of the rid before its checks, so a refused
  add() still changes what `ended` and `progress` show.
- `TakeTakenRid` (NEVER-FIT): accepts a rid that a waiting request holds, replacing it.
"""

from __future__ import annotations

from stallfree.reference import Scheduler
from stallfree.reference.sequence import Sequence
from stallfree.spec.types import Request, admissible


class AddAtFront(Scheduler):
    """Queues each accepted request at the front of the line."""

    breaks = "FCFS"

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        super().add(rid, prompt_len, max_new)
        self._waiting.move_to_end(rid, last=False)  # the request just queued at the back goes to the front


class ForgetEndedFirst(Scheduler):
    """Forgets the ended record of the rid before deciding whether to accept it."""

    breaks = "NEVER-FIT"

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        self._step.ended.pop(rid, None)
        super().add(rid, prompt_len, max_new)


class TakeTakenRid(Scheduler):
    """Accepts a rid a waiting request holds: the new request replaces the old one in the line."""

    breaks = "NEVER-FIT"

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        if rid not in self._waiting:
            super().add(rid, prompt_len, max_new)
            return
        sequence = Sequence(admissible(Request(rid, prompt_len, max_new), self.config))
        del self._waiting[rid]
        self._waiting[rid] = sequence


PLANTED = (AddAtFront, ForgetEndedFirst, TakeTakenRid)
