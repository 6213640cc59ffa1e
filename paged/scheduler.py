"""The paged scheduler: continuous batching with a token budget and chunked prefill, KV in blocks.

The step order is the reference's (decodes, then the partial prompt, then FCFS admission); memory
is what differs. KV is held in blocks of `block_size` tokens, taken as tokens are computed (a chunk
of prompt positions, a decode) and returned when the request finishes, stops, is cancelled or is
preempted. The rules it keeps are stated, and checked, in `stallfree.spec.paged_rules`.

The decisions, each named by the rule that states it:
- WATERMARK: the waiting head is admitted only while the free blocks left after its first chunk stay
  at or above `watermark` (default 1% of the pool, rounded down): room for the running requests to grow.
- PREEMPT-ORDER: when this step's decodes need more new blocks than are free, the newest running
  request is preempted (its blocks freed, its KV forgotten, its emitted tokens kept), then the next
  newest, until they fit; the victims return to the head of the waiting line in their original order.
  A step that preempted admits nothing (as vLLM's scheduler does): the blocks it freed went to decodes.
- RECOMPUTE: a re-admitted request prefills its prompt plus the tokens it already emitted, in chunks;
  the chunk that completes them emits its next token.
- NEVER-FIT: add() refuses a request whose peak KV, ceil((prompt_len + max_new - 1) / block_size)
  blocks, exceeds the pool less the watermark. Hence PREEMPT-BOUND: the oldest running request is
  never preempted, and a request alone always gets its next block (see docs/paged.md for the proof).

State: `_running` holds admitted requests in admission order (oldest first); each is in `_partial`
or `_ready`. The running requests, then the waiting ones, are always in arrival order (one line).
"""

from __future__ import annotations

from collections import deque

from stallfree.spec.errors import InvalidField, ProtocolError
from stallfree.spec.types import Config, Entry, Request, check_int

from .plan import PagedPlan
from .progress import PagedProgress, Phase

DEFAULT_BLOCK_SIZE = 16  # tokens a block (vLLM's default)
WATERMARK_FRACTION = 100  # the default watermark: 1 block in 100 (vLLM's 0.01)


