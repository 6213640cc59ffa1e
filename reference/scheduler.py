"""The reference scheduler: continuous batching with a token budget and chunked prefill.

Each scheduling step corresponds to a single forward pass. `schedule()` plans it and admits requests;
`complete(plan, stopped)` records that it ran (and which requests' tokens ended them) and returns the
rids that emitted a token; `cancel(rid)` takes a request away. Nothing else moves state. The rules it
keeps are stated, and checked, in `stallfree.spec`; its state, declared once, and what it shows of it
(`free_kv`, `running`, `progress`, ...) are in `views.py`, and the post-conditions its state keeps
after every call, each citing the spec's invariant or rule, in `postconditions.py`. An ended request
is dropped: memory is bounded by what waits and runs, and a rid is free again once its request ended.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from itertools import islice

from stallfree.spec.errors import FieldTypeError, InvalidField, ProtocolError
from stallfree.spec.types import Config, Entry, Plan, Request, admissible

from .progress import Phase
from .sequence import Sequence
from .step import Step
from .stops import checked_stops
from .views import Views

NO_STOPS: tuple[int, ...] = ()  # complete()'s default: the plain protocol's call, checked for nothing


class Scheduler(Views):
    """Spends a budget of `token_budget` tokens a step: decodes, then partial prompts, then admissions."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.config = Config(token_budget, max_seqs, kv_tokens)
        self._waiting = OrderedDict()
        self._running = {}
        self._ready = {}
        self._step = Step(0)
        self._finishing = {}
        self._free_kv = kv_tokens

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        """Queue a request at the back of the waiting line. Raises (state unchanged) if it is
        invalid, if its rid is taken by a request that has not ended, or if it could never fit the KV
        capacity (rule NEVER-FIT)."""
        request = admissible(Request(rid, prompt_len, max_new), self.config)
        if rid in self._waiting or rid in self._running:
            raise InvalidField(f"rid {rid} is already taken by an earlier request")
        self._step.ended.pop(rid, None)
        self._waiting[rid] = Sequence(request)

    def cancel(self, rid: int) -> None:
        """Take request `rid` away (rule CANCEL). A waiting one leaves the line now; a running one ends
        now and returns its reservation, or, named in a pending plan, ends when complete() runs. A rid
        that is not waiting or running, or already cancelled, raises naming it, and nothing changes:
        a repeated cancel is an error, not a no-op, so that a caller's double bookkeeping shows."""
        if type(rid) is not int:
            raise FieldTypeError(f"cancel({rid!r:.40}): rid must be an int, got {type(rid).__name__}")
        step = self._step
        seq = self._running.get(rid)
        if seq is None:
            seq = self._waiting.pop(rid, None)
            if seq is None:  # no record of ended requests is kept: which of the two it was is not known
                raise InvalidField(f"cancel({rid}): it is not waiting or running (never added, or ended)")
            step.ended[rid] = (seq, Phase.CANCELLED)
        elif rid in step.cancelled:
            raise InvalidField(f"cancel({rid}): it is already cancelled and ends when the plan for step "
                               f"{step.number} completes")
        elif step.plan is not None:
            step.cancelled[rid] = seq
        else:
            self._end(seq, Phase.CANCELLED)

    def schedule(self) -> Plan:
        """Plan the next step and admit the requests it starts. Raises if a plan is still pending."""
        if self._step.plan is not None:
            raise ProtocolError(f"schedule() called again before complete(): the plan for step "
                                f"{self._step.number} is still pending")
        left = self.config.token_budget
        # 1. Decodes first, one token for every ready request. A running stream's next token is
        #    what a user is waiting on now; giving it the budget before any prompt bounds the time
        #    per output token by one step of at most B tokens, however long the prompts that arrive.
        #    They always all fit (READY-WITHIN-BUDGET: a request becomes ready only in a step that
        #    also decoded every request ready before it), and complete() relies on that.
        entries = list(self._ready.values())
        num_ready = len(entries)
        if num_ready > left:
            raise AssertionError(f"READY-WITHIN-BUDGET: {num_ready} ready requests, budget {left}")
        left -= num_ready
        # 2. Then the rest of partial prompts, oldest first. They already hold a slot and their KV;
        #    finishing them before starting new ones turns reserved memory into output soonest. They
        #    are the running requests after the ready ones (PARTIAL-NEXT), read from the end: a few,
        #    and on most steps none, so the loop is not even set up then.
        if len(self._running) > num_ready:
            for seq in reversed([*islice(reversed(self._running.values()), len(self._running) - num_ready)]):
                if left == 0:  # never taken while B is fixed (ONE-PARTIAL and READY-WITHIN-BUDGET keep
                    break  # the ready count below B beside a partial), but it keeps this loop from planning n=0
                n = min(seq.num_remaining_prompt, left)
                entries.append(Entry(seq.rid, n))
                left -= n
        # 3. Then new requests, first come first served, while budget, a slot and the whole
        #    reservation are there. Admission stops at the first that does not fit: skipping ahead
        #    to a smaller one could starve a large request forever.
        while left and self._waiting and len(self._running) < self.config.max_seqs:
            seq = next(iter(self._waiting.values()))
            if seq.request.reservation > self._free_kv:
                break
            rid, seq = self._waiting.popitem(last=False)
            self._running[rid] = seq
            self._free_kv -= seq.request.reservation
            n = min(seq.request.prompt_len, left)
            entries.append(Entry(rid, n))
            left -= n
        plan = Plan(self._step.number, tuple(entries))
        self._step.plan = plan
        return plan

    def complete(self, plan: Plan, stopped: Iterable[int] = NO_STOPS) -> tuple[int, ...]:
        """Record that `plan` ran, and that the requests in `stopped` ended on the token they emitted
        in it (an end-of-sequence token or a stop string). Returns the rids that emitted a token: the
        decodes, then the requests whose prompt this step completed. Raises, changing nothing, if a
        rid in `stopped` emitted no token in this step."""
        record = self._step
        pending = record.plan
        if pending is None:
            raise ProtocolError(f"complete() without a pending plan: call schedule() first (steps completed: "
                                f"{record.number})")
        if plan is not pending and plan != pending:
            raise ProtocolError(f"complete() got a plan that is not the pending one (pending: step {record.number}, "
                                f"got: {plan!r:.120})")
        if stopped is not NO_STOPS:
            stopped = checked_stops(self, plan, stopped)
        step = record.number
        if record.ended:
            record.ended = {}
        # Every ready request was decoded and emits a token; so does each whose prompt this step
        # completes, joining the ready ones in plan order: the ready ones, read before any ends, emitted.
        for rid, n in plan.entries[len(self._ready) :]:  # the prompt chunks, after the decodes
            seq = self._running[rid]
            seq.num_prefilled += n
            if seq.num_prefilled == seq.request.prompt_len:
                # The chunk that completes a prompt yields the first token from its last position; it
                # stays where it is in `_running`, now the last of the ready ones.
                self._ready[rid] = seq.decode
                seq.first_token_step = step
                self._finishing.setdefault(step + seq.request.max_new - 1, []).append(seq)
        emitted = tuple(self._ready)
        record.plan = None
        record.number = step + 1
        # A request ends on the step that emits its max_new-th token, or its stop, or that completes
        # its plan after a cancel, and returns its KV then.
        if stopped:  # the plain protocol's call names none: no loop entered
            for rid in stopped:
                self._end(self._running[rid], Phase.STOPPED)
        finishing = self._finishing.pop(step, None)
        if finishing:  # the common end, written out: it runs for several requests a step under load
            ended = record.ended
            for seq in finishing:
                rid = seq.rid
                del self._ready[rid]
                del self._running[rid]
                self._free_kv += seq.request.reservation
                ended[rid] = (seq, Phase.FINISHED)
        if record.cancelled:
            cancelled, record.cancelled = record.cancelled, {}
            for rid, seq in cancelled.items():
                if rid in self._running:  # not ended by its last token or a stop on this step
                    self._end(seq, Phase.CANCELLED)
        return emitted

    def _end(self, seq: Sequence, phase: Phase) -> None:
        """`seq` ends early (stops or is cancelled) once the step count is final: it leaves every
        container and returns its reservation."""
        rid = seq.rid
        del self._running[rid]
        if self._ready.pop(rid, None) is not None:  # still due its last token on a later step: take it off that step
            due = seq.first_token_step + seq.request.max_new - 1  # type: ignore[operator]
            finishing = self._finishing[due]
            finishing.remove(seq)
            if not finishing:
                del self._finishing[due]
        self._free_kv += seq.request.reservation
        self._step.ended[rid] = (seq, phase)
