"""The contract of block-aligned chunks: every prefill chunk but a prompt's last is a whole number of
KV blocks, so that each chunk's KV writes start and end on a block boundary.

A chunk of a prompt with `remaining` positions left, given `left` budget tokens, is then

    aligned_chunk(remaining, left, b) = remaining             if remaining <= left  (it finishes the prompt)
                                      = left - left mod b     otherwise             (whole blocks; maybe 0)

The contract keeps every rule of `RULES` but two, which it widens:

- PARTIAL-NEXT becomes ALIGNED-PARTIAL-NEXT: a partial prompt is owed its aligned chunk rather than
  min(remaining, left), and a prompt left unfinished ends the step's prefill (nothing is admitted
  after it, so at most one prompt is ever partial, as under the reference);
- WORK-CONSERVING becomes ALIGNED-WORK-CONSERVING: besides the reference's reasons, budget may be
  left unused while a prompt waits on alignment, and then fewer than b tokens of it: at most b - 1,
  the `left mod b` that no whole block fits (the bound is reached: `left = k*b + b - 1`).

and adds ALIGNED (every chunk that does not finish its prompt is a multiple of b). BUDGET,
DECODE-FIRST, FCFS and the safety rules stand unchanged. A budget below b is refused by the
schedulers of this contract: a prompt longer than the budget could never take an aligned chunk.
"""

from __future__ import annotations

from functools import cache

from ..contract import Contract
from ..reservation.contract import ContractMonitor, keeping
from ..reservation.facts import StepFacts
from ..reservation.rules import waiting_head
from ..reservation.shadow import Shadow, Track
from ..rule import Kind, Rule

DEFAULT_BLOCK_SIZE = 16  # tokens per KV block (vLLM's default block size)
LISTED_BLOCKS = (16, 32, 64, 128, 256)  # the block sizes stallfree.variants.aligned ships a scheduler for


def aligned_chunk(remaining: int, left: int, block_size: int) -> int:
    """The chunk the contract owes a prompt with `remaining` positions left and `left` budget."""
    if remaining <= left:
        return remaining
    return max(0, left - left % block_size)


def unfinished(f: StepFacts) -> bool:
    """Some chunk of this step leaves its prompt unfinished."""
    return any(not c.completes for c in f.prefills)


def waiting_head_fits(s: Shadow, f: StepFacts) -> tuple[int, int] | None:
    """The waiting head after this step's admissions, as (rid, prompt_len), if a slot and its whole
    reservation are free for it; None when there is none or it is blocked."""
    head: Track | None = waiting_head(s, f)
    if head is None:
        return None
    num_running = len(s.running) + len(f.admitted)
    if num_running < s.config.max_seqs and head.request.reservation <= s.free_kv - f.admitted_reservation:
        return head.rid, head.request.prompt_len
    return None


def aligned_violation(f: StepFacts, b: int) -> str | None:
    """ALIGNED, judged on the plan: every chunk that leaves its prompt unfinished is whole blocks."""
    for c in f.prefills:
        if not c.completes and c.n % b:
            return (
                f"rid {c.track.rid} gets a chunk of {c.n} at position {c.start} that does not finish its "
                f"{c.track.request.prompt_len}-token prompt; {c.n} is not a multiple of the block size {b}"
            )
    return None


def partial_next_violation(s: Shadow, f: StepFacts, b: int) -> str | None:
    """ALIGNED-PARTIAL-NEXT, judged on the plan: each partial prompt's chunk against its aligned chunk."""
    if not s.prefilling:
        return None
    left = s.config.token_budget - f.num_decode_tokens
    got_by_rid = {c.track.rid: c.n for c in f.chunks}
    for track in s.prefilling.values():
        expected = aligned_chunk(track.num_remaining_prompt, max(left, 0), b)
        got = got_by_rid.get(track.rid, 0)
        if got != expected:
            return (
                f"partial rid {track.rid} ({track.num_remaining_prompt} prompt tokens left) got {got} with "
                f"{left} budget left; its aligned chunk (block size {b}) is {expected}"
            )
        left -= expected
        if expected < track.num_remaining_prompt and f.admitted:
            return (
                f"admitted rid {f.admitted[0].track.rid} while partial rid {track.rid} is left with "
                f"{track.num_remaining_prompt - expected} prompt tokens unfinished"
            )
    return None


