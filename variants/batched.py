"""The policy in the reference's incremental form, with the choices a variant makes as hooks, so that a
variant's step costs about what the reference's does (benchmarks/variants_step.py).

Like the reference, it keeps each ready request's decode entry and copies them as one list, and finds
the requests that finish from the step they are due. Unlike it, a step may decode fewer than all ready
requests (after a budget drop): then no prompt runs, and through such a run of short steps each ready
request counts the tokens it has left instead (only the decoded ones change), its due step set again
at the next step that decodes them all. A prompt left unfinished by its chunk ends the step's
prefill, as under every contract here.

The hooks: `chunk(remaining, left)`, the chunk a prompt gets (min: the reference's; whole blocks:
aligned); `over_budget(left)`, the decodes when the ready requests outnumber the budget (oldest
first: the reference's rule; longest waiting: rotation); `head()` and `pop_head()`, the admission
order (arrival: FCFS; effective priority: aging). A second rendering, independent of the reference
and of `Stepwise`; tests hold its variants' plans to theirs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice

from stallfree.spec import Config, InvalidField, Request, admissible

from .stops import check_stopped

Decode = tuple[int, int]


@dataclass(slots=True)
class BatchedSequence:
    request: Request
    num_prefilled: int = 0
    due: int | None = None  # the step that emits its last token; None until its prompt is done
    tokens_left: int = 0  # tokens still to emit, kept through a run of short steps only
    rank: int = 0  # admission order
    ended: bool = False  # finished, stopped or cancelled
    decode: Decode = field(init=False)

    def __post_init__(self) -> None:
        self.decode = (self.request.rid, 1)


class Batched:
    """Decodes, then the partial prompt, then admissions, spent from a budget as the reference does."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.config = Config(token_budget, max_seqs, kv_tokens)
        self.seqs: dict[int, BatchedSequence] = {}  # every request accepted, by rid
        self.waiting: deque[BatchedSequence] = deque()  # arrival order (FCFS's queue; a variant may keep its own)
        self.running: dict[int, BatchedSequence] = {}  # admitted, unfinished; admission order
        self.partial: dict[int, BatchedSequence] = {}  # running, prompt not done
        self.ready: dict[int, Decode] = {}  # running, prompt done: rid -> its decode entry
        self.finishing: dict[int, dict[int, BatchedSequence]] = {}  # step -> the requests due to finish then
        self.free_kv = kv_tokens
        self.num_steps = 0
        self.num_decodes = 0  # the decodes at the head of the pending plan
        self.num_admitted = 0
        self.in_short_run = False  # the last step decoded fewer than all ready requests
        self.pending = False  # a plan awaits complete()
        self.cancelling: list[BatchedSequence] = []  # running, cancelled while the plan is pending

    # -- add ---------------------------------------------------------------------------------------

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        self.enqueue(self.accept(rid, prompt_len, max_new))

    def accept(self, rid: int, prompt_len: int, max_new: int) -> BatchedSequence:
        """Validate and record a request (raises, state unchanged, as NEVER-FIT asks)."""
        request = admissible(Request(rid, prompt_len, max_new), self.config)
        if rid in self.seqs:
            raise InvalidField(f"rid {rid} is already taken by an earlier request")
        seq = self.seqs[rid] = BatchedSequence(request)
        return seq

    def enqueue(self, seq: BatchedSequence) -> None:
        self.waiting.append(seq)

    # -- the hooks ---------------------------------------------------------------------------------

    def chunk(self, remaining: int, left: int) -> int:
        return min(remaining, left)

    def over_budget(self, left: int) -> list[Decode]:
        return list(islice(self.ready.values(), left))  # the oldest ready requests

    def head(self) -> BatchedSequence | None:
        return self.waiting[0] if self.waiting else None

    def pop_head(self) -> None:
        self.waiting.popleft()

    # -- schedule ----------------------------------------------------------------------------------

    def schedule(self) -> list[Decode]:
        self.pending = True  # a cancel from now until complete() waits for it
        left = self.config.token_budget
        if len(self.ready) > left:  # only after a budget drop: decodes alone, no prompt
            plan = self.over_budget(left)
            self.num_decodes = len(plan)
            return plan
        plan = list(self.ready.values())
        self.num_decodes = len(plan)
        left -= len(plan)
        for seq in self.partial.values():
            remaining = seq.request.prompt_len - seq.num_prefilled
            n = self.chunk(remaining, left) if left else 0
            if n:
                plan.append((seq.request.rid, n))
                left -= n
            if n < remaining:
                return plan  # a prompt left unfinished ends the step's prefill
        while left and len(self.running) < self.config.max_seqs:
            seq = self.head()
            if seq is None or seq.request.reservation > self.free_kv:
                break  # the head blocks everyone behind it
            request = seq.request
            n = self.chunk(request.prompt_len, left)
            if n == 0:
                break
            self.pop_head()
            self.running[request.rid] = self.partial[request.rid] = seq
            self.free_kv -= request.reservation
            seq.rank = self.num_admitted
            self.num_admitted += 1
            plan.append((request.rid, n))
            left -= n
            if n < request.prompt_len:
                break
        return plan

    # -- complete ----------------------------------------------------------------------------------

    def complete(self, plan: list[Decode], stopped: Iterable[int] = ()) -> list[int]:
        """Record that `plan` ran and that the requests in `stopped` ended on its token; returns the rids
        that emitted a token. Raises, changing nothing, on a stop of a rid that emitted none (TOKENS)."""
        stops = check_stopped(stopped, self.emits_in(plan), self.num_steps) if stopped else ()
        self.pending = False
        emitted = self.run_step(plan)
        if stops or self.cancelling:
            self.end_after_step(stops)
        return emitted

    def end_after_step(self, stops: tuple[int, ...]) -> None:
        """The step's stops, then the cancels made while its plan was pending, end their requests
        (those its last token did not already end)."""
        for seq in (*(self.seqs[rid] for rid in stops), *self.cancelling):
            if not seq.ended:
                self.end(seq)
        self.cancelling = []

    def emits_in(self, plan: list[Decode]) -> Callable[[int], bool]:
        """Whether a rid emits a token in `plan`: a decode of a ready request, or a chunk that
        completes its prompt."""
        ready, partial, chunks = self.ready, self.partial, dict(plan[self.num_decodes:])
        decoded = {rid for rid, _ in plan[:self.num_decodes]}

        def emits(rid: int) -> bool:
            if rid in ready:
                return rid in decoded
            seq = partial.get(rid)
            return seq is not None and chunks.get(rid) == seq.request.prompt_len - seq.num_prefilled

        return emits

    def run_step(self, plan: list[Decode]) -> list[int]:
        step = self.num_steps
        ready, k = self.ready, self.num_decodes
        if k < len(ready):
            return self.complete_short(step, [rid for rid, _ in plan])
        if self.in_short_run:
            self.end_short_run(step)
        emitted = list(ready)
        self.on_full_step(step)
        for rid, n in plan[k:]:
            seq = self.partial[rid]
            seq.num_prefilled += n
            if seq.num_prefilled == seq.request.prompt_len:  # the first token, from the last position
                emitted.append(rid)
                del self.partial[rid]
                ready[rid] = seq.decode
                seq.due = step + seq.request.max_new - 1
                self.finishing.setdefault(seq.due, {})[rid] = seq
        for rid, seq in self.finishing.pop(step, {}).items():
            del self.running[rid]
            del ready[rid]
            self.free_kv += seq.request.reservation
            seq.ended = True
        self.num_steps += 1
        return emitted

    def complete_short(self, step: int, decoded: list[int]) -> list[int]:
        """A step that decoded only `decoded` of the ready requests (and ran no prompt)."""
        if not self.in_short_run:
            self.start_short_run(step)
        running = self.running
        for rid in decoded:
            seq = running[rid]
            seq.tokens_left -= 1
            if seq.tokens_left == 0:
                del running[rid]
                del self.ready[rid]
                self.free_kv += seq.request.reservation
                seq.ended = True
        self.on_short_step(step, decoded)
        self.num_steps += 1
        return decoded

    def start_short_run(self, step: int) -> None:
        """From due steps to tokens left, for every ready request: only the decoded ones count down now."""
        for rid in self.ready:
            seq = self.running[rid]
            assert seq.due is not None  # ready: due since its prompt completed
            seq.tokens_left = seq.due - step + 1
        self.finishing.clear()  # only ready requests are in it
        self.in_short_run = True

    def end_short_run(self, step: int) -> None:
        """Back from tokens left to due steps: from `step` on every ready request is decoded each step."""
        for rid in self.ready:
            seq = self.running[rid]
            seq.due = step + seq.tokens_left - 1
            self.finishing.setdefault(seq.due, {})[rid] = seq
        self.in_short_run = False

    # -- cancel ------------------------------------------------------------------------------------

    def cancel(self, rid: int) -> None:
        """CANCEL: a waiting request leaves the line now, a running one ends now or, with a plan pending,
        when it completes; any other rid (never added, ended, already cancelled) raises naming it,
        nothing changed."""
        seq = self.seqs.get(rid) if type(rid) is int else None
        if seq is None or seq.ended or seq in self.cancelling:
            raise InvalidField(f"cancel({rid!r}): not a waiting or running request (or already cancelled)")
        if rid not in self.running:
            self.leave_line(seq)
            seq.ended = True
        elif self.pending:
            self.cancelling.append(seq)
        else:
            self.end(seq)

    def leave_line(self, seq: BatchedSequence) -> None:
        """A cancelled waiting request leaves the line; those behind it move up."""
        self.waiting.remove(seq)

    def end(self, seq: BatchedSequence) -> None:
        """A running request stops or is cancelled between steps: it leaves every container (its due
        step's too) and returns its reservation."""
        rid = seq.request.rid
        del self.running[rid]
        if self.partial.pop(rid, None) is None:
            del self.ready[rid]
            if not self.in_short_run:  # through a short run it counts tokens left, due nowhere
                assert seq.due is not None  # ready: due since its prompt completed
                due = self.finishing[seq.due]
                del due[rid]
                if not due:
                    del self.finishing[seq.due]
        self.free_kv += seq.request.reservation
        seq.ended = True
        self.on_end(seq)

    def on_end(self, seq: BatchedSequence) -> None:
        """`seq` stopped or was cancelled (not at its last token)."""

    def on_full_step(self, step: int) -> None:
        """Every ready request was decoded at `step`."""

    def on_short_step(self, step: int, decoded: list[int]) -> None:
        """Only `decoded` of the ready requests got a token at `step` (those that finished are gone)."""


class BatchedResizable(Batched):
    """The policy with set_budget(B): oldest first when the ready requests outnumber it."""

    def set_budget(self, token_budget: int) -> None:
        """Raises (state unchanged) unless `token_budget` is an int >= 1."""
        self.config = Config(token_budget, self.config.max_seqs, self.config.kv_tokens)