def blocks_for(num_tokens: int, block_size: int) -> int:
    """Blocks that hold `num_tokens` tokens: ceil(num_tokens / block_size)."""
    return -(-num_tokens // block_size)


def default_watermark(num_blocks: int) -> int:
    return num_blocks // WATERMARK_FRACTION


class Seq:
    """One request inside the paged scheduler."""

    __slots__ = ("admitted_at", "decode", "num_blocks", "num_computed", "num_emitted", "num_preemptions",
                 "request", "target")

    def __init__(self, request: Request) -> None:
        self.request = request
        self.num_computed = 0  # tokens in KV in this residency
        self.num_emitted = 0  # tokens emitted, kept across preemptions
        self.num_blocks = 0  # blocks held (allocated for the planned step too)
        self.num_preemptions = 0
        self.target = request.prompt_len  # tokens this residency's prefill covers: prompt + emitted
        self.admitted_at = -1
        self.decode = Entry(request.rid, 1)

    @property
    def rid(self) -> int:
        return self.request.rid

    @property
    def is_ready(self) -> bool:
        return self.num_computed >= self.target


class Scheduler:
    """Spends a budget of `token_budget` tokens a step over a pool of kv_tokens // block_size blocks."""

    design = "paged"  # judged by the paged monitor against the paged rules (stallfree.spec.designs)

    def __init__(
        self, token_budget: int, max_seqs: int, kv_tokens: int,
        block_size: int = DEFAULT_BLOCK_SIZE, watermark: int | None = None,
    ) -> None:
        self.config = Config(token_budget, max_seqs, kv_tokens)
        self.block_size = check_int("block_size", block_size)
        self.num_blocks = kv_tokens // block_size
        if watermark is None:
            watermark = default_watermark(self.num_blocks)
        self.watermark = check_int("watermark", watermark, minimum=0)
        if watermark > self.num_blocks:
            raise InvalidField(f"watermark must be <= the pool's {self.num_blocks} blocks, got {watermark}")
        self._sequences: dict[int, Seq] = {}  # accepted and not ended, by rid
        self._ended: dict[int, Phase] = {}  # rid -> FINISHED, STOPPED or CANCELLED
        self._waiting: deque[Seq] = deque()  # preempted ones first, then arrivals; arrival order
        self._running: dict[int, Seq] = {}  # admitted; admission order
        self._partial: dict[int, Seq] = {}  # running, prefill not done
        self._ready: dict[int, Seq] = {}  # running, prefill done
        self._cancelling: set[int] = set()  # cancelled while a plan was pending
        self._free_blocks = self.num_blocks
        self._num_steps = 0
        self._planned: PagedPlan | None = None
        self.num_preemptions = 0  # in all
        self.num_recomputed = 0  # prefill tokens run again after preemptions

    # -- the plain protocol, plus stop and cancel ------------------------------------------------

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        """Queue a request at the back of the waiting line. Raises (state unchanged) if it is invalid,
        if its rid is taken, or if its peak KV could never fit the pool less the watermark (NEVER-FIT)."""
        request = Request(rid, prompt_len, max_new)
        if rid in self._sequences or rid in self._ended:
            raise InvalidField(f"rid {rid} is already taken by an earlier request")
        peak = blocks_for(prompt_len + max_new - 1, self.block_size)
        if not self.fits_alone(peak):
            raise InvalidField(
                f"prompt_len + max_new - 1 = {prompt_len + max_new - 1} KV tokens need {peak} blocks of "
                f"{self.block_size}; the pool has {self.num_blocks} less a watermark of {self.watermark} "
                f"(rid {rid} could never run alone)"
            )
        seq = Seq(request)
        self._sequences[rid] = seq
        self._waiting.append(seq)

    def schedule(self) -> PagedPlan:
        """Plan the next step: preempt if the decodes need it, take the blocks the step computes into,
        admit the requests it starts. Raises if a plan is still pending."""
        if self._planned is not None:
            raise ProtocolError(
                f"schedule() called again before complete(): the plan for step {self._planned.step} "
                "is still pending"
            )
        left = self.config.token_budget
        # 1. Decodes first, one token for every ready request; those whose last block is full need a
        #    new one. While they need more than are free, preempt the newest running request.
        need = sum(1 for seq in self._ready.values() if self.needs_block(seq))
        preempted: list[int] = []
        while need > self._free_blocks:
            victim = self.victim()
            if victim.rid in self._ready and self.needs_block(victim):
                need -= 1
            self.preempt(victim)
            preempted.append(victim.rid)
        if len(self._ready) > left:
            raise AssertionError(f"READY-WITHIN-BUDGET: {len(self._ready)} ready requests, budget {left}")
        entries = []
        for seq in self._ready.values():
            self.take(seq, 1)
            entries.append(seq.decode)
        left -= len(entries)
        # 2. Then the partial prompt (at most one), as much as the budget and the free blocks allow.
        for seq in self._partial.values():
            n = min(seq.target - seq.num_computed, left, self.room(seq))
            if n > 0:
                self.take(seq, n)
                entries.append(Entry(seq.rid, n))
                left -= n
        # 3. Then the waiting head, first come first served, while budget, a slot and the watermark
        #    allow; never in a step that preempted. The head blocks those behind it.
        while not preempted and left and self._waiting and len(self._running) < self.config.max_seqs:
            seq = self._waiting[0]
            n = min(seq.target, left)
            if not self.admits(seq, n):
                break
            self._waiting.popleft()
            self._running[seq.rid] = self._partial[seq.rid] = seq
            seq.admitted_at = self._num_steps
            self.take(seq, n)
            entries.append(Entry(seq.rid, n))
            left -= n
        self._planned = PagedPlan(self._num_steps, tuple(entries), tuple(preempted))
        return self._planned

    def complete(self, plan: PagedPlan, stopped: object = ()) -> tuple[int, ...]:
        """Record that `plan` ran. Returns the rids that emitted a token: the decodes, then the
        requests whose prefill this step completed. `stopped` names rids whose token this step ended
        them (EOS or a stop string); each must have emitted in this step. Raises, state unchanged,
        on a plan that is not the pending one or a bad `stopped`."""
        if self._planned is None:
            raise ProtocolError(
                f"complete() without a pending plan: call schedule() first (steps completed: {self._num_steps})"
            )
        if plan is not self._planned and plan != self._planned:
            raise ProtocolError(
                f"complete() got a plan that is not the pending one (pending: step "
                f"{self._planned.step}, got: {plan!r:.120})"
            )
        emitted = [rid for rid, n in plan.entries if self._emits(self._sequences[rid], n)]
        stops = self._stops(stopped, emitted)
        for rid, n in plan.entries:
            seq = self._sequences[rid]
            was_ready = seq.is_ready
            seq.num_computed += n
            if was_ready:
                seq.num_emitted += 1
            elif seq.is_ready:
                del self._partial[rid]
                self._ready[rid] = seq
                seq.num_emitted += 1
        for rid in emitted:
            seq = self._sequences[rid]
            if self.is_done(seq):
                self.end(seq, Phase.FINISHED)
            elif rid in stops:
                self.end(seq, Phase.STOPPED)
        for rid in sorted(self._cancelling):
            if rid in self._sequences:
                self.end(self._sequences[rid], Phase.CANCELLED)
        self._cancelling.clear()
        self._planned = None
        self._num_steps += 1
        return tuple(emitted)

    def cancel(self, rid: object) -> None:
        """Withdraw request `rid`: a waiting one leaves the line, a running one is never planned again
        and its blocks are freed. With a plan pending it takes effect when complete() runs (the
        pending step still runs it). Raises KeyError, naming the rid and its state, for a rid never
        accepted, already ended (a second cancel among them) or already being cancelled."""
        seq = self._sequences.get(rid)  # type: ignore[arg-type]
        if seq is None:
            state = self._ended.get(rid)  # type: ignore[arg-type]
            raise KeyError(f"cancel({rid!r}): " + (f"it is {state.value}" if state else "it was never accepted"))
        if rid in self._cancelling:
            raise KeyError(f"cancel({rid!r}): it is already being cancelled (when the pending plan completes)")
        if self._planned is not None:
            self._cancelling.add(seq.rid)
        else:
            self.end(seq, Phase.CANCELLED)

    # -- the decisions, one method each ------------------------------------------------------------

    def fits_alone(self, peak: int) -> bool:
        """NEVER-FIT: a request whose peak is `peak` blocks can run alone under the watermark."""
        return peak <= self.num_blocks - self.watermark

    def is_done(self, seq: Seq) -> bool:
        """`seq` emitted its max_new-th token."""
        return seq.num_emitted == seq.request.max_new

    def needs_block(self, seq: Seq) -> bool:
        """A decode of `seq` computes into a new block: its blocks are full."""
        return seq.num_computed == seq.num_blocks * self.block_size

    def victim(self) -> Seq:
        """The request to preempt: the newest running one (PREEMPT-ORDER)."""
        return self._running[next(reversed(self._running))]

    def preempt(self, seq: Seq) -> None:
        """Free `seq`'s blocks and forget its KV; it waits again, at the head of the line."""
        self._remove_running(seq)
        seq.num_computed = 0
        seq.target = seq.request.prompt_len + seq.num_emitted
        seq.num_preemptions += 1
        self.num_preemptions += 1
        self.num_recomputed += seq.num_emitted + seq.request.prompt_len
        self._waiting.appendleft(seq)

    def room(self, seq: Seq) -> int:
        """Tokens `seq` can compute with the blocks it holds and the free ones."""
        return (seq.num_blocks + self._free_blocks) * self.block_size - seq.num_computed

    def admits(self, seq: Seq, n: int) -> bool:
        """WATERMARK: the first chunk of `n` tokens leaves at least `watermark` blocks free."""
        return self._free_blocks - blocks_for(n, self.block_size) >= self.watermark

    def take(self, seq: Seq, n: int) -> None:
        """Allocate the blocks `seq` needs to compute `n` more tokens."""
        more = blocks_for(seq.num_computed + n, self.block_size) - seq.num_blocks
        if more > 0:
            seq.num_blocks += more
            self._free_blocks -= more

    def end(self, seq: Seq, phase: Phase) -> None:
        """`seq` finished, stopped or was cancelled: its blocks return now."""
        if seq.rid in self._running:
            self._remove_running(seq)
        else:
            self._waiting.remove(seq)
        del self._sequences[seq.rid]
        self._ended[seq.rid] = phase

    # -- helpers ---------------------------------------------------------------------------------

    def _remove_running(self, seq: Seq) -> None:
        del self._running[seq.rid]
        self._partial.pop(seq.rid, None)
        self._ready.pop(seq.rid, None)
        self._free_blocks += seq.num_blocks
        seq.num_blocks = 0

    @staticmethod
    def _emits(seq: Seq, n: int) -> bool:
        return seq.is_ready or seq.num_computed + n >= seq.target

    def _stops(self, stopped: object, emitted: list[int]) -> set[int]:
        try:
            rids = list(stopped)  # type: ignore[call-overload]
        except TypeError:
            raise InvalidField(f"stopped must be an iterable of rids, got {type(stopped).__name__} {stopped!r:.80}") from None
        emitted_set = set(emitted)
        for rid in rids:
            if rid not in emitted_set:
                raise ProtocolError(f"stopped names rid {rid!r}, which emitted no token in step {self._num_steps}")
        return set(rids)

    # -- read-only views -----------------------------------------------------------------------

    @property
    def waiting(self) -> tuple[Request, ...]:
        """Requests not running, in line order: preempted ones first, in arrival order."""
        return tuple(seq.request for seq in self._waiting)

    @property
    def running(self) -> tuple[Request, ...]:
        """Admitted requests, in admission order."""
        return tuple(seq.request for seq in self._running.values())

    @property
    def free_blocks(self) -> int:
        """Blocks not held by a running request."""
        return self._free_blocks

    @property
    def num_steps(self) -> int:
        return self._num_steps

    @property
    def is_idle(self) -> bool:
        return not self._waiting and not self._running

    def progress(self, rid: int) -> PagedProgress:
        """Where request `rid` is. Raises KeyError naming the rid if it was never accepted, or ended."""
        seq = self._sequences.get(rid)
        if seq is None:
            state = self._ended.get(rid)
            raise KeyError(f"rid {rid!r} " + (f"is {state.value}" if state else "was never accepted"))
        if rid in self._partial:
            phase = Phase.PARTIAL
        elif rid in self._ready:
            phase = Phase.READY
        else:
            phase = Phase.WAITING
        r = seq.request
        return PagedProgress(rid, phase, r.prompt_len, r.max_new, seq.num_computed, seq.num_emitted,
                             seq.num_blocks, seq.num_preemptions)


def small_blocks(token_budget: int, max_seqs: int, kv_tokens: int) -> Scheduler:
    """The paged scheduler with blocks of 2 tokens and no watermark: the factory the kit, the model
    checker and the state machine use on small pools, where 16-token blocks would refuse everything."""
    return Scheduler(token_budget, max_seqs, kv_tokens, block_size=2, watermark=0)


small_blocks.design = "paged"  # type: ignore[attr-defined]
