"""CrossHair contracts on the paged scheduler, checked by `crosshair check --analysis_kind=asserts`
as the reference's are (`contracts`): leading asserts are preconditions, the asserts of the `keeps_*`
body are postconditions named by the rule they check. The bodies take the scheduler factory, so the
planted targets at the end run the same postconditions on a paged fault, which CrossHair must break.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.faults.paged import AcceptTooLarge, LeakOnEnd
from stallfree.paged import Scheduler, blocks_for

LIMIT = 24
MAX_BLOCK = 4
MAX_BLOCKS = 8
MAX_BUDGET = 8

Factory = Callable[..., Any]


def paged(block_size: int, watermark: int) -> Factory:
    def make(token_budget: int, max_seqs: int, kv_tokens: int) -> Scheduler:
        return Scheduler(token_budget, max_seqs, kv_tokens, block_size=block_size, watermark=watermark)

    return make


def paged_add_accepts_exactly_what_fits(block_size: int, num_blocks: int, watermark: int, prompt_len: int,
                                        max_new: int) -> None:
    """NEVER-FIT: add() refuses a request exactly when its peak in blocks exceeds the pool less the
    watermark, and a refusal changes nothing."""
    assert 1 <= block_size <= MAX_BLOCK and 1 <= num_blocks <= MAX_BLOCKS and 0 <= watermark <= num_blocks
    assert 1 <= prompt_len <= LIMIT and 1 <= max_new <= LIMIT
    keeps_never_fit(paged(block_size, watermark), block_size * num_blocks, prompt_len, max_new)


def paged_lone_request_runs_to_its_end(token_budget: int, block_size: int, num_blocks: int, watermark: int,
                                       prompt_len: int, max_new: int) -> None:
    """LONE-BLOCK, BLOCKS, TOKENS-KEPT, PREEMPT-BOUND for one request NEVER-FIT accepts: it runs alone
    with no preemption, holds ceil(tokens in KV / block_size) blocks every step, emits max_new tokens
    within prompt_len + max_new steps, and leaves every block free."""
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= block_size <= MAX_BLOCK and 1 <= num_blocks <= MAX_BLOCKS
    assert 0 <= watermark < num_blocks and 1 <= prompt_len <= LIMIT and 1 <= max_new <= LIMIT
    assert blocks_for(prompt_len + max_new - 1, block_size) <= num_blocks - watermark
    keeps_lone_run(paged(block_size, watermark), token_budget, block_size * num_blocks, prompt_len, max_new)


def keeps_never_fit(factory: Factory, kv_tokens: int, prompt_len: int, max_new: int) -> None:
    s = factory(4, 2, kv_tokens)
    fits = blocks_for(prompt_len + max_new - 1, s.block_size) <= s.num_blocks - s.watermark
    try:
        s.add(0, prompt_len, max_new)
    except ValueError:
        assert not fits, "NEVER-FIT: add() refused a request that fits the pool less the watermark"
        assert s.waiting == () and s.free_blocks == s.num_blocks, "NEVER-FIT: a refusal changed the state"
        return
    assert fits, "NEVER-FIT: add() accepted a request whose peak exceeds the pool less the watermark"


def keeps_lone_run(factory: Factory, token_budget: int, kv_tokens: int, prompt_len: int, max_new: int) -> None:
    s = factory(token_budget, 1, kv_tokens)
    s.add(0, prompt_len, max_new)
    emitted = 0
    for _ in range(prompt_len + max_new):
        plan = s.schedule()
        assert plan.preempted == (), "PREEMPT-BOUND: a request running alone was preempted"
        emitted += len(s.complete(plan))
        if s.is_idle:
            break
        p = s.progress(0)
        assert p.num_blocks == blocks_for(p.num_computed, s.block_size), "BLOCKS: held blocks are not ceil(KV / bs)"
        assert s.free_blocks == s.num_blocks - p.num_blocks, "BLOCKS: free blocks are not the pool less the held"
    assert s.is_idle, "PROGRESS: a lone request did not finish within prompt_len + max_new steps"
    assert emitted == max_new, "TOKENS-KEPT: a lone request did not emit exactly max_new tokens"
    assert s.free_blocks == s.num_blocks, "BLOCKS: not every block is free at the end"


# -- planted: the same postconditions on paged faults, which CrossHair must break ------------------


def planted_never_fit(block_size: int, num_blocks: int, watermark: int, prompt_len: int, max_new: int) -> None:
    """NEVER-FIT on AcceptTooLarge."""
    assert 1 <= block_size <= MAX_BLOCK and 1 <= num_blocks <= MAX_BLOCKS and 0 <= watermark <= num_blocks
    assert 1 <= prompt_len <= LIMIT and 1 <= max_new <= LIMIT
    keeps_never_fit(AcceptTooLarge, 2 * num_blocks, prompt_len, max_new)


def planted_blocks(token_budget: int, num_blocks: int, prompt_len: int, max_new: int) -> None:
    """BLOCKS on LeakOnEnd (2-token blocks, a watermark of one block)."""
    assert 1 <= token_budget <= MAX_BUDGET and 2 <= num_blocks <= MAX_BLOCKS
    assert 1 <= prompt_len <= LIMIT and 1 <= max_new <= LIMIT
    assert blocks_for(prompt_len + max_new - 1, 2) <= num_blocks - 1
    keeps_lone_run(LeakOnEnd, token_budget, 2 * num_blocks, prompt_len, max_new)
