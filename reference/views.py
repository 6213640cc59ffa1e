"""The reference scheduler's state, declared once, and what it shows of it: read-only views, none of
which moves it.

`Scheduler` inherits both; its constructor sets the state. `progress(rid)` and `ended` are the bounded
record a server reads right after the complete() that ended a request (docs/spec.md, "Memory"); the
proofs and tests read them too.
"""

from __future__ import annotations

from collections import OrderedDict

from stallfree.spec.types import Config, Entry, Request

from .progress import Phase, Progress
from .sequence import Sequence
from .step import Step


class Views:
    """The state of `Scheduler` and its read-only views: four fields of state, then three that restate
    it, each kept for the speed it buys (measured in docs/architecture.md, "The reference's concept
    count"; `_ready` holds its requests as their decode entries for the same reason)."""

    config: Config
    _waiting: OrderedDict[int, Sequence]  # the line, by rid in arrival order (its head and a cancel: O(1))
    # The running requests by rid, in admission order: the ready ones, then the partial ones (a prompt
    # completes only after every older one has: PARTIAL-NEXT), so the partial ones are its tail.
    _running: dict[int, Sequence]
    _step: Step  # the step count, the plan in flight and its cancels, the last step's ends
    # Restated: the ready requests (prompt done) by rid, as their decode entries (the plan's decodes,
    # built once); each ready request by the step of its last token; K minus the running requests'
    # reservations.
    _ready: dict[int, Entry]
    _finishing: dict[int, list[Sequence]]
    _free_kv: int

    @property
    def waiting(self) -> tuple[Request, ...]:
        """Requests not yet admitted, in arrival order."""
        return tuple(seq.request for seq in self._waiting.values())

    @property
    def running(self) -> tuple[Request, ...]:
        """Admitted, unfinished requests, in admission order: the ready ones, then the partial ones."""
        return tuple(seq.request for seq in self._running.values())

    @property
    def free_kv(self) -> int:
        """KV tokens not reserved by a running request."""
        return self._free_kv

    @property
    def num_steps(self) -> int:
        return self._step.number

    @property
    def is_idle(self) -> bool:
        """Nothing waiting and nothing running: the next plan is empty."""
        return not self._waiting and not self._running

    @property
    def ended(self) -> tuple[int, ...]:
        """Rids of the requests that ended in the last completed step (or were cancelled since)."""
        return tuple(self._step.ended)

    def progress(self, rid: int) -> Progress:
        """Where request `rid` is: waiting or running, or how it ended if that was in the last completed
        step (or a cancel since). Raises KeyError naming the rid for any other: the scheduler keeps
        no record of requests that ended before, so that its memory stays bounded."""
        seq = self._running.get(rid)
        if seq is not None:
            phase = Phase.READY if rid in self._ready else Phase.PARTIAL
        elif (seq := self._waiting.get(rid)) is not None:
            phase = Phase.WAITING
        else:
            ended = self._step.ended.get(rid)
            if ended is None:
                raise KeyError(f"rid {rid!r} is not waiting or running, and did not end in the last step "
                               "(never accepted, or ended earlier: no record of it is kept)")
            seq, phase = ended  # it ended on the last completed step or since: its count is final
        r = seq.request
        return Progress(rid, phase, r.prompt_len, r.max_new, seq.num_prefilled, seq.num_emitted(self._step.number))
