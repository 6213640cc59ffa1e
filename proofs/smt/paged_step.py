"""Z3 step theorems of the paged design (`stallfree.paged`), over a symbolic step of N requests.

**The symbolic state** (request index i = arrival order): per request `arrived`, `running`,
`ended_early` (stopped or cancelled), `prompt_len`, `max_new`, `computed` (tokens in KV in this
residency), `emitted` (kept across preemptions), `target` (this residency's prefill: prompt_len plus
the tokens emitted before it was preempted), `held` (blocks); and the pool: `free` blocks of
`num_blocks`, the watermark, B and S.
Lengths, budget, slots, pool and watermark are unbounded integers; the block size is each of
`BLOCK_SIZES` in turn (a concrete block size keeps ceil(t / bs) linear: h with (h - 1) * bs < t <= h * bs).

**The step** (`PagedPolicy`) is the paged scheduler's, phase by phase: decodes whose KV has filled
its last block need a new one; while they need more than are free, the newest running request is
preempted (blocks freed, KV forgotten, emitted tokens kept, target = prompt_len + emitted); every
ready request is decoded; the partial prefill (at most one) gets min(target - computed, budget
left, room in its blocks and the free ones); then, unless the step preempted, the waiting head is
admitted while budget, a slot and the watermark allow, in arrival order, stopping at the first
refused; then completion: a chunk that reaches its target emits, a request that emits its max_new-th
token ends and frees its blocks; then any request that emitted and still runs may be stopped (any
subset, as `complete(plan, stopped)` names them), ending with its blocks back. The environment's adds
come first (what NEVER-FIT accepts), then cancels (`PagedPolicy.cancel`) of any live requests, waiting
(preempted ones among them), partial or ready: each ends, its blocks back before the step's schedule().
A cancel while a plan is pending is the code's same `end`, run in complete() after the stops: it is the
next transition's cancel, applied to the state after this step (the differential runs it so).

**The theorems** (each from any state satisfying `invariant`, after any adds, any cancels, one step
with any stops):

- BLOCKS: free + held == num_blocks, free >= 0, each running request holds ceil(computed / bs)
  blocks and nothing else holds any (so all blocks are free when nothing runs).
- TOKENS-KEPT: a request's emitted count never falls (a preemption keeps it), grows by at most one
  a step and only when planned, never passes max_new, and the request ends on its max_new-th token.
- RECOMPUTE: a preempted request's KV is forgotten (computed 0, no blocks) and its target becomes
  prompt_len + emitted; every chunk stays within its target and emits exactly when it reaches it.
- PREEMPT-ORDER: the preempted requests are the newest running ones; a step that preempts admits
  nothing; admission takes the line in arrival order (a preempted request, older than every later
  arrival, is re-admitted before any of them).
- PREEMPT-BOUND: the oldest running request is never preempted; nothing is preempted while the
  running requests' peaks fit the pool (proved after the stepping stones of `paged_lemmas`, each
  proved first: the claim is the same; at N = 4 it ran out of time without them).
- TERMINATION (a ranking function under preemption): the oldest live request's work (prefill left
  in this residency, plus tokens left) falls by at least one every busy step, and every live
  request's work is at most prompt_len + max_new, recompute included. So the lexicographic ranking
  (work of each live request, oldest first) falls every busy step: the oldest ends within its work,
  then the next oldest within prompt_len + max_new; a request ends within the sum of prompt_len +
  max_new over itself and the requests ahead of it, whatever arrives after it.
- END: a request ended before the step (finished, stopped or cancelled) is not planned, emits
  nothing, holds no block and stays ended with its tokens; a request a stop names is ended after the
  step, holding no block.
- STOP-READY: every request a stop may name (it emitted and still runs once the step's finished ones
  end) is ready: a stop never ends a request mid-prefill.
- CANCEL: a cancelled request is never planned, emits nothing and is ended after the step with no
  block; the free blocks the step's schedule() starts from are those before the cancels plus what the
  cancelled requests held, and the pool less what the running ones hold.
- PAGED-INVARIANT: the whole invariant holds after the step (INIT: it holds of a new scheduler).

**Negative controls**, Z3 policies named after the faults in `stallfree.faults.paged` whose mistake
they make: PreemptOldest (TERMINATION, PREEMPT-BOUND: the oldest request, preempted, has its work
raised, so it can be pushed back forever), LeakOnEnd (BLOCKS, PAGED-INVARIANT), RecomputeOneMore
(RECOMPUTE), OverRun (TOKENS-KEPT), RequeueAtBack (PREEMPT-ORDER), StopIgnored (END: a stop accepted
and forgotten), EarlyToken (STOP-READY: every chunk emits), CancelIgnored (CANCEL), LeakOnCancel
(CANCEL, BLOCKS: a cancel that keeps its blocks).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import z3

from stallfree.spec.verdict import Verdict

from .in_turn import prove_in_turn, refuted
from .paged_lemmas import at_block_boundary, decodes_fit, peak
from .symbolic import check
from .theorems import new_solver

BLOCK_SIZES = (1, 2, 3, 16)  # each theorem is proved for each
PAGED_N = 5  # symbolic requests
TIMEOUT_MS = 60_000


@dataclass(frozen=True, slots=True)
class PagedRequest:
    arrived: z3.BoolRef
    running: z3.BoolRef
    ended_early: z3.BoolRef  # stopped or cancelled: it holds nothing and is never planned again
    prompt_len: z3.ArithRef
    max_new: z3.ArithRef
    computed: z3.ArithRef
    emitted: z3.ArithRef
    target: z3.ArithRef
    held: z3.ArithRef

    @classmethod
    def fresh(cls, name: str) -> PagedRequest:
        ints = [z3.Int(f"{name}.{f}") for f in ("prompt_len", "max_new", "computed", "emitted", "target", "held")]
        return cls(z3.Bool(f"{name}.arrived"), z3.Bool(f"{name}.running"), z3.Bool(f"{name}.ended_early"), *ints)

    @property
    def finished(self) -> z3.BoolRef:
        return z3.And(self.arrived, self.emitted >= self.max_new)

    @property
    def live(self) -> z3.BoolRef:
        return z3.And(self.arrived, z3.Not(self.ended_early), self.emitted < self.max_new)

    @property
    def ended(self) -> z3.BoolRef:
        """Arrived and no longer live: finished, stopped or cancelled."""
        return z3.And(self.arrived, z3.Not(self.live))

    @property
    def waiting(self) -> z3.BoolRef:
        return z3.And(self.live, z3.Not(self.running))

    @property
    def ready(self) -> z3.BoolRef:
        return z3.And(self.running, self.computed >= self.target)

    @property
    def partial(self) -> z3.BoolRef:
        return z3.And(self.running, self.computed < self.target)

    @property
    def work(self) -> z3.ArithRef:
        """Prefill left in this residency plus tokens left (0 for a request that is not live)."""
        return z3.If(self.live, z3.If(self.ready, 0, self.target - self.computed) + self.max_new - self.emitted, 0)


@dataclass(frozen=True, slots=True)
class PagedState:
    token_budget: z3.ArithRef
    max_seqs: z3.ArithRef
    num_blocks: z3.ArithRef
    watermark: z3.ArithRef
    block_size: int
    free: z3.ArithRef
    requests: tuple[PagedRequest, ...]

    @classmethod
    def fresh(cls, name: str, n: int, block_size: int) -> PagedState:
        return cls(z3.Int("B"), z3.Int("S"), z3.Int("num_blocks"), z3.Int("watermark"), block_size,
                   z3.Int(f"{name}.free"), tuple(PagedRequest.fresh(f"{name}.r{i}") for i in range(n)))

    def count(self, predicate: str) -> z3.ArithRef:
        return z3.Sum([z3.If(getattr(r, predicate), 1, 0) for r in self.requests])


class Defs:
    """Fresh constants with their defining facts: ceil(t / bs) as h with (h - 1) * bs < t <= h * bs."""

    def __init__(self, prefix: str, block_size: int) -> None:
        self.prefix, self.bs, self.facts = prefix, block_size, []  # type: ignore[var-annotated]

    def int(self, term: z3.ArithRef) -> z3.ArithRef:
        const = z3.Int(f"{self.prefix}.{len(self.facts)}")
        self.facts.append(const == term)
        return const

    def blocks(self, tokens: z3.ArithRef) -> z3.ArithRef:
        h = z3.Int(f"{self.prefix}.{len(self.facts)}")
        self.facts.append(is_blocks(h, tokens, self.bs))
        return h


def is_blocks(h: z3.ArithRef, tokens: z3.ArithRef, bs: int) -> z3.BoolRef:
    return z3.And(h >= 0, (h - 1) * bs < tokens, tokens <= h * bs)


def smin(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a <= b, a, b)


def ended_where(r: PagedRequest, e: z3.BoolRef) -> PagedRequest:
    """`r`, ended early (stopped or cancelled) where `e`: not running, nothing in KV, no blocks."""
    return replace(r, ended_early=z3.Or(r.ended_early, e), running=z3.And(r.running, z3.Not(e)),
                   computed=z3.If(e, 0, r.computed), held=z3.If(e, 0, r.held))


# -- the invariant ---------------------------------------------------------------------------------


def invariant_parts(s: PagedState) -> dict[str, z3.BoolRef]:
    rs, bs = s.requests, s.block_size
    types, blocks, line, never_fit = [], [], [], []
    for i, r in enumerate(rs):
        types += [r.prompt_len >= 1, r.max_new >= 1, r.emitted >= 0, r.emitted <= r.max_new,
                  z3.Implies(r.running, r.live),
                  z3.Implies(z3.Not(r.running), z3.And(r.computed == 0, r.held == 0)),
                  z3.Implies(z3.Or(r.waiting, r.partial), r.target == r.prompt_len + r.emitted),
                  z3.Implies(r.partial, z3.And(r.computed >= 1, r.emitted < r.max_new)),
                  z3.Implies(r.ready, z3.And(r.computed == r.prompt_len + r.emitted - 1, r.emitted >= 1)),
                  z3.Implies(r.ready, r.target <= r.computed),
                  z3.Implies(z3.Not(r.arrived), z3.And(r.emitted == 0, z3.Not(r.running), z3.Not(r.ended_early)))]
        blocks.append(z3.Implies(r.running, is_blocks(r.held, r.computed, bs)))
        never_fit.append(z3.Implies(r.arrived, z3.And(is_blocks(peak(r), r.prompt_len + r.max_new - 1, bs),
                                                      peak(r) <= s.num_blocks - s.watermark)))
        if i + 1 < len(rs):
            later = rs[i + 1]
            line += [z3.Implies(later.arrived, r.arrived),
                     z3.Implies(r.partial, z3.Not(z3.Or([q.running for q in rs[i + 1:]])))]
            # the running requests are the head of the live ones, in arrival order
            line += [z3.Implies(z3.And(q.running, r.live), r.running) for q in rs[i + 1:]]
    blocks += [s.free + z3.Sum([r.held for r in rs]) == s.num_blocks, s.free >= 0]
    return {
        "TYPES": z3.And(types), "BLOCKS": z3.And(blocks), "LINE": z3.And(line), "NEVER-FIT": z3.And(never_fit),
        "READY-WITHIN-BUDGET": s.count("ready") <= s.token_budget, "SLOTS": s.count("running") <= s.max_seqs,
        "POOL": z3.And(s.token_budget >= 1, s.max_seqs >= 1, s.watermark >= 0, s.watermark <= s.num_blocks),
    }


def invariant(s: PagedState) -> z3.BoolRef:
    return z3.And(list(invariant_parts(s).values()))


# -- the step --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Withdrawn:
    """The state after cancels: `cancels[i]` is true where live request i was cancelled (any subset)."""

    before: PagedState
    cancels: tuple[z3.BoolRef, ...]
    after: PagedState
    facts: z3.BoolRef  # the hypothesis on `cancels` and the definitions of the state after


@dataclass(frozen=True, slots=True)
class PagedStep:
    before: PagedState  # after the adds and cancels
    preempted: tuple[z3.BoolRef, ...]
    decode: tuple[z3.BoolRef, ...]
    chunk: tuple[z3.ArithRef, ...]  # partial prefill tokens (0: none)
    admit: tuple[z3.BoolRef, ...]
    first_chunk: tuple[z3.ArithRef, ...]
    emits: tuple[z3.BoolRef, ...]
    stops: tuple[z3.BoolRef, ...]  # a stop named request i (hypothesis: only one that emitted in the step)
    stopped: tuple[z3.BoolRef, ...]  # request i ended on its stop (it emitted, ran, and did not finish)
    completed: PagedState  # after the step's tokens are counted and its finished requests end, before the stops
    after: PagedState
    facts: z3.BoolRef

    def planned(self, i: int) -> z3.BoolRef:
        return z3.Or(self.decode[i], self.chunk[i] > 0, self.admit[i])


class PagedPolicy:
    """The paged scheduler's step."""

    @property
    def name(self) -> str:
        return "paged" if type(self) is PagedPolicy else type(self).__name__

    def arrive(self, s: PagedState, name: str) -> tuple[PagedState, z3.BoolRef]:
        """Any requests may arrive, after every one already there, each fresh and within NEVER-FIT."""
        requests, facts = [], []
        for i, r in enumerate(s.requests):
            a = z3.Bool(f"{name}.r{i}.arrived")
            facts += [z3.Implies(r.arrived, a), z3.Implies(z3.And(a, z3.Not(r.arrived)), r.target == r.prompt_len)]
            requests.append(replace(r, arrived=a))
        facts += [z3.Implies(requests[i + 1].arrived, requests[i].arrived) for i in range(len(requests) - 1)]
        after = replace(s, requests=tuple(requests))
        facts.append(invariant_parts(after)["NEVER-FIT"])
        return after, z3.And(facts)

    def cancel(self, s: PagedState, name: str) -> Withdrawn:
        """CANCEL: any live requests (waiting, preempted, partial or ready) are withdrawn between steps (a
        cancel while a plan is pending is the same cancel, applied to the state after the step): each
        leaves the line or its running set and its blocks come back now."""
        cancels = tuple(z3.Bool(f"{name}.cancel{i}") for i in range(len(s.requests)))
        free = z3.Int(f"{name}.free")
        pairs = list(zip(cancels, s.requests, strict=True))
        returned = z3.Sum([z3.If(c, self.returned_on_cancel(r.held), 0) for c, r in pairs])
        requests = tuple(self.cancelled(r, c) for c, r in pairs)
        facts = [z3.Implies(c, r.live) for c, r in pairs] + [free == s.free + returned]
        return Withdrawn(s, cancels, replace(s, free=free, requests=requests), z3.And(facts))

    def cancelled(self, r: PagedRequest, c: z3.BoolRef) -> PagedRequest:
        """Request `r`, withdrawn where `c`: it holds nothing and is never planned again."""
        return ended_where(r, c)

    def returned_on_cancel(self, held: z3.ArithRef) -> z3.ArithRef:
        """Blocks a cancelled request gives back."""
        return self.returned(held)

    def stop_takes_effect(self, stop: z3.BoolRef) -> z3.BoolRef:
        """Whether a stop named after the step's token ends the request (it does)."""
        return stop

    def victims_order(self, n: int) -> list[int]:
        """PREEMPT-ORDER: newest running first."""
        return list(reversed(range(n)))

    def recompute_target(self, r: PagedRequest) -> z3.ArithRef:
        return r.prompt_len + r.emitted

    def admission_order(self, s: PagedState) -> list[tuple[int, z3.BoolRef]]:
        """(request index, whether it is in the line at this place): the line in arrival order."""
        return [(i, z3.BoolVal(True)) for i in range(len(s.requests))]

    def last_token(self, r: PagedRequest) -> z3.ArithRef:
        return r.max_new

    def returned(self, held: z3.ArithRef) -> z3.ArithRef:
        """Blocks an ending request gives back."""
        return held

    def preempt_for_decodes(
        self, s: PagedState, d: Defs, need: list[z3.BoolRef],
    ) -> tuple[list[z3.BoolRef], list[PagedRequest], z3.ArithRef]:
        """Preemption, in `victims_order`, while the decodes (`need`: those at a block boundary) need more
        new blocks than are free: which requests are preempted, the requests after it, and the free blocks."""
        n, rs = len(s.requests), list(s.requests)
        preempted: list[z3.BoolRef] = [z3.BoolVal(False)] * n
        free, needs = s.free, d.int(z3.Sum([z3.If(x, 1, 0) for x in need]))
        for i in self.victims_order(n):
            go = z3.And(rs[i].running, needs > free)
            preempted[i] = go
            free = d.int(free + z3.If(go, rs[i].held, 0))
            needs = d.int(needs - z3.If(z3.And(go, need[i]), 1, 0))
        cur = [replace(r, running=z3.And(r.running, z3.Not(p)), computed=z3.If(p, 0, r.computed),
                       held=z3.If(p, 0, r.held), target=z3.If(p, self.recompute_target(r), r.target))
               for r, p in zip(rs, preempted, strict=True)]
        return preempted, cur, free

    def admit_waiting(
        self, s: PagedState, d: Defs, cur: list[PagedRequest], held: list[z3.ArithRef], free: z3.ArithRef,
        left: z3.ArithRef, stopped: z3.BoolRef,
    ) -> tuple[list[z3.BoolRef], list[z3.ArithRef], z3.ArithRef]:
        """Admission in `admission_order`, each its first chunk min(target, left), until one does not fit
        (`stopped` from the start in a step that preempted): which are admitted, their first chunks, and the
        free blocks; `held` gains the blocks each takes."""
        n = len(s.requests)
        admit: list[z3.BoolRef] = [z3.BoolVal(False)] * n
        first: list[z3.ArithRef] = [z3.IntVal(0)] * n
        running = d.int(z3.Sum([z3.If(c.running, 1, 0) for c in cur]))
        for i, placed in self.admission_order(s):
            c = cur[i]
            in_line = z3.And(c.waiting, placed)
            k = d.int(smin(c.target, left))
            h = d.blocks(k)
            go = z3.And(in_line, z3.Not(stopped), left > 0, running < s.max_seqs, free - h >= s.watermark)
            admit[i] = z3.Or(admit[i], go)
            first[i] = d.int(first[i] + z3.If(go, k, 0))
            held[i] = d.int(held[i] + z3.If(go, h, 0))
            free = d.int(free - z3.If(go, h, 0))
            left = d.int(left - z3.If(go, k, 0))
            running = d.int(running + z3.If(go, 1, 0))
            stopped = z3.Or(stopped, z3.And(in_line, z3.Not(go)))
        return admit, first, free

    def step(self, s: PagedState) -> PagedStep:
        n, bs = len(s.requests), s.block_size
        d = Defs(f"{s.free}.d", bs)
        need = [at_block_boundary(r, bs) for r in s.requests]
        # 1. preemption, newest first, while the decodes need more new blocks than are free
        preempted, cur, free = self.preempt_for_decodes(s, d, need)
        any_preempted = z3.Or(preempted)
        # 2. decodes: every ready request; those at a block boundary take a block
        decode = [c.ready for c in cur]
        held = [d.int(c.held + z3.If(z3.And(decode[i], need[i]), 1, 0)) for i, c in enumerate(cur)]
        free = d.int(free - z3.Sum([z3.If(z3.And(decode[i], need[i]), 1, 0) for i in range(n)]))
        left = d.int(s.token_budget - z3.Sum([z3.If(x, 1, 0) for x in decode]))
        # 3. the partial prefill: min(target - computed, left, room)
        chunk: list[z3.ArithRef] = []
        for i, c in enumerate(cur):
            room = (held[i] + free) * bs - c.computed
            k = d.int(z3.If(c.partial, z3.If(smin(smin(c.target - c.computed, left), room) > 0,
                                             smin(smin(c.target - c.computed, left), room), 0), 0))
            h = d.blocks(c.computed + k)
            more = d.int(z3.If(k > 0, z3.If(h > held[i], h - held[i], 0), 0))
            held[i] = d.int(held[i] + more)
            free = d.int(free - more)
            left = d.int(left - k)
            chunk.append(k)
        # 4. admission, never in a step that preempted
        admit, first, free = self.admit_waiting(s, d, cur, held, free, left, any_preempted)
        # 5. completion, then the stops named after its tokens
        prefill = [c + f for c, f in zip(chunk, first, strict=True)]
        done, after, emits, stops, stopped, free = self.complete(d, cur, decode, prefill, admit, held, free,
                                                                 f"{s.free}.stop")
        return PagedStep(s, tuple(preempted), tuple(decode), tuple(chunk), tuple(admit), tuple(first), tuple(emits),
                         stops, stopped, replace(s, requests=tuple(done)), replace(s, free=free, requests=tuple(after)),
                         z3.And(d.facts))

    def emits_token(self, decode: z3.BoolRef, k: z3.ArithRef, computed: z3.ArithRef, target: z3.ArithRef) -> z3.BoolRef:
        """A decode emits; a chunk of `k` prefill tokens emits when it reaches the target."""
        return z3.Or(decode, z3.And(k > 0, computed >= target))

    def complete(
        self, d: Defs, cur: list[PagedRequest], decode: list[z3.BoolRef], prefill: list[z3.ArithRef],
        admit: list[z3.BoolRef], held: list[z3.ArithRef], free: z3.ArithRef, name: str,
    ) -> tuple[list[PagedRequest], list[PagedRequest], list[z3.BoolRef], tuple[z3.BoolRef, ...],
               tuple[z3.BoolRef, ...], z3.ArithRef]:
        """The step ran: tokens in KV and emitted tokens counted; a request that emits its last token
        ends; then any that emitted and still run may be stopped (`stops`, any subset), ending too. Each
        ending request's blocks come back. (before the stops, after them, emits, stops, stopped, free)."""
        stops = tuple(z3.Bool(f"{name}{i}") for i in range(len(cur)))
        done, after, emits, stopped = [], [], [], []
        for i, c in enumerate(cur):
            computed = d.int(c.computed + z3.If(decode[i], 1, 0) + prefill[i])
            emit = self.emits_token(decode[i], prefill[i], computed, c.target)
            emitted = d.int(c.emitted + z3.If(emit, 1, 0))
            ends = z3.And(emit, emitted >= self.last_token(c))
            is_running = z3.And(z3.Or(c.running, admit[i]), z3.Not(ends))
            stop = z3.And(self.stop_takes_effect(stops[i]), is_running)  # a finishing one has ended already
            free = d.int(free + z3.If(z3.Or(ends, stop), self.returned(held[i]), 0))
            done.append(replace(c, running=is_running, computed=z3.If(ends, 0, computed), emitted=emitted,
                                held=z3.If(ends, 0, held[i])))
            after.append(ended_where(done[i], stop))
            emits.append(emit)
            stopped.append(stop)
            d.facts.append(z3.Implies(stops[i], emit))  # a stop names only a request that emitted in the step
        return done, after, emits, stops, tuple(stopped), free


