"""Stepping stones for the paged step theorems (`paged_step`), proved first under the same hypothesis,
then assumed (`in_turn.prove_in_turn`), and the terms they share with the step.

PREEMPT-BOUND's second part says: when the running requests' peaks fit the pool, nothing is preempted.
Given the whole step, Z3 has to find on its own that each running request's blocks, with the one its
next decode may take, stay within its peak, and sum that over the requests through the preemption
loop's if-then-else chain: at N = 3 that took seconds, at N = 4 it ran out of time. Stated as
stepping stones, each a fact of one request or one sum, every one proves in milliseconds and the
part that follows is linear arithmetic over them:

- PEAK-ROOM (each request): a running request holds at most its peak blocks, and one fewer when it is
  ready at a block boundary (its decode takes one more): its KV is below prompt_len + max_new - 1.
- POOL-HELD: the free blocks after the cancels and the blocks the running requests hold sum to the pool.
- DECODES-FIT: when the running requests' peaks fit the pool, the decodes at a block boundary need no
  more new blocks than are free.

Each is a fact of the state the step starts from (after the adds and cancels), whatever the policy
does; the claim proved after them is PREEMPT-BOUND's own, unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

if TYPE_CHECKING:
    from .paged_step import PagedRequest, PagedStep, Withdrawn


def peak(r: PagedRequest) -> z3.ArithRef:
    """The request's peak in blocks, ceil((prompt_len + max_new - 1) / bs): the constant NEVER-FIT in
    the invariant defines (named after the request's prompt_len, the same in every state)."""
    return z3.Int(f"{r.prompt_len}.peak")


def at_block_boundary(r: PagedRequest, block_size: int) -> z3.BoolRef:
    """Ready, with its KV filling its last block: its next decode needs a new block."""
    return z3.And(r.ready, r.computed == r.held * block_size)


def decodes_fit(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    """PEAK-ROOM of each request, POOL-HELD, then DECODES-FIT (in that order: each assumed by the next)."""
    s = t.before
    rs = s.requests
    edge = [at_block_boundary(r, s.block_size) for r in rs]
    room = [z3.Implies(r.running, r.held + z3.If(e, 1, 0) <= peak(r)) for r, e in zip(rs, edge, strict=True)]
    pool = s.free + z3.Sum([z3.If(r.running, r.held, 0) for r in rs]) == s.num_blocks
    fit = z3.Sum([z3.If(r.running, peak(r), 0) for r in rs]) <= s.num_blocks
    needs = z3.Sum([z3.If(e, 1, 0) for e in edge])
    return z3.And(*room, pool, z3.Implies(fit, needs <= s.free))
