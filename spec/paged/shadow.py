"""The paged monitor's shadow: the contract's account of a paged scheduler's state, read only off the
protocol (adds, plans with their preempted rids, emitted rids, stops, cancels), and the facts of
one step. The sibling of `shadow` and `facts` for the paged design: blocks instead of reservations,
and requests that go back to waiting.

A running request holds exactly ceil(num_computed / block_size) blocks (rule BLOCKS), so the shadow
keeps the tokens in KV and derives the blocks; `free_blocks` is the pool less what running requests hold.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..chunk import Chunk
from ..ending import Ending, Reason
from ..lines import Lines, start_running
from ..returned import MAX_ENTRIES, bounded, emitted_rids, plan_entries, protocol
from ..types import Config, Request


def blocks_for(num_tokens: int, block_size: int) -> int:
    """ceil(num_tokens / block_size): the blocks that hold `num_tokens` tokens."""
    return -(-num_tokens // block_size)


@dataclass(frozen=True, slots=True)
class Pool:
    """The paged design's memory: `num_blocks` blocks of `block_size` tokens (kv_tokens // block_size),
    and the `watermark` of blocks admission keeps free."""

    block_size: int
    num_blocks: int
    watermark: int

    def peak(self, request: Request) -> int:
        """Blocks `request` holds at most: its prompt and all but its last token in KV."""
        return blocks_for(request.prompt_len + request.max_new - 1, self.block_size)


@dataclass(slots=True)
class PagedTrack:
    """The shadow of one accepted request."""

    request: Request
    num_computed: int = 0  # tokens in KV in this residency
    num_emitted: int = 0  # over all residencies
    target: int = 0  # the prefill of this residency: prompt_len, plus the emitted tokens after a preemption
    is_ready: bool = False
    admitted_at: int | None = None  # step of the current admission; None while waiting
    num_preemptions: int = 0
    ahead_work: int = 0  # sum(prompt_len + max_new) of the live requests ahead of it when it arrived

    def __post_init__(self) -> None:
        self.target = self.request.prompt_len

    @property
    def rid(self) -> int:
        return self.request.rid

    @property
    def num_remaining_prompt(self) -> int:
        """Prefill positions this residency still has to run."""
        return self.target - self.num_computed


@dataclass(slots=True)
class PagedShadow(Lines[PagedTrack]):
    """Everything the paged rules need to judge the next step."""

    config: Config
    pool: Pool
    step: int = 0
    waiting: deque[PagedTrack] = field(default_factory=deque)  # the line: preempted first, arrival order
    running: dict[int, PagedTrack] = field(default_factory=dict)  # admission order
    prefilling: dict[int, PagedTrack] = field(default_factory=dict)
    tracks: dict[int, PagedTrack] = field(default_factory=dict)  # accepted, not ended
    ended: dict[int, Ending] = field(default_factory=dict)  # rid -> how it ended (records dropped)
    rejected: set[int] = field(default_factory=set)
    cancelling: set[int] = field(default_factory=set)  # cancelled while a plan was pending
    free_blocks: int = 0
    num_ready: int = 0
    num_preemptions: int = 0
    max_preemptions: int = 0  # the most times one request was preempted

    def __post_init__(self) -> None:
        self.free_blocks = self.pool.num_blocks

    def was_cancelled(self, rid: int) -> bool:
        """True if `rid`'s request ended by a cancel (and its rid was not taken again since)."""
        ending = self.ended.get(rid)
        return ending is not None and ending.reason is Reason.CANCEL

    def held(self, track: PagedTrack) -> int:
        return blocks_for(track.num_computed, self.pool.block_size)

    def needs_block(self, track: PagedTrack) -> bool:
        """A decode of the ready `track` computes into a new block."""
        return track.num_computed % self.pool.block_size == 0

    def accept(self, request: Request) -> None:
        track = PagedTrack(request)
        live = [*self.waiting, *self.running.values()]
        track.ahead_work = sum(t.request.prompt_len + t.request.max_new for t in live)
        self.tracks[request.rid] = track
        self.ended.pop(request.rid, None)
        self.waiting.append(track)

    def preempt(self, track: PagedTrack) -> None:
        """Action: `track` is preempted: blocks freed, KV forgotten, emitted tokens kept, head of the line."""
        self._leave_running(track)
        track.num_computed = 0
        track.target = track.request.prompt_len + track.num_emitted
        track.is_ready = False
        track.admitted_at = None
        track.num_preemptions += 1
        self.num_preemptions += 1
        self.max_preemptions = max(self.max_preemptions, track.num_preemptions)
        self.waiting.appendleft(track)

    def end(self, track: PagedTrack, reason: Reason) -> None:
        """Action: `track` finished, stopped or was cancelled: its blocks return now. The step is the
        shadow's current one: call before it advances."""
        del self.tracks[track.rid]
        self.ended[track.rid] = Ending(self.step, reason)
        if track.rid in self.running:
            self._leave_running(track)
        else:
            self.waiting.remove(track)

    def _leave_running(self, track: PagedTrack) -> None:
        """`track` stops running: its blocks return to the pool."""
        self.free_blocks += self.held(track)
        del self.running[track.rid]
        if track.is_ready:
            self.num_ready -= 1
        else:
            del self.prefilling[track.rid]