# -- the negative controls --------------------------------------------------------------------------


class PreemptOldest(PagedPolicy):
    """Preempts the oldest running request first."""

    def victims_order(self, n: int) -> list[int]:
        return list(range(n))


class LeakOnEnd(PagedPolicy):
    """An ending request keeps its last block."""

    def returned(self, held: z3.ArithRef) -> z3.ArithRef:
        return z3.If(held > 0, held - 1, 0)


class RecomputeOneMore(PagedPolicy):
    """A re-admitted request's prefill runs one position past its prompt and emitted tokens."""

    def recompute_target(self, r: PagedRequest) -> z3.ArithRef:
        return r.prompt_len + r.emitted + 1


class OverRun(PagedPolicy):
    """A request ends one token late."""

    def last_token(self, r: PagedRequest) -> z3.ArithRef:
        return r.max_new + 1


class RequeueAtBack(PagedPolicy):
    """A preempted request waits behind every later arrival: admission takes fresh requests first."""

    def admission_order(self, s: PagedState) -> list[tuple[int, z3.BoolRef]]:
        rs = s.requests
        fresh = [(i, r.target == r.prompt_len) for i, r in enumerate(rs)]
        requeued = [(i, r.target != r.prompt_len) for i, r in enumerate(rs)]
        return fresh + requeued


