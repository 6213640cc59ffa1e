"""A Hypothesis state machine that checks any plain-protocol scheduler against the contract.

Shipped in the package so that any scheduler can be checked with it, not only the reference:

    from stallfree.testing.machine import machine_for
    TestMyScheduler = machine_for(MyScheduler).TestCase   # a unittest TestCase pytest collects

Actions (rules) are what a server does to a scheduler: add a request that fits, add the largest one
K allows, offer one that never fits or has a bad field or a taken rid (it must be refused, nothing
else changing), run a step, run several steps with no arrivals, drain; and, for a scheduler that
supports them (`stallfree.spec.capability`), a step in which any emitted token may be a stop (each
due token a coin flip), a stop naming a rid that emits nothing (it must be refused, nothing
changing), cancels of a waiting, partial or ready request, a cancel while a plan is pending, and
cancels that must be refused (a rid never added, ended, or already cancelled). Every step goes through the
`Monitor`, so each step is judged by the same rule predicates (`stallfree.spec.reservation.rules`) as every
other check; the invariants call those predicates too, between actions. `note()` records each
action, so a shrunk failure reads as a trace.

This is the only module of `stallfree.spec` that imports Hypothesis (the `dev` extra).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from stallfree.spec.capability import CANCEL, STOP
from stallfree.spec.errors import RuleViolation
from stallfree.spec.invariant import Invariant
from stallfree.spec.reservation.facts import StepFacts
from stallfree.spec.reservation.invariants import INVARIANTS
from stallfree.spec.reservation.monitor import Monitor
from stallfree.spec.reservation.shadow import Shadow
from stallfree.spec.shown import shown, visible
from stallfree.spec.types import Config

MAX_BUDGET = 64  # B in 1..64: budget 1 (one-token chunks, decodes crowding prefill out) is the edge
MAX_SLOTS = 8  # S in 1..8: one slot is the edge
MAX_PROMPT = 96
MAX_NEW = 24
EDGE_SHARE = 4  # one config draw in 4 takes the edge value of a limit (budget 1, one slot, K = largest)
MIN_LARGEST = 2  # the smallest request reserves prompt_len 1 + max_new 1
SHORT_PROMPT = 8  # prompts up to this long are drawn often, so that several fit one step
MAX_BURST = 6  # requests one `add_burst` action offers before the same step
MAX_RUN = 16  # steps one `run_steps` action may take with no arrivals
# Field values add() must refuse: zero, negative, a bool, a float, None, a str, an int past int64.
BAD_VALUES: tuple[object, ...] = (0, -1, True, 3.0, None, "7", 2**63)
FIELDS = ("rid", "prompt_len", "max_new")


@st.composite
def configs(draw: st.DrawFn) -> tuple[Config, int]:
    """A config and the largest reservation the machine will offer, `largest`.

    KV runs from exactly `largest` (one such request at a time: the edge) to room for every slot.
    Shrinking goes towards budget 1, one slot and KV equal to the largest request."""
    budget = draw(edge_or(1, st.integers(1, MAX_BUDGET)))
    max_seqs = draw(edge_or(1, st.integers(1, MAX_SLOTS)))
    largest = draw(st.integers(MIN_LARGEST, MAX_PROMPT + MAX_NEW))
    # Tight KV (a large request and a small one) is where FCFS blocking happens; generous KV is
    # where slots and the budget are what limit admission.
    extra = draw(edge_or(0, st.integers(0, largest), st.integers(0, largest * max_seqs)))
    return Config(budget, max_seqs, largest + extra), largest


def edge_or(edge: int, *others: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    """`edge` in one draw of EDGE_SHARE, else one of `others`; shrinks towards `edge`."""
    choice = st.sampled_from(range(EDGE_SHARE))
    return choice.flatmap(lambda i: st.just(edge) if i == 0 else st.one_of(*others))


def pending_work(shadow: Shadow) -> int:
    """Prompt positions still to run plus tokens still to emit, over every unfinished request.

    A step that is not empty runs a prompt position or emits a token, so this falls by at least one
    each step while anything is pending (rule PROGRESS): it bounds the steps a drain may take."""
    tracks = list(shadow.waiting) + list(shadow.running.values())
    return sum(t.num_remaining_prompt + t.request.max_new - t.num_emitted for t in tracks)


def taken_rids(shadow: Shadow) -> list[int]:
    """Rids of every request that has not ended: none may be reused."""
    return sorted(shadow.tracks)


NEVER_ADDED = -1  # a rid no request has: add() refuses it, so cancel() must too


visible_state = visible  # what a refused call must leave unchanged (stallfree.spec.reservation.invariants)


class SchedulerMachine(RuleBasedStateMachine):
    """The contract as a state machine over one scheduler. `factory` and `rule_ids` are set by
    `machine_for`, as a store is given to a storage machine: the spec names no scheduler."""

    factory: ClassVar[Callable[..., Any] | None] = None  # set by machine_for
    rule_ids: ClassVar[tuple[str, ...] | None] = None  # None: every rule

    def __init__(self) -> None:
        super().__init__()
        self.monitor: Monitor | None = None
        self.largest = MIN_LARGEST
        self.next_rid = 0

    # -- init ----------------------------------------------------------------------------------

    @initialize(drawn=configs())
    def start(self, drawn: tuple[Config, int]) -> None:
        """A fresh scheduler under a drawn config."""
        config, self.largest = drawn
        factory = self.factory
        if factory is None:
            raise TypeError("SchedulerMachine has no factory: build the machine with machine_for(factory)")
        scheduler = factory(token_budget=config.token_budget, max_seqs=config.max_seqs, kv_tokens=config.kv_tokens)
        self.monitor = Monitor(scheduler, config, self.rule_ids)
        note(f"config: budget {config.token_budget}, max_seqs {config.max_seqs}, kv_tokens {config.kv_tokens}; "
             f"largest request {self.largest}")

    @property
    def m(self) -> Monitor:
        assert self.monitor is not None, "start() runs first"
        return self.monitor

    @property
    def config(self) -> Config:
        return self.m.config

    # -- actions: arrivals ---------------------------------------------------------------------

    @rule(data=st.data())
    def add_request(self, data: st.DataObject) -> None:
        """A request that fits K arrives: it must be accepted (NEVER-FIT)."""
        self.offer(self.take_rid(), *self.draw_size(data), expect=True)

    @rule(data=st.data(), n=st.integers(2, MAX_BURST))
    def add_burst(self, data: st.DataObject, n: int) -> None:
        """`n` requests that fit K arrive before the same step (FCFS and admission order at work)."""
        for _ in range(n):
            self.offer(self.take_rid(), *self.draw_size(data), expect=True)

    @rule(data=st.data())
    def add_largest(self, data: st.DataObject) -> None:
        """The largest request arrives: its reservation is exactly `largest` (K itself at the edge)."""
        max_new = data.draw(st.integers(1, min(MAX_NEW, self.largest - 1)), label="max_new")
        self.offer(self.take_rid(), self.largest - max_new, max_new, expect=True)

    @rule(max_new=st.integers(1, MAX_NEW), over=st.integers(1, 8))
    def add_never_fit(self, max_new: int, over: int) -> None:
        """A request whose reservation exceeds K by `over`: add() must refuse it (NEVER-FIT)."""
        prompt_len = max(1, self.config.kv_tokens + over - max_new)
        self.offer(self.take_rid(), prompt_len, max_new, expect=False)

    @rule(field=st.sampled_from(FIELDS), value=st.sampled_from(BAD_VALUES))
    def add_bad_field(self, field: str, value: object) -> None:
        """A request with one invalid field: add() must refuse it, naming the field (NEVER-FIT)."""
        fields: dict[str, object] = {"rid": self.take_rid(), "prompt_len": 1, "max_new": 1}
        if field == "rid" and value == 0 and type(value) is int:
            value = -1  # rid 0 is a valid rid
        fields[field] = value
        self.offer(fields["rid"], fields["prompt_len"], fields["max_new"], expect=False)

    @precondition(lambda self: self.monitor is not None and bool(taken_rids(self.monitor.shadow)))
    @rule(data=st.data())
    def add_taken_rid(self, data: st.DataObject) -> None:
        """A request reusing the rid of a waiting or running request: add() must refuse it (NEVER-FIT)."""
        rid = data.draw(st.sampled_from(taken_rids(self.m.shadow)), label="taken rid")
        self.offer(rid, 1, 1, expect=False)

    # -- actions: stops and cancels ---------------------------------------------------------------

    @precondition(lambda self: self.can(STOP))
    @rule(data=st.data())
    def step_with_stops(self, data: st.DataObject) -> None:
        """One step in which each due token may be a stop (an end-of-sequence token): KV comes back on
        this step, nothing is planned or emitted for a stopped request after (KV, TOKENS)."""
        self.m.plan()
        due = self.m.due()
        stopped = [rid for rid in due if data.draw(st.booleans(), label=f"rid {rid} stops")]
        self.finish_step(stopped)

    @precondition(lambda self: self.can(STOP))
    @rule(data=st.data())
    def bad_stop(self, data: st.DataObject) -> None:
        """A stop naming a rid that emits no token in the step (waiting, partial mid-prompt, ended or
        never added): complete() must refuse it and change nothing (TOKENS); the plan then completes."""
        self.m.plan()
        due = set(self.m.due())
        candidates = sorted((set(self.m.shadow.tracks) | set(self.m.shadow.ended) | {NEVER_ADDED}) - due)
        rid = data.draw(st.sampled_from(candidates), label="rid that emits nothing")
        self.m.refuse_stop([rid])  # the monitor judges that it is refused and changes nothing
        note(f"complete(plan, stopped=[{rid}]) -> refused")
        self.finish_step([])

    @precondition(lambda self: self.can(CANCEL) and bool(self.monitor and self.monitor.shadow.tracks))
    @rule(data=st.data(), where=st.sampled_from(("waiting", "partial", "ready")))
    def cancel(self, data: st.DataObject, where: str) -> None:
        """Cancel a waiting, partial or ready request between steps: it is never planned again and its
        reservation is free for the next schedule() (CANCEL, KV); a waiting one leaves the line (FCFS)."""
        self.offer_cancel(data, where)

    @precondition(lambda self: self.can(CANCEL) and bool(self.monitor and self.monitor.shadow.tracks))
    @rule(data=st.data(), where=st.sampled_from(("waiting", "partial", "ready")), twice=st.booleans())
    def cancel_while_pending(self, data: st.DataObject, where: str, twice: bool) -> None:
        """Cancel a request while a plan is pending (and maybe cancel it again: refused): it ends when
        complete() runs, emitting nothing after that step (CANCEL)."""
        self.m.plan()
        rid = self.offer_cancel(data, where)
        if twice and rid is not None:
            self.offer_bad_cancel(rid)
        self.finish_step([])

    @precondition(lambda self: self.can(CANCEL))
    @rule(data=st.data())
    def bad_cancel(self, data: st.DataObject) -> None:
        """Cancel a rid that is not waiting or running (never added, or ended): it must be refused,
        naming it, and nothing changes (CANCEL)."""
        rids = sorted(set(self.m.shadow.ended) | {NEVER_ADDED, self.next_rid})
        self.offer_bad_cancel(data.draw(st.sampled_from(rids), label="rid"))

    # -- actions: steps ------------------------------------------------------------------------

    @rule()
    def step(self) -> None:
        """One step: schedule, judge the plan, complete, judge what it emitted."""
        self.run_one()

    @rule(n=st.integers(1, MAX_RUN))
    def run_steps(self, n: int) -> None:
        """`n` steps with no arrivals (an idle scheduler must plan empty steps; PROGRESS: a busy one may not)."""
        for _ in range(n):
            self.run_one()

    @precondition(lambda self: self.monitor is not None and not self.monitor.is_idle)
    @rule()
    def drain(self) -> None:
        """Steps until nothing is pending; PROGRESS bounds how many that may take."""
        shadow = self.m.shadow
        bound = pending_work(shadow)
        for _ in range(bound):
            if self.m.is_idle:
                return
            self.run_one()
        if not self.m.is_idle and self.checks("PROGRESS"):
            raise RuleViolation(
                "PROGRESS", shadow.step, f"{len(shadow.waiting)} waiting and {len(shadow.running)} running "
                f"after {bound} steps; the pending work fits in {bound}",
            )

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def what_it_shows(self) -> None:
        """The stated invariants that compare what the scheduler shows (its free KV, its running
        requests) with the contract's account, for each such invariant whose rule is checked
        (`stallfree.spec.reservation.invariants`). The others judge the shadow alone: the monitor's step rules
        already keep them, so here they could not fail."""
        if self.monitor is None:
            return
        for claim in self.view_invariants:
            message = claim.check(self.m.shadow, shown(self.m.scheduler))
            if message is not None:
                raise RuleViolation(claim.id, self.m.shadow.step, f"between steps: {message}")

    # -- helpers -------------------------------------------------------------------------------

    def draw_size(self, data: st.DataObject) -> tuple[int, int]:
        """prompt_len and max_new with a reservation of at most `largest`; short prompts are common
        so that several fit one step's budget."""
        most = min(MAX_PROMPT, self.largest - 1)
        prompt_len = data.draw(st.one_of(st.integers(1, min(SHORT_PROMPT, most)), st.integers(1, most)),
                               label="prompt_len")
        max_new = data.draw(st.integers(1, min(MAX_NEW, self.largest - prompt_len)), label="max_new")
        return prompt_len, max_new

    def take_rid(self) -> int:
        rid = self.next_rid
        self.next_rid += 1
        return rid

    def checks(self, rule_id: str) -> bool:
        return any(r.id == rule_id for r in self.m.rules)

    def can(self, capability: str) -> bool:
        return self.monitor is not None and capability in self.monitor.capabilities

    def unchanged(self, before: tuple[object, ...], call: str, rule_id: str) -> None:
        """A refused call must leave what the scheduler shows of its state as it was."""
        after = visible_state(self.m.scheduler)
        if after != before and self.checks(rule_id):
            raise RuleViolation(
                rule_id, self.m.shadow.step, f"{call} was refused but changed the state it shows: "
                f"(free_kv, num_steps, waiting, running) {before} -> {after}",
            )

    def offer_cancel(self, data: st.DataObject, where: str) -> int | None:
        """Cancel a request drawn from those `where` (waiting, partial, ready), if there is one."""
        shadow = self.m.shadow
        pool = {"waiting": [t.rid for t in shadow.waiting if t.rid not in self.pending_cancels],
                "partial": [r for r in shadow.prefilling if r not in self.pending_cancels],
                "ready": [r for r, t in shadow.running.items() if t.is_ready and r not in self.pending_cancels]}[where]
        if not pool:
            return None
        rid = data.draw(st.sampled_from(pool), label=f"{where} rid")
        accepted = self.m.cancel(rid)
        note(f"cancel({rid}) [{where}{', plan pending' if self.m.pending else ''}] -> "
             f"{'accepted' if accepted else 'refused'}")
        return rid

    def offer_bad_cancel(self, rid: int) -> None:
        accepted = self.m.cancel(rid)  # the monitor judges that it is refused and changes nothing
        note(f"cancel({rid}) -> {'accepted (unexpected)' if accepted else 'refused'}")

    @property
    def pending_cancels(self) -> dict[int, object]:
        pending = self.m.pending
        return {} if pending is None else pending.cancelled  # type: ignore[return-value]

    @property
    def view_invariants(self) -> tuple[Invariant, ...]:
        return tuple(i for i in INVARIANTS if i.reads_scheduler and self.checks(i.id))

    def offer(self, rid: object, prompt_len: object, max_new: object, expect: bool) -> None:
        """add() through the monitor (NEVER-FIT judges it); a refusal must leave what the scheduler
        shows of its state unchanged."""
        before = visible_state(self.m.scheduler)
        accepted = self.m.add(rid, prompt_len, max_new)
        verdict = "accepted" if accepted else "refused"
        note(f"add({rid!r}, {prompt_len!r}, {max_new!r}) -> {verdict}"
             + ("" if accepted == expect else " (unexpected)"))
        if not accepted:
            self.unchanged(before, f"add({rid!r}, {prompt_len!r}, {max_new!r})", "NEVER-FIT")

    def run_one(self) -> StepFacts:
        self.m.plan()
        return self.finish_step([])

    def finish_step(self, stopped: list[int]) -> StepFacts:
        facts = self.m.complete(stopped)
        finished = [t.rid for t in facts.finished]
        note(f"step {facts.step}: plan {facts.plan} ({facts.num_tokens}/{self.config.token_budget} tokens), "
             f"emitted {facts.emitted}" + (f", stopped {stopped}" if stopped else "")
             + (f", ended {finished}" if finished else ""))
        return facts


def machine_for(
    factory: Callable[..., Any], rules: Iterable[str] | None = None, name: str | None = None,
) -> type[SchedulerMachine]:
    """A state machine class checking `factory(token_budget=, max_seqs=, kv_tokens=)` against
    `rules` (every rule when None). Its `.TestCase` is a unittest test case for pytest."""
    label = name or f"{getattr(factory, '__name__', 'Scheduler')}Machine"
    attrs = {"factory": staticmethod(factory), "rule_ids": None if rules is None else tuple(rules)}
    return type(label, (SchedulerMachine,), attrs)
