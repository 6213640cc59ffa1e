"""The configs the kit explores: a grid that includes the edges of every limit.

A budget of 1 (every chunk one token, every decode the whole step), one slot (requests run one at a
time), KV barely enough for the largest request (admission waits on memory) and KV for everything
(admission waits on slots and budget). A config field the user fixes is held at that value.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from itertools import product

from stallfree.spec import check_int


class KvRoom(Enum):
    """How K is chosen from a workload's requests when the user does not fix it."""

    BARELY = "barely"  # K = the largest reservation: one large request at a time
    TIGHT = "tight"  # K between the largest reservation and twice it
    ROOMY = "roomy"  # K = all reservations together: memory never blocks


BUDGETS = (1, 2, 5, 16, 64)
SLOTS = (1, 2, 4, 16)
KV_ROOMS = tuple(KvRoom)


@dataclass(frozen=True, slots=True)
class Shape:
    """One point of the grid; `kv_tokens` is None when K follows the workload by `kv_room`."""

    token_budget: int
    max_seqs: int
    kv_tokens: int | None
    kv_room: KvRoom

    def describe(self) -> str:
        kv = self.kv_tokens if self.kv_tokens is not None else f"{self.kv_room.value}"
        return f"budget {self.token_budget}, max_seqs {self.max_seqs}, kv {kv}"


def shapes(budget: int | None = None, max_seqs: int | None = None, kv_tokens: int | None = None) -> list[Shape]:
    """The grid, with the fixed fields held: every combination of the edges of the free ones. A fixed
    field that is not an int >= 1 raises, naming it."""
    for name, value in (("token_budget", budget), ("max_seqs", max_seqs), ("kv_tokens", kv_tokens)):
        if value is not None:
            check_int(name, value)
    budgets = BUDGETS if budget is None else (budget,)
    slots = SLOTS if max_seqs is None else (max_seqs,)
    rooms = KV_ROOMS if kv_tokens is None else (KvRoom.BARELY,)
    return [Shape(b, s, kv_tokens, room) for b, s, room in product(budgets, slots, rooms)]