class CancelIgnored(PagedPolicy):
    """A cancel is accepted and forgotten: the request runs on."""

    def cancelled(self, r: PagedRequest, c: z3.BoolRef) -> PagedRequest:
        return r

    def returned_on_cancel(self, held: z3.ArithRef) -> z3.ArithRef:
        return z3.IntVal(0)


class LeakOnCancel(PagedPolicy):
    """A cancelled request's blocks never return to the pool."""

    def returned_on_cancel(self, held: z3.ArithRef) -> z3.ArithRef:
        return z3.IntVal(0)


class StopIgnored(PagedPolicy):
    """A stop is accepted and forgotten: the request keeps running to its max_new-th token."""

    def stop_takes_effect(self, stop: z3.BoolRef) -> z3.BoolRef:
        return z3.BoolVal(False)


class EarlyToken(PagedPolicy):
    """Every prefill chunk emits a token, its prefill done or not: a stop could then end a partial request."""

    def emits_token(self, decode: z3.BoolRef, k: z3.ArithRef, computed: z3.ArithRef, target: z3.ArithRef) -> z3.BoolRef:
        return z3.Or(decode, k > 0)


# -- the claims --------------------------------------------------------------------------------------

Claim = Callable[[Withdrawn, PagedStep], z3.BoolRef]  # the adds' cancels, then the step