class PagedChunk(Chunk[PagedTrack]):
    """Prefill positions [start, start + n) of `track` in this residency."""

    __slots__ = ()

    @property
    def is_recompute(self) -> bool:
        return self.track.num_preemptions > 0


class PagedFacts:
    """One step as the paged rules see it. `prefills` holds the chunks of first residencies (the ones
    FIRST-TOKEN judges), `recomputes` those of re-admitted requests (RECOMPUTE's)."""

    __slots__ = (
        "admitted", "chunks", "decodes", "duplicates", "emitted", "emitted_set", "ended", "finished",
        "first_bad_n", "num_decode_tokens", "num_tokens", "plan", "planned", "preempted", "prefills",
        "recomputes", "reported_free_blocks", "reported_line", "reported_live", "step", "stopped",
    )

    def __init__(self, step: int) -> None:
        self.step = step
        self.preempted: list[PagedTrack] = []  # as the plan names them, newest first
        self.plan: list[tuple[int, int]] = []
        self.planned: set[int] = set()
        self.num_tokens = 0
        self.decodes: list[tuple[PagedTrack, int]] = []
        self.num_decode_tokens = 0
        self.chunks: list[PagedChunk] = []  # for running requests in prefill
        self.admitted: list[PagedChunk] = []  # for waiting requests
        self.prefills: list[PagedChunk] = []  # chunks and admissions of first residencies, plan order
        self.recomputes: list[PagedChunk] = []  # chunks and admissions of re-admitted requests
        self.duplicates: list[int] = []
        self.first_bad_n: tuple[int, int] | None = None
        self.emitted: list[int] = []
        self.emitted_set: set[int] = set()
        self.finished: list[PagedTrack] = []  # emit their max_new-th token now
        self.stopped: list[PagedTrack] = []  # stopped now by the caller
        self.ended: list[PagedTrack] = []  # finished, stopped or cancelled with this step
        self.reported_free_blocks: int | None = None
        self.reported_live: set[int] | None = None  # the rids the scheduler shows waiting or running, if shown
        self.reported_line: list[int] | None = None  # the rids it shows waiting, in its order


def read_preempted(shadow: PagedShadow, plan: object) -> list[PagedTrack]:
    """The running tracks the plan says it preempted (its `preempted` rids), newest first as named."""
    rids = getattr(plan, "preempted", ())
    try:
        rids = bounded(rids)
    except TypeError:
        raise protocol(shadow.step, f"the plan's preempted is {rids!r:.80}, not a sequence of rids") from None
    if len(rids) > MAX_ENTRIES:
        raise protocol(shadow.step, f"the plan's preempted holds over {MAX_ENTRIES:,} rids (an endless iterable?)")
    out = []
    for rid in rids:
        track = shadow.running.get(rid) if type(rid) is int else None
        if track is None or track in out:
            raise protocol(shadow.step, f"the plan says it preempted rid {rid!r}, which is not a running request "
                            "(or is named twice)", rule="PREEMPT-ORDER")
        out.append(track)
    return out


def observe(shadow: PagedShadow, plan: object, facts: PagedFacts) -> None:
    """Classify each plan entry against `shadow` (the state after this step's preemptions)."""
    step = shadow.step
    items = plan_entries(step, plan)
    running, tracks = shadow.running, shadow.tracks
    num_tokens = 0
    for i, entry in enumerate(items):
        try:
            rid, n = entry
        except (TypeError, ValueError):
            raise protocol(step, f"plan entry {i} is {entry!r:.80}, which does not unpack as (rid, n)") from None
        if type(rid) is not int or type(n) is not int:
            raise protocol(step, f"plan entry {i} is ({rid!r:.40}, {n!r:.40}): rid and n must be ints")
        facts.plan.append((rid, n))
        num_tokens += n
        if n < 1 and facts.first_bad_n is None:
            facts.first_bad_n = (rid, n)
        if rid in facts.planned:
            facts.duplicates.append(rid)
            continue
        facts.planned.add(rid)
        track = running.get(rid)
        if track is not None:
            if track.is_ready:
                facts.decodes.append((track, n))
                facts.num_decode_tokens += n
            else:
                chunk = PagedChunk(track, n, track.num_computed)
                facts.chunks.append(chunk)
                (facts.recomputes if chunk.is_recompute else facts.prefills).append(chunk)
            continue
        track = tracks.get(rid)
        if track is None:
            ending = shadow.ended.get(rid)
            if ending is not None and ending.reason is Reason.CANCEL:
                raise protocol(step, f"plan names rid {rid}, which was cancelled", rule="CANCEL")
            if ending is not None:
                raise protocol(step, f"plan names rid {rid}, which ended at step {ending.step} "
                                "(all max_new tokens emitted, or stopped)", rule="TOKENS-KEPT")
            if rid in shadow.rejected:
                raise protocol(step, f"rid {rid} was refused by add() yet is planned", rule="NEVER-FIT")
            raise protocol(step, f"plan names rid {rid}, which was never added")
        chunk = PagedChunk(track, n, 0)
        facts.admitted.append(chunk)
        (facts.recomputes if chunk.is_recompute else facts.prefills).append(chunk)
    facts.num_tokens = num_tokens


