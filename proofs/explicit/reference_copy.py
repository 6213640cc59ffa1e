"""The model checker's copy of a reference scheduler (`stallfree.reference.Scheduler`), registered
with `clone`: what a field-by-field deep copy makes, 1.3 to 1.5 times faster than `clone`'s generic
walk (benchmarks/proofs_modelcheck.py), and the only way to copy the compiled core (scripts/compiled.sh),
whose classes cannot be built field by field. It knows which of the reference's containers point at
one request: each sequence is copied once, and every container of the copy points at its copy.
Subclasses are not copied here (their fields of their own are not known): `clone` walks them.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from stallfree.reference import Scheduler
from stallfree.reference.sequence import Sequence
from stallfree.reference.step import Step

Memo = dict[int, Any]


def copy_scheduler(s: Scheduler, memo: Memo) -> Scheduler:
    """A copy of `s` sharing nothing that changes with it; `memo` as `clone`'s (and `copy.deepcopy`'s)."""
    config = s.config
    new = Scheduler(config.token_budget, config.max_seqs, config.kv_tokens)
    memo[id(s)] = new
    new._waiting = deque([_twin(seq, memo) for seq in s._waiting])
    new._partial = {rid: _twin(seq, memo) for rid, seq in s._partial.items()}
    new._live = live = {rid: _twin(seq, memo) for rid, seq in s._live.items()}
    new._ready = {rid: live[rid].decode for rid in s._ready}  # every ready request is live
    new._finishing = {step: [_twin(seq, memo) for seq in seqs] for step, seqs in s._finishing.items()}
    new._free_kv = s._free_kv
    step = s._step
    new._step = Step(step.number, step.plan, {rid: _twin(seq, memo) for rid, seq in step.cancelled.items()},
                     {rid: (_twin(seq, memo), phase) for rid, (seq, phase) in step.ended.items()})
    return new


def _twin(seq: Sequence, memo: Memo) -> Sequence:
    """`seq`'s copy in one copy (`memo`): made on first sight, then the same one."""
    twin: Sequence | None = memo.get(id(seq))
    if twin is None:
        twin = memo[id(seq)] = Sequence(seq.request, seq.num_prefilled, seq.first_token_step)
    return twin
