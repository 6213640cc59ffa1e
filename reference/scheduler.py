"""The reference scheduler: continuous batching with a token budget and chunked prefill.

Each scheduling step corresponds to a single forward pass. `schedule()` plans it and admits requests;
`complete(plan)` records that it ran and returns the rids that emitted a token. Nothing else moves
state. The rules it keeps are stated, and checked, in `stallfree.spec`.

State: `_running` holds the admitted, unfinished requests in admission order; each of them is either
in `_partial` (prompt not done) or in `_ready` (prompt done, tokens to emit), never both.
"""

from __future__ import annotations

from collections import deque

from stallfree.spec.errors import InvalidField, ProtocolError
from stallfree.spec.types import Config, Entry, Plan, Request, admissible

from .progress import Phase, Progress
from .sequence import Sequence


class Scheduler:
    """Spends a budget of `token_budget` tokens a step: decodes, then partial prompts, then admissions."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.config = Config(token_budget, max_seqs, kv_tokens)
        self._sequences: dict[int, Sequence] = {}  # every request ever accepted, by rid
        self._waiting: deque[Sequence] = deque()  # arrival order
        self._running: dict[int, Sequence] = {}  # admitted, unfinished; admission order
        self._partial: dict[int, Sequence] = {}  # running, prompt not done; admission order
        self._ready: dict[int, Entry] = {}  # running, prompt done: rid -> its decode entry
        self._finishing: dict[int, list[Sequence]] = {}  # step -> requests emitting their last token then
        self._free_kv = kv_tokens
        self._num_steps = 0  # plans completed
        self._planned: Plan | None = None  # the plan schedule() returned, until complete() takes it

    # -- the plain protocol --------------------------------------------------------------------

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        """Queue a request at the back of the waiting line. Raises (state unchanged) if it is
        invalid, if its rid is taken, or if it could never fit the KV capacity (rule NEVER-FIT)."""
        request = admissible(Request(rid, prompt_len, max_new), self.config)
        if rid in self._sequences:
            raise InvalidField(f"rid {rid} is already taken by an earlier request")
        sequence = Sequence(request)
        self._sequences[rid] = sequence
        self._waiting.append(sequence)

    def schedule(self) -> Plan:
        """Plan the next step and admit the requests it starts. Raises if a plan is still pending."""
        if self._planned is not None:
            raise ProtocolError(
                f"schedule() called again before complete(): the plan for step {self._planned.step} "
                "is still pending"
            )
        left = self.config.token_budget
        # 1. Decodes first, one token for every ready request. A running stream's next token is
        #    what a user is waiting on now; giving it the budget before any prompt bounds the time
        #    per output token by one step of at most B tokens, however long the prompts that arrive.
        #    They always all fit (READY-WITHIN-BUDGET: a request becomes ready only in a step that
        #    also decoded every request ready before it), and complete() relies on that.
        if len(self._ready) > left:
            raise AssertionError(f"READY-WITHIN-BUDGET: {len(self._ready)} ready requests, budget {left}")
        entries = list(self._ready.values())
        left -= len(entries)
        # 2. Then the rest of partial prompts, oldest first. They already hold a slot and their KV;
        #    finishing them before starting new ones turns reserved memory into output soonest.
        for seq in self._partial.values():
            if left == 0:  # never taken while B is fixed (ONE-PARTIAL and READY-WITHIN-BUDGET keep the
                break  # ready count below B beside a partial), but it keeps this loop from planning n=0
            n = min(seq.num_remaining_prompt, left)
            entries.append(Entry(seq.rid, n))
            left -= n
        # 3. Then new requests, first come first served, while budget, a slot and the whole
        #    reservation are there. Admission stops at the first that does not fit: skipping ahead
        #    to a smaller one could starve a large request forever.
        while left and self._waiting and len(self._running) < self.config.max_seqs:
            seq = self._waiting[0]
            if seq.request.reservation > self._free_kv:
                break
            self._waiting.popleft()
            self._running[seq.rid] = self._partial[seq.rid] = seq
            self._free_kv -= seq.request.reservation
            n = min(seq.request.prompt_len, left)
            entries.append(Entry(seq.rid, n))
            left -= n
        self._planned = Plan(self._num_steps, tuple(entries))
        return self._planned

    def complete(self, plan: Plan) -> tuple[int, ...]:
        """Record that `plan` ran. Returns the rids that emitted a token: the decodes, then the
        requests whose prompt this step completed."""
        if self._planned is None:
            raise ProtocolError(
                f"complete() without a pending plan: call schedule() first (steps completed: "
                f"{self._num_steps})"
            )
        if plan is not self._planned and plan != self._planned:
            raise ProtocolError(
                f"complete() got a plan that is not the pending one (pending: step "
                f"{self._planned.step}, got: {plan!r:.120})"
            )
        step = self._num_steps
        emitted = list(self._ready)  # every ready request was decoded; each emits a token
        for rid, n in plan.entries[len(emitted) :]:  # the prompt chunks, after the decodes
            seq = self._partial[rid]
            seq.num_prefilled += n
            if seq.num_prefilled == seq.request.prompt_len:
                # The chunk that completes a prompt yields the first token from its last position.
                emitted.append(rid)
                del self._partial[rid]
                self._ready[rid] = seq.decode
                seq.first_token_step = step
                self._finishing.setdefault(step + seq.request.max_new - 1, []).append(seq)
        # A request finishes on the step that emits its max_new-th token, and returns its KV then.
        for seq in self._finishing.pop(step, ()):
            del self._running[seq.rid]
            del self._ready[seq.rid]
            self._free_kv += seq.request.reservation
        self._planned = None
        self._num_steps += 1
        return tuple(emitted)

    # -- read-only views -----------------------------------------------------------------------

    @property
    def waiting(self) -> tuple[Request, ...]:
        """Requests not yet admitted, in arrival order."""
        return tuple(seq.request for seq in self._waiting)

    @property
    def running(self) -> tuple[Request, ...]:
        """Admitted, unfinished requests, in admission order."""
        return tuple(seq.request for seq in self._running.values())

    @property
    def free_kv(self) -> int:
        """KV tokens not reserved by a running request."""
        return self._free_kv

    @property
    def num_steps(self) -> int:
        return self._num_steps

    @property
    def is_idle(self) -> bool:
        """Nothing waiting and nothing running: the next plan is empty."""
        return not self._waiting and not self._running

    def progress(self, rid: int) -> Progress:
        """Where request `rid` is. Raises KeyError naming the rid if it was never accepted."""
        seq = self._sequences.get(rid)
        if seq is None:
            raise KeyError(f"rid {rid!r} was never accepted")
        if rid in self._partial:
            phase = Phase.PARTIAL
        elif rid in self._ready:
            phase = Phase.READY
        elif seq.first_token_step is not None:
            phase = Phase.FINISHED
        else:
            phase = Phase.WAITING
        r = seq.request
        return Progress(rid, phase, r.prompt_len, r.max_new, seq.num_prefilled, seq.num_emitted(self._num_steps))