def observe_emitted(shadow: PagedShadow, facts: PagedFacts, emitted: object, stopped: list[int],
                    free_blocks: object) -> None:
    """Add what complete() reported: the emitted rids, the stops the caller gave, the free blocks shown."""
    rids = emitted_rids(facts.step, emitted)
    facts.emitted = rids
    facts.reported_free_blocks = free_blocks if type(free_blocks) is int else None
    for rid in rids:
        if type(rid) is not int:
            raise protocol(facts.step, f"complete() returned {rid!r:.40} among the emitted rids: rids are ints")
        if rid in facts.emitted_set:
            continue
        facts.emitted_set.add(rid)
        track = shadow.tracks.get(rid)
        if track is None:
            raise protocol(facts.step, f"complete() says rid {rid} emitted a token, but it is not a live request",
                            rule="TOKENS-KEPT")
        if rid in facts.planned and track.num_emitted + 1 == track.request.max_new:
            facts.finished.append(track)
        elif rid in stopped and rid in facts.planned:
            facts.stopped.append(track)


def read_view(scheduler: object, name: str) -> list[int] | None:
    """The rids a scheduler shows in its `name` view (`waiting` or `running`: requests with a `rid`), or None."""
    view = getattr(scheduler, name, None)
    try:
        return [r.rid for r in view]  # type: ignore[union-attr]
    except (TypeError, AttributeError):
        return None


def read_live(scheduler: object) -> set[int] | None:
    """The rids a scheduler shows waiting or running, or None where it shows neither view."""
    waiting, running = read_view(scheduler, "waiting"), read_view(scheduler, "running")
    return None if waiting is None or running is None else {*waiting, *running}


def apply(shadow: PagedShadow, facts: PagedFacts) -> None:
    """Action: the step ran. Admissions, computed tokens, emitted tokens, then ends (finished, stopped,
    and cancels that waited for this step)."""
    step = facts.step
    for chunk in facts.admitted:
        start_running(shadow, chunk.track, step)
    bs = shadow.pool.block_size
    for track, n in facts.decodes:
        before = blocks_for(track.num_computed, bs)
        track.num_computed += n
        shadow.free_blocks -= blocks_for(track.num_computed, bs) - before
    for chunk in facts.chunks + facts.admitted:
        track = chunk.track
        before = blocks_for(track.num_computed, bs)
        track.num_computed = min(track.target, track.num_computed + chunk.n)
        shadow.free_blocks -= blocks_for(track.num_computed, bs) - before
        if track.num_computed == track.target:
            track.is_ready = True
            shadow.num_ready += 1
            del shadow.prefilling[track.rid]
    count_emitted(shadow, facts)
    end_all(shadow, facts)
    shadow.step = step + 1


def count_emitted(shadow: PagedShadow, facts: PagedFacts) -> None:
    """Action, part of apply: each running request that emitted this step has one token more."""
    for rid in facts.emitted_set:
        live = shadow.running.get(rid)
        if live is not None:
            live.num_emitted += 1


def end_all(shadow: PagedShadow, facts: PagedFacts) -> None:
    """Action, part of apply: the step's ends, in order: finished, stopped, then the cancels that
    waited for this step (by rid)."""
    for tracks, reason in ((facts.finished, Reason.LENGTH), (facts.stopped, Reason.STOP)):
        for track in tracks:
            shadow.end(track, reason)
            facts.ended.append(track)
    for rid in sorted(shadow.cancelling):
        cancelled = shadow.tracks.get(rid)
        if cancelled is not None:
            shadow.end(cancelled, Reason.CANCEL)
            facts.ended.append(cancelled)
    shadow.cancelling.clear()
