"""Look-ahead policies in the transcription, the negative controls of FOLD (induction, any N)
(`fold_induction`): the reference's policy, except that a waiting request yields its turn when the
request LOOK places behind it waits with a shorter prompt, so its admission reads a request after it.

- `EarlyPeek` looks one place behind: FOLD at N = 2 already refutes it.
- `LatePeek` looks three places behind: a fold at N = 3 (the chained theorems' own FOLD premise
  passes), refuted at N = 4, so only the any-N row, which tries N up to 4 once the frame refuses it,
  shows it is no fold.
- `FarPeek` looks five places behind: past every N tried, so the any-N row reads unknown (the frame
  refuses it, nothing refutes it), never holds.
"""

from __future__ import annotations

import z3

from .policy import Draft, Policy
from .symbolic import SymRequest, SymState


class _Peek(Policy):
    look = 0

    def fits(self, r: SymRequest, s: SymState, d: Draft) -> z3.BoolRef:
        line = s.requests
        at = next(k for k, other in enumerate(line) if other is r)
        if at + self.look >= len(line):
            return super().fits(r, s, d)
        behind = line[at + self.look]
        return z3.And(super().fits(r, s, d), z3.Not(z3.And(behind.waiting, behind.prompt_len < r.prompt_len)))


class EarlyPeek(_Peek):
    """Yields to a shorter prompt waiting one place behind."""

    look = 1


class LatePeek(_Peek):
    """Yields to a shorter prompt waiting three places behind."""

    look = 3


class FarPeek(_Peek):
    """Yields to a shorter prompt waiting five places behind."""

    look = 5
