"""The paged scheduler: continuous batching with a token budget and chunked prefill, KV in blocks.

The step order is the reference's (decodes, then the partial prompt, then FCFS admission); memory
is what differs. KV is held in blocks of `block_size` tokens, taken as tokens are computed (a chunk
of prompt positions, a decode) and returned when the request finishes, stops, is cancelled or is
preempted. The rules it keeps are stated, and checked, in `stallfree.spec.paged.rules`.

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
An ended request is dropped, as the reference drops it: memory is bounded by what waits and runs, and
a rid is free again once its request ended. `_ended` keeps the final progress of the requests that
ended in the last completed step (or were cancelled since), and no older record.
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


class PagedSequence:
    """One request inside the paged scheduler.

    While waiting or in prefill its tokens in KV and its emitted tokens are stored. Once ready they
    are derived, as the reference derives its token counts: every ready request is decoded every step
    (READY-WITHIN-BUDGET), so after the step `ready_at` each completed step adds one of each."""

    __slots__ = ("admitted_at", "base_computed", "base_emitted", "boundary_at", "decode", "finish_at",
                 "num_blocks", "num_preemptions", "ready_at", "request", "stored_computed", "stored_emitted",
                 "target")

    def __init__(self, request: Request) -> None:
        self.request = request
        self.stored_computed = 0  # tokens in KV in this residency, while not ready
        self.stored_emitted = 0  # tokens emitted, while not ready (kept across preemptions)
        self.num_blocks = 0  # blocks held (allocated for the planned step too)
        self.num_preemptions = 0
        self.target = request.prompt_len  # tokens this residency's prefill covers: prompt + emitted
        self.admitted_at: int | None = None  # the step of its latest admission; None while waiting
        self.ready_at: int | None = None  # steps completed when it became ready; None while not ready
        self.base_computed = 0  # tokens in KV then (its target)
        self.base_emitted = 0  # tokens emitted then (the completing chunk's among them)
        self.boundary_at: int | None = None  # the step whose decode needs its next block (ready, not finished by then)
        self.finish_at: int | None = None  # the step that emits its last token (while ready)
        self.decode = Entry(request.rid, 1)

    @property
    def rid(self) -> int:
        return self.request.rid

    def computed(self, num_steps: int) -> int:
        ready_at = self.ready_at
        return self.stored_computed if ready_at is None else self.base_computed + num_steps - ready_at

    def emitted(self, num_steps: int) -> int:
        ready_at = self.ready_at
        return self.stored_emitted if ready_at is None else self.base_emitted + num_steps - ready_at


class Scheduler:
    """Spends a budget of `token_budget` tokens a step over a pool of kv_tokens // block_size blocks."""

    design = "paged"  # judged by the paged monitor against the paged rules (stallfree.spec.registry)

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
        self._sequences: dict[int, PagedSequence] = {}  # accepted and not ended, by rid
        self._ended: dict[int, PagedProgress] = {}  # ended in the last completed step or cancelled since
        self._waiting: deque[PagedSequence] = deque()  # preempted ones first, then arrivals; arrival order
        self._running: dict[int, PagedSequence] = {}  # admitted; admission order
        self._partial: dict[int, PagedSequence] = {}  # running, prefill not done
        self._ready: dict[int, Entry] = {}  # running, prefill done: rid -> its decode entry
        self._boundary: dict[int, dict[int, PagedSequence]] = {}  # step -> ready ones whose decode then needs a block
        self._finishing: dict[int, dict[int, PagedSequence]] = {}  # step -> ready ones emitting their last token then
        self._cancelling: set[int] = set()  # cancelled while a plan was pending
        self._free_blocks = self.num_blocks
        self._num_steps = 0
        self._planned: PagedPlan | None = None
        self.num_preemptions = 0  # in all
        self.num_recomputed = 0  # prefill tokens run again after preemptions

    # -- the plain protocol, plus stop and cancel ------------------------------------------------

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        """Queue a request at the back of the waiting line. Raises (state unchanged) if it is invalid,
        if its rid is taken by a request that has not ended, or if its peak KV could never fit the pool
        less the watermark (NEVER-FIT)."""
        request = Request(rid, prompt_len, max_new)
        if rid in self._sequences:
            raise InvalidField(f"rid {rid} is already taken by an earlier request")
        peak = blocks_for(prompt_len + max_new - 1, self.block_size)
        if not self.fits_alone(peak):
            raise InvalidField(
                f"prompt_len + max_new - 1 = {prompt_len + max_new - 1} KV tokens need {peak} blocks of "
                f"{self.block_size}; the pool has {self.num_blocks} less a watermark of {self.watermark} "
                f"(rid {rid} could never run alone)"
            )
        seq = PagedSequence(request)
        self._sequences[rid] = seq
        self._ended.pop(rid, None)
        self._waiting.append(seq)

    def schedule(self) -> PagedPlan:
        """Plan the next step: preempt if the decodes need it, take the blocks the step computes into,
        admit the requests it starts. Raises if a plan is still pending."""
        if self._planned is not None:
            raise ProtocolError(
                f"schedule() called again before complete(): the plan for step {self._planned.step} "
                "is still pending"
            )
        step = self._num_steps
        left = self.config.token_budget
        # 1. Decodes first, one token for every ready request; those whose last block is full need a
        #    new one. While they need more than are free, preempt the newest running request.
        growing = self._boundary.get(step, {})
        preempted: list[int] = []
        while len(growing) > self._free_blocks:
            victim = self.victim()
            self.preempt(victim)  # leaves `growing` if it was there
            preempted.append(victim.rid)
        if len(self._ready) > left:
            raise AssertionError(f"READY-WITHIN-BUDGET: {len(self._ready)} ready requests, budget {left}")
        for seq in self._boundary.pop(step, {}).values():
            seq.num_blocks += 1
            self._free_blocks -= 1
            self._mark_boundary(seq, step + self.block_size)
        entries = list(self._ready.values())
        left -= len(entries)
        # 2. Then the partial prompt (at most one), as much as the budget and the free blocks allow.
        for seq in self._partial.values():
            n = min(seq.target - seq.stored_computed, left, self.room(seq))
            if n > 0:
                self.take(seq, n)
                entries.append(Entry(seq.rid, n))
                left -= n
        # 3. Then the waiting head, first come first served, while budget, a slot and the watermark
        #    allow; never in a step that preempted. The head blocks those behind it.
        if not preempted:
            self.admit_waiting(step, left, entries)
        self._planned = self.plan_of(step, entries, preempted)
        return self._planned

    def admit_waiting(self, step: int, left: int, entries: list[Entry]) -> None:
        """FCFS admission of the waiting head while `left` budget, a slot and the watermark allow."""
        while left and self._waiting and len(self._running) < self.config.max_seqs:
            seq = self._waiting[0]
            n = min(seq.target, left)
            if not self.admits(seq, n):
                break
            self._waiting.popleft()
            self._running[seq.rid] = self._partial[seq.rid] = seq
            seq.admitted_at = step
            self.take(seq, n)
            entries.append(Entry(seq.rid, n))
            left -= n

    def plan_of(self, step: int, entries: list[Entry], preempted: list[int]) -> PagedPlan:
        """The plan of `step`: its entries and the rids it preempted, newest first."""
        return PagedPlan(step, tuple(entries), tuple(preempted))

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
        step = self._num_steps
        emitted = list(self._ready)  # every ready request was decoded; each emits a token
        chunks = plan.entries[len(emitted):]
        stops = self._stops(stopped, emitted, self._completing(chunks)) if stopped else ()
        if self._ended:
            self._ended = {}
        for rid, n in chunks:  # the prefill chunks, after the decodes
            seq = self._partial[rid]
            seq.stored_computed += n
            if seq.stored_computed >= seq.target:
                emitted.append(rid)
                self._become_ready(seq, step)
        self.prefilled(chunks)
        self._planned = None
        self._num_steps += 1  # the ends below see the step's tokens counted
        for seq in self._finishing.pop(step, {}).values():
            self.end(seq, Phase.FINISHED)
        for rid in stops:
            if rid in self._sequences:
                self.end(self._sequences[rid], Phase.STOPPED)
        for rid in sorted(self._cancelling):
            if rid in self._sequences:
                self.end(self._sequences[rid], Phase.CANCELLED)
        self._cancelling.clear()
        return tuple(emitted)

    def cancel(self, rid: object) -> None:
        """Withdraw request `rid`: a waiting one leaves the line, a running one is never planned again
        and its blocks are freed. With a plan pending it takes effect when complete() runs (the
        pending step still runs it). Raises KeyError, naming the rid and its state, for a rid never
        accepted, ended (a second cancel among them) or already being cancelled."""
        if type(rid) is not int:
            raise TypeError(f"cancel(rid): rid must be an int, got {type(rid).__name__} {rid!r:.40}")
        seq = self._sequences.get(rid)
        if seq is None:
            ended = self._ended.get(rid)
            raise KeyError(f"cancel({rid!r}): " + (f"it is {ended.phase.value}" if ended else
                                                   "it is not waiting or running (never accepted, or ended)"))
        if rid in self._cancelling:
            raise KeyError(f"cancel({rid!r}): it is already being cancelled (when the pending plan completes)")
        if self._planned is not None:
            self._cancelling.add(rid)
        else:
            self.end(seq, Phase.CANCELLED)

    # -- the decisions, one method each ------------------------------------------------------------

    def fits_alone(self, peak: int) -> bool:
        """NEVER-FIT: a request whose peak is `peak` blocks can run alone under the watermark."""
        return peak <= self.num_blocks - self.watermark

    def last_token(self, seq: PagedSequence) -> int:
        """TOKENS-KEPT: the token count at which `seq` finishes: max_new, however often it was preempted."""
        return seq.request.max_new

    def victim(self) -> PagedSequence:
        """The request to preempt: the newest running one (PREEMPT-ORDER)."""
        return self._running[next(reversed(self._running))]

    def preempt(self, seq: PagedSequence) -> None:
        """RECOMPUTE: free `seq`'s blocks and forget its KV, keeping its emitted tokens; it waits again, at the
        head of the line (PREEMPT-ORDER), and its next residency prefills its prompt plus those tokens."""
        emitted = seq.emitted(self._num_steps)
        self._remove_running(seq)
        seq.stored_computed = 0
        seq.stored_emitted = emitted
        seq.target = seq.request.prompt_len + emitted
        seq.num_preemptions += 1
        self.num_preemptions += 1
        self.num_recomputed += seq.target
        self._waiting.appendleft(seq)

    def room(self, seq: PagedSequence) -> int:
        """PARTIAL-NEXT (paged reading): tokens the partial `seq` can compute with the blocks it holds and the
        free ones."""
        return (seq.num_blocks + self._free_blocks) * self.block_size - seq.stored_computed

    def admits(self, seq: PagedSequence, n: int) -> bool:
        """WATERMARK: the first chunk of `n` tokens leaves at least `watermark` blocks free."""
        return self._free_blocks - blocks_for(n, self.block_size) >= self.watermark

    def take(self, seq: PagedSequence, n: int) -> None:
        """BLOCKS: allocate the blocks the partial `seq` needs to compute `n` more tokens."""
        more = blocks_for(seq.stored_computed + n, self.block_size) - seq.num_blocks
        if more > 0:
            seq.num_blocks += more
            self._free_blocks -= more

    def prefilled(self, chunks: tuple[Entry, ...]) -> None:
        """The step's prefill `chunks` are in KV, before the step's ends (nothing to record here; the
        prefix-caching design registers the blocks they filled)."""

    def end(self, seq: PagedSequence, phase: Phase) -> None:
        """BLOCKS: `seq` finished, stopped or was cancelled: its blocks return now, and its record goes (its final
        progress readable until the next complete())."""
        if seq.rid in self._running:
            self._remove_running(seq)
        else:
            self._waiting.remove(seq)
        del self._sequences[seq.rid]
        r = seq.request
        self._ended[seq.rid] = PagedProgress(seq.rid, phase, r.prompt_len, r.max_new, seq.stored_computed,
                                             seq.stored_emitted, 0, seq.num_preemptions)

    # -- helpers ---------------------------------------------------------------------------------

    def _become_ready(self, seq: PagedSequence, step: int) -> None:
        """The chunk of `step` completed `seq`'s prefill and emitted a token: from now on it decodes."""
        del self._partial[seq.rid]
        self._ready[seq.rid] = seq.decode
        seq.ready_at = step + 1
        seq.base_computed = seq.stored_computed
        seq.base_emitted = seq.stored_emitted + 1
        seq.finish_at = finish_at = step + self.last_token(seq) - seq.base_emitted
        self._finishing.setdefault(finish_at, {})[seq.rid] = seq
        # Its first decode is at step + 1 with base_computed tokens in KV; it needs a block at the first
        # step t >= step + 1 with (base_computed + t - ready_at) % block_size == 0.
        self._mark_boundary(seq, step + 1 + (-seq.base_computed) % self.block_size)

    def _mark_boundary(self, seq: PagedSequence, at: int) -> None:
        """`seq`'s decode at step `at` needs a new block, unless it has finished by then."""
        if at <= seq.finish_at:  # type: ignore[operator]  # a ready request's finish_at is set
            seq.boundary_at = at
            self._boundary.setdefault(at, {})[seq.rid] = seq
        else:
            seq.boundary_at = None

    def _remove_running(self, seq: PagedSequence) -> None:
        del self._running[seq.rid]
        self._partial.pop(seq.rid, None)
        if self._ready.pop(seq.rid, None) is not None:
            for table, at in ((self._boundary, seq.boundary_at), (self._finishing, seq.finish_at)):
                waiting_then = None if at is None else table.get(at)
                if waiting_then is not None:
                    waiting_then.pop(seq.rid, None)
            seq.stored_computed = seq.computed(self._num_steps)
            seq.stored_emitted = seq.emitted(self._num_steps)
            seq.ready_at = seq.boundary_at = seq.finish_at = None
        self._free_blocks += seq.num_blocks
        seq.num_blocks = 0

    def _completing(self, chunks: tuple[Entry, ...]) -> list[int]:
        """The rids whose prefill the planned `chunks` complete: with the decodes, those a stop may name."""
        partial = self._partial
        return [rid for rid, n in chunks if partial[rid].stored_computed + n >= partial[rid].target]

    def _stops(self, stopped: object, emitted: list[int], completing: list[int]) -> list[int]:
        try:
            rids: list[int] = list(stopped)  # type: ignore[call-overload]
        except TypeError:
            kind = type(stopped).__name__
            raise InvalidField(f"stopped must be an iterable of rids, got {kind} {stopped!r:.80}") from None
        for rid in rids:
            if type(rid) is not int or (rid not in self._ready and rid not in completing):
                raise ProtocolError(f"stopped names rid {rid!r}, which emitted no token in step {self._num_steps}")
        return rids

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

    @property
    def ended(self) -> tuple[int, ...]:
        """Rids of the requests that ended in the last completed step (or were cancelled since)."""
        return tuple(self._ended)

    def progress(self, rid: int) -> PagedProgress:
        """Where request `rid` is: waiting or running, or how it ended if that was in the last completed
        step (or a cancel since). Raises KeyError naming the rid for any other: no record of requests
        that ended before is kept, so that memory stays bounded by what waits and runs."""
        seq = self._sequences.get(rid)
        if seq is None:
            ended = self._ended.get(rid)
            if ended is not None:
                return ended
            raise KeyError(f"rid {rid!r} is not waiting or running, and did not end in the last step "
                           "(never accepted, or ended earlier: no record of it is kept)")
        if rid in self._partial:
            phase = Phase.PARTIAL
        elif rid in self._ready:
            phase = Phase.READY
        else:
            phase = Phase.WAITING
        r = seq.request
        n = self._num_steps
        return PagedProgress(rid, phase, r.prompt_len, r.max_new, seq.computed(n), seq.emitted(n),
                             seq.num_blocks, seq.num_preemptions)


def small_blocks(token_budget: int, max_seqs: int, kv_tokens: int) -> Scheduler:
    """The paged scheduler with blocks of 2 tokens and no watermark: the factory the kit, the model
    checker and the state machine use on small pools, where 16-token blocks would refuse everything."""
    return Scheduler(token_budget, max_seqs, kv_tokens, block_size=2, watermark=0)


small_blocks.design = "paged"  # type: ignore[attr-defined]
