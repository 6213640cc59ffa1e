"""The contract's policy written as small overridable steps, so that each deliberately wrong
scheduler in `catalog` overrides exactly one of them.

Not the reference: a second, independent rendering of the policy, made so that variants and faults
can each change one step. Its unmodified form passes the monitor (tests check that), so a fault's
violation is the fault's own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from stallfree.spec import Config, InvalidField, Request, admissible

from .stops import check_stopped


@dataclass(slots=True)
class StepwiseSequence:
    """One request inside `Stepwise`: the reference's `Sequence`, its emitted tokens counted, not derived."""

    request: Request
    num_prefilled: int = 0
    num_emitted: int = 0

    @property
    def rid(self) -> int:
        return self.request.rid

    @property
    def is_ready(self) -> bool:
        return self.num_prefilled >= self.request.prompt_len


class Stepwise:
    """Plain-protocol scheduler: decodes, partial prompts, admissions, each its own method."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.config = Config(token_budget, max_seqs, kv_tokens)
        self.seqs: dict[int, StepwiseSequence] = {}
        self.waiting: deque[StepwiseSequence] = deque()
        self.running: dict[int, StepwiseSequence] = {}
        self.free_kv = kv_tokens
        self.num_steps = 0
        self.pending: list[tuple[int, int]] | None = None  # the plan awaiting complete()
        self.cancelling: list[StepwiseSequence] = []  # running, cancelled while the plan is pending

    # -- add ---------------------------------------------------------------------------------------

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        request = self.validate(rid, prompt_len, max_new)
        seq = StepwiseSequence(request)
        self.seqs[rid] = seq
        self.waiting.append(seq)

    def validate(self, rid: int, prompt_len: int, max_new: int) -> Request:
        request = admissible(Request(rid, prompt_len, max_new), self.config)
        if rid in self.seqs:
            raise InvalidField(f"rid {rid} is already taken")
        return request

    # -- schedule ----------------------------------------------------------------------------------

    def schedule(self) -> list[tuple[int, int]]:
        plan: list[tuple[int, int]] = []
        left = self.config.token_budget
        for phase in self.phases():
            left = phase(plan, left)
        self.pending = plan
        return plan

    def phases(self):  # type: ignore[no-untyped-def]
        return (self.plan_decodes, self.plan_partials, self.admit)

    def plan_decodes(self, plan: list[tuple[int, int]], left: int) -> int:
        for seq in self.running.values():
            if left and seq.is_ready:
                plan.append((seq.rid, 1))
                left -= 1
        return left

    def plan_partials(self, plan: list[tuple[int, int]], left: int) -> int:
        planned = {rid for rid, _ in plan}  # a fault that admits first has given its admissions a chunk
        for seq in self.running.values():
            if left and not seq.is_ready and seq.rid not in planned:
                n = self.chunk(seq, left)
                plan.append((seq.rid, n))
                left -= n
        return left

    def chunk(self, seq: StepwiseSequence, left: int) -> int:
        return min(seq.request.prompt_len - seq.num_prefilled, left)

    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        while left and self.waiting:
            seq = self.next_admission()
            if seq is None:
                break
            left = self.start(seq, plan, left)
        return left

    def start(self, seq: StepwiseSequence, plan: list[tuple[int, int]], left: int) -> int:
        """Admit `seq`: take its slot and reservation, give it its first chunk."""
        self.take(seq)
        n = min(seq.request.prompt_len, left)
        plan.append((seq.rid, n))
        return left - n

    def take(self, seq: StepwiseSequence) -> None:
        """Move `seq` from the waiting line to the running set, with its slot and reservation."""
        self.waiting.remove(seq)
        self.running[seq.rid] = seq
        self.free_kv -= seq.request.reservation

    def next_admission(self) -> StepwiseSequence | None:
        head = self.waiting[0]
        return head if self.fits(head) else None

    def fits(self, seq: StepwiseSequence) -> bool:
        return len(self.running) < self.config.max_seqs and seq.request.reservation <= self.free_kv

    # -- complete ----------------------------------------------------------------------------------

    def complete(self, plan: list[tuple[int, int]], stopped: Iterable[int] = ()) -> list[int]:
        stopped = self.check_stopped(plan, stopped) if stopped else ()
        self.pending = None
        emitted: list[int] = []
        for rid, n in plan:
            seq = self.running[rid]
            if seq.is_ready:
                self.emit(seq, emitted)
            else:
                seq.num_prefilled += n
                if seq.is_ready:
                    self.on_prompt_done(seq, emitted)
        self.num_steps += 1
        for rid in stopped:
            self.on_stop(self.seqs[rid])
        for seq in self.cancelling:
            if seq.rid in self.running:
                self.release(seq)
        self.cancelling = []
        return emitted

    def check_stopped(self, plan: list[tuple[int, int]], stopped: Iterable[int]) -> tuple[int, ...]:
        """`stopped` as a tuple; raise (nothing changed) unless each rid in it emits a token in `plan`:
        a decode, or a chunk that completes its prompt (TOKENS)."""
        chunks = dict(plan)

        def emits(rid: int) -> bool:
            seq, n = self.running.get(rid), chunks.get(rid)
            return seq is not None and n is not None and seq.num_prefilled + n >= seq.request.prompt_len

        return check_stopped(stopped, emits, self.num_steps)

    def on_stop(self, seq: StepwiseSequence) -> None:
        """`seq`'s token in this step ended it."""
        if seq.rid in self.running:  # not already done by its last token
            self.release(seq)

    # -- cancel ------------------------------------------------------------------------------------

    def cancel(self, rid: int) -> None:
        """CANCEL: a waiting request leaves the line now, a running one ends now or, with a plan pending,
        when it completes; any other rid raises naming it, nothing changed."""
        seq = self.seqs.get(rid) if type(rid) is int else None
        if seq is None or not (self.is_waiting(seq) or rid in self.running) or seq in self.cancelling:
            raise InvalidField(f"cancel({rid!r}): not a waiting or running request (or already cancelled)")
        if rid not in self.running:
            self.leave_line(seq)
        elif self.pending is not None:
            self.cancelling.append(seq)
        else:
            self.on_cancel(seq)

    def is_waiting(self, seq: StepwiseSequence) -> bool:
        return seq in self.waiting

    def leave_line(self, seq: StepwiseSequence) -> None:
        """A cancelled waiting request leaves the line; those behind it move up."""
        self.waiting.remove(seq)

    def on_cancel(self, seq: StepwiseSequence) -> None:
        """A running request is cancelled with no plan pending: it ends now."""
        self.release(seq)

    def on_prompt_done(self, seq: StepwiseSequence, emitted: list[int]) -> None:
        self.emit(seq, emitted)

    def emit(self, seq: StepwiseSequence, emitted: list[int]) -> None:
        seq.num_emitted += 1
        emitted.append(seq.rid)
        if self.is_done(seq):
            self.release(seq)

    def is_done(self, seq: StepwiseSequence) -> bool:
        return seq.num_emitted >= seq.request.max_new

    def release(self, seq: StepwiseSequence) -> None:
        del self.running[seq.rid]
        self.free_kv += seq.request.reservation