def work_conserving_violation(s: Shadow, f: StepFacts, b: int) -> str | None:
    """ALIGNED-WORK-CONSERVING, judged on the plan: unused budget only with nothing more to run,
    or fewer than b tokens of it while a prompt waits on alignment."""
    unused = s.config.token_budget - f.num_tokens
    if unused <= 0:
        return None
    if len(f.decodes) < s.num_ready:
        return f"{unused} budget token(s) unused while a ready request got no decode"
    if unfinished(f) or len(f.chunks) < len(s.prefilling):
        if unused >= b:
            return (
                f"{unused} budget token(s) unused while a prompt is left unfinished; a whole block of "
                f"{b} more fits"
            )
        return None
    head = waiting_head_fits(s, f)
    if head is None:
        return None
    rid, prompt_len = head
    if prompt_len <= unused or unused >= b:
        return (
            f"{unused} budget token(s) unused while waiting rid {rid} ({prompt_len}-token prompt) fits a slot "
            f"and its reservation, and its aligned first chunk (block size {b}) is "
            f"{aligned_chunk(prompt_len, unused, b)}"
        )
    return None


def rules(block_size: int) -> tuple[Rule, ...]:
    """The three rules of the aligned contract for blocks of `block_size` tokens."""
    b = block_size

    def aligned(s: Shadow, f: StepFacts) -> str | None:
        """ALIGNED, judged on the plan (see `aligned_violation`)."""
        return aligned_violation(f, b)

    def partial_next(s: Shadow, f: StepFacts) -> str | None:
        """ALIGNED-PARTIAL-NEXT, judged on the plan (see `partial_next_violation`)."""
        return partial_next_violation(s, f, b)

    def work_conserving(s: Shadow, f: StepFacts) -> str | None:
        """ALIGNED-WORK-CONSERVING, judged on the plan (see `work_conserving_violation`)."""
        return work_conserving_violation(s, f, b)

    return (
        Rule("ALIGNED", Kind.SAFETY,
             "every prefill chunk that does not finish its prompt is a multiple of the block size b, so every chunk "
             "starts on a block boundary.",
             plan_check=aligned, design="aligned"),
        Rule("ALIGNED-PARTIAL-NEXT", Kind.POLICY,
             "partial prompts take the budget left after decodes before any admission, oldest first, each its "
             "aligned chunk: the rest of its prompt if that fits, else the most whole blocks that fit (maybe none); "
             "a prompt left unfinished ends the step's prefill.",
             plan_check=partial_next, design="aligned"),
        Rule("ALIGNED-WORK-CONSERVING", Kind.POLICY,
             "budget is left unused only when nothing more may run (every ready request decoded, every partial "
             "given its aligned chunk, the waiting head blocked or absent) or while a prompt waits on alignment, "
             "and then at most b - 1 tokens of it.",
             plan_check=work_conserving, design="aligned"),
    )


@cache
def contract(block_size: int = DEFAULT_BLOCK_SIZE) -> Contract:
    """The aligned contract for blocks of `block_size` tokens."""
    return Contract(
        f"aligned-{block_size}",
        keeping("PARTIAL-NEXT", "WORK-CONSERVING", extra=rules(block_size)),
        widens=(("PARTIAL-NEXT", "ALIGNED-PARTIAL-NEXT"), ("WORK-CONSERVING", "ALIGNED-WORK-CONSERVING")),
        min_budget=block_size, monitor=ContractMonitor,
        scheduler=f"stallfree.variants.aligned:Aligned{block_size}" if block_size in LISTED_BLOCKS else "",
        policies=((f"aligned-{block_size}", f"stallfree.variants.aligned:Aligned{block_size}"),)
        if block_size in LISTED_BLOCKS else (),
    )