def blocks_claim(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    return invariant_parts(t.after)["BLOCKS"]


def tokens_kept_claim(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    facts = []
    for i, (b, a) in enumerate(zip(t.before.requests, t.after.requests, strict=True)):
        delta = a.emitted - b.emitted
        facts += [delta >= 0, delta <= 1, z3.Implies(delta > 0, t.planned(i)), a.emitted <= a.max_new,
                  z3.Implies(a.emitted >= a.max_new, z3.Not(a.running))]  # it ends on its max_new-th token
    return z3.And(facts)


def recompute_claim(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    facts = []
    for i, (b, a) in enumerate(zip(t.before.requests, t.after.requests, strict=True)):
        p = t.preempted[i]
        facts += [z3.Implies(p, z3.And(a.computed == 0, a.held == 0, a.target == b.prompt_len + b.emitted,
                                       a.emitted == b.emitted))]
        k = t.chunk[i] + t.first_chunk[i]
        start = z3.If(t.admit[i], 0, b.computed)
        facts += [z3.Implies(k > 0, start + k <= a.target),
                  z3.Implies(k > 0, t.emits[i] == (start + k == a.target))]
    return z3.And(facts)


def preempt_order_claim(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    rs, n = t.before.requests, len(t.before.requests)
    facts = [z3.Implies(z3.And(t.preempted[i], rs[j].running), t.preempted[j])
             for i in range(n) for j in range(i + 1, n)]
    facts += [z3.Implies(z3.Or(t.preempted), z3.Not(z3.Or(t.admit)))]
    facts += [z3.Implies(z3.And(t.admit[j], rs[i].waiting), t.admit[i]) for j in range(n) for i in range(j)]
    return z3.And(facts)


def preempt_bound_claim(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    rs, n = t.before.requests, len(t.before.requests)
    facts = [z3.Implies(z3.And(rs[i].running, *[z3.Not(rs[j].live) for j in range(i)]), z3.Not(t.preempted[i]))
             for i in range(n)]
    fit = z3.Sum([z3.If(r.running, peak(r), 0) for r in rs]) <= t.before.num_blocks  # NEVER-FIT's peaks
    facts.append(z3.Implies(fit, z3.Not(z3.Or(t.preempted))))
    return z3.And(facts)


def rank_claim(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    rs, after = t.before.requests, t.after.requests
    facts = []
    for i, (b, a) in enumerate(zip(rs, after, strict=True)):
        oldest = z3.And(b.live, *[z3.Not(q.live) for q in rs[:i]])
        facts.append(z3.Implies(oldest, a.work <= b.work - 1))
        facts.append(z3.Implies(a.live, a.work <= a.prompt_len + a.max_new))
    return z3.And(facts)


def end_claim(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    """END: a request ended before the step (finished, stopped or cancelled) is not planned, emits nothing,
    holds no block and stays ended with its tokens; a request a stop names is ended after the step, its
    blocks back."""
    facts = []
    for i, (b, a) in enumerate(zip(t.before.requests, t.after.requests, strict=True)):
        facts += [z3.Implies(b.ended, z3.And(z3.Not(t.planned(i)), z3.Not(t.emits[i]), a.ended, z3.Not(a.running),
                                             a.held == 0, a.emitted == b.emitted)),
                  z3.Implies(t.stops[i], z3.And(a.ended, z3.Not(a.running), a.held == 0))]
    return z3.And(facts)


def stop_ready_claim(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    """STOP-READY: every request a stop may name (it emitted in the step and still runs once the step's
    finished requests end) is ready: a stop never ends a request mid-prefill."""
    return z3.And([z3.Implies(z3.And(e, c.running), c.ready)
                   for e, c in zip(t.emits, t.completed.requests, strict=True)])


def cancel_claim(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    """CANCEL: a cancelled request is never planned and emits nothing, and is ended after the step with no
    block; its blocks are back before the step's schedule(): the free blocks then are the free ones before
    the cancels plus what the cancelled requests held, and the pool less what the running ones hold."""
    facts = []
    for i, (c, a) in enumerate(zip(w.cancels, t.after.requests, strict=True)):
        facts.append(z3.Implies(c, z3.And(z3.Not(t.planned(i)), z3.Not(t.emits[i]), a.ended, z3.Not(a.running),
                                          a.held == 0)))
    returned = z3.Sum([z3.If(c, r.held, 0) for c, r in zip(w.cancels, w.before.requests, strict=True)])
    held = z3.Sum([z3.If(r.running, r.held, 0) for r in w.after.requests])
    facts += [w.after.free == w.before.free + returned, w.after.free + held == w.after.num_blocks]
    return z3.And(facts)


def whole_invariant(w: Withdrawn, t: PagedStep) -> z3.BoolRef:
    return invariant(t.after)


@dataclass(frozen=True, slots=True)
class PagedTheorem:
    name: str
    claim: Claim
    controls: tuple[type[PagedPolicy], ...]  # wrong policies, each of which must refute it
    lemmas: tuple[Claim, ...] = ()  # stepping stones proved first, then assumed (`paged_lemmas`)


THEOREMS: tuple[PagedTheorem, ...] = (
    PagedTheorem("BLOCKS", blocks_claim, (LeakOnEnd, LeakOnCancel)),
    PagedTheorem("TOKENS-KEPT", tokens_kept_claim, (OverRun,)),
    PagedTheorem("RECOMPUTE", recompute_claim, (RecomputeOneMore,)),
    PagedTheorem("PREEMPT-ORDER", preempt_order_claim, (RequeueAtBack,)),
    PagedTheorem("PREEMPT-BOUND", preempt_bound_claim, (PreemptOldest,), (decodes_fit,)),
    PagedTheorem("TERMINATION", rank_claim, (PreemptOldest,)),
    PagedTheorem("END", end_claim, (StopIgnored,)),
    PagedTheorem("STOP-READY", stop_ready_claim, (EarlyToken,)),
    PagedTheorem("CANCEL", cancel_claim, (CancelIgnored, LeakOnCancel)),
    PagedTheorem("PAGED-INVARIANT", whole_invariant, (LeakOnEnd,)),
)


@dataclass(frozen=True, slots=True)
class PagedStepResult:
    theorem: str
    policy: str
    verdict: Verdict  # holds (proved), BROKEN (Z3 found a counterexample) or unknown (no answer: nothing proved)
    seconds: float
    counterexample: str = ""


def prove(theorem: PagedTheorem, policy: PagedPolicy | None = None, num_requests: int = PAGED_N,
          block_sizes: tuple[int, ...] = BLOCK_SIZES, timeout_ms: int = TIMEOUT_MS) -> PagedStepResult:
    """For each block size: invariant before, any adds, one step => the claim; the theorem's lemmas, then
    each conjunct of the claim, proved in turn and then assumed."""
    policy = PagedPolicy() if policy is None else policy
    began = time.perf_counter()
    for bs in block_sizes:
        s0 = PagedState.fresh("s0", num_requests, bs)
        arrived, adds = policy.arrive(s0, "s1")
        w = policy.cancel(arrived, "s1c")
        t = policy.step(w.after)
        hypothesis = z3.And(invariant(s0), adds, w.facts, t.facts)
        solver = new_solver(hypothesis, timeout_ms)
        stones = [part for lemma in theorem.lemmas for part in conjuncts(lemma(w, t))]
        if prove_in_turn(solver, stones).verdict is not Verdict.HOLDS:
            solver = new_solver(hypothesis, timeout_ms)  # a lemma not proved: the claim is judged alone
        turn = prove_in_turn(solver, conjuncts(theorem.claim(w, t)), keep_model=True)
        if turn.verdict is Verdict.BROKEN:
            return PagedStepResult(theorem.name, policy.name, turn.verdict, time.perf_counter() - began,
                                   f"block_size {bs}: {shown(solver.model(), w, t)}")
        if turn.verdict is not Verdict.HOLDS:
            return PagedStepResult(theorem.name, policy.name, turn.verdict, time.perf_counter() - began)
    return PagedStepResult(theorem.name, policy.name, Verdict.HOLDS, time.perf_counter() - began)


def conjuncts(goal: z3.BoolRef) -> list[z3.BoolRef]:
    """The goal's conjuncts, each proved in turn (a single fact is its own one part)."""
    return goal.children() if z3.is_and(goal) else [goal]


def prove_init(num_requests: int = PAGED_N, block_sizes: tuple[int, ...] = BLOCK_SIZES) -> PagedStepResult:
    """INIT: a new scheduler (nothing arrived, every block free) satisfies the invariant."""
    began = time.perf_counter()
    for bs in block_sizes:
        s = PagedState.fresh("s0", num_requests, bs)
        new = z3.And(s.free == s.num_blocks, s.token_budget >= 1, s.max_seqs >= 1, s.watermark >= 0,
                     s.watermark <= s.num_blocks,
                     *[z3.And(z3.Not(r.arrived), z3.Not(r.running), z3.Not(r.ended_early), r.computed == 0,
                              r.emitted == 0, r.held == 0, r.prompt_len >= 1, r.max_new >= 1) for r in s.requests])
        solver = z3.SolverFor("QF_LIA")
        solver.add(new, z3.Not(invariant(s)))
        verdict = refuted(check(solver))
        if verdict is not Verdict.HOLDS:  # unknown, when Z3 gives no answer, is not read as a counterexample
            detail = f"block_size {bs}" if verdict is Verdict.BROKEN else ""
            return PagedStepResult("PAGED-INIT", "paged", verdict, time.perf_counter() - began, detail)
    return PagedStepResult("PAGED-INIT", "paged", Verdict.HOLDS, time.perf_counter() - began)


def shown(model: z3.ModelRef, w: Withdrawn, t: PagedStep) -> str:
    """The counterexample's state after the adds, then its cancels and stops."""
    def val(term: z3.ExprRef) -> object:
        v = model.eval(term, model_completion=True)
        return z3.is_true(v) if z3.is_bool(v) else v.as_long()  # type: ignore[attr-defined]

    s = w.before
    rows = [f"{i}: {'running' if val(r.running) else 'waiting' if val(r.waiting) else 'ended'} "
            f"prompt_len={val(r.prompt_len)} max_new={val(r.max_new)} computed={val(r.computed)} "
            f"emitted={val(r.emitted)} target={val(r.target)} held={val(r.held)}"
            for i, r in enumerate(s.requests) if val(r.arrived)]
    cancelled = [i for i, c in enumerate(w.cancels) if val(c)]
    stops = [i for i, x in enumerate(t.stops) if val(x)]
    return (f"B={val(s.token_budget)} S={val(s.max_seqs)} num_blocks={val(s.num_blocks)} "
            f"watermark={val(s.watermark)} free={val(s.free)}; requests {'; '.join(rows) or 'none'}; "
            f"cancelled {cancelled or 'none'}; stops {stops or 'none'}")


def theorems(num_requests: int = PAGED_N) -> list[PagedStepResult]:
    return [prove_init(num_requests), *(prove(t, None, num_requests) for t in THEOREMS)]


def controls(num_requests: int = PAGED_N) -> list[PagedStepResult]:
    """Each theorem on each of its control policies: every one must be refuted."""
    return [prove(t, control(), num_requests) for t in THEOREMS for control in t.controls]
