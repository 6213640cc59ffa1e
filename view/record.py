"""A run recorded step by step for people to look at: what each step ran, by kind, what every
request was doing and why a waiting one waited, and how much KV was reserved.

Everything is read off the plain protocol with the spec's own facts (`observe`, `apply`), the way
the monitor reads it: a `Tap` stands between the monitor and the scheduler and keeps a shadow of
its own, so the plan of a step that breaks a rule is recorded too (the monitor judges a plan before
it runs, and a broken rule stops the run before the step is complete).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from stallfree.spec import (
    Arrival,
    InvalidField,
    Request,
    RuleViolation,
    RunStats,
    Shadow,
    StepFacts,
    Workload,
    play,
)
from stallfree.spec.capability import supports
from stallfree.spec.ending import Reason
from stallfree.spec.reservation.facts import apply, observe, observe_emitted
from stallfree.spec.verdict import CRASH  # not a rule: the scheduler raised instead of answering

from .waiting import reasons

WAITING_SHOWN = 3  # waiting requests a table row names (the rest counted): a lean view's cells

DECODE, CHUNK, ADMISSION = "decode", "chunk", "admission"
KINDS = (DECODE, CHUNK, ADMISSION)  # the order a step spends its budget in, under the contract
WAITING, PARTIAL, READY, FINISHED = "waiting", "partial", "ready", "finished"
STATES = (WAITING, PARTIAL, READY, FINISHED)


@dataclass(frozen=True, slots=True)
class EntryView:
    """A plan entry (`spec/types.py:Entry`) as the views draw it: `n` tokens for `rid`, a decode, a
    chunk of prompt positions [start, start + n) of a partial prompt, or an admission (a waiting
    request's first chunk, from position 0)."""

    rid: int
    n: int
    kind: str
    start: int | None  # the first prompt position; None for a decode
    context: int = 0  # a decode: the positions its query attends to (the prompt and the tokens so far)

    def describe(self) -> str:
        if self.kind == DECODE:
            return f"r{self.rid} decode"
        end = (self.start or 0) + self.n
        suffix = " (admitted)" if self.kind == ADMISSION else ""
        return f"r{self.rid} chunk {self.start}-{end}{suffix}"


@dataclass(frozen=True, slots=True)
class Cell:
    """One request in one step: its state before the step, the tokens it got, why it waited."""

    rid: int
    state: str  # WAITING, PARTIAL or READY: before the step
    n: int = 0  # tokens planned for it this step
    why: str | None = None  # why it is still waiting after the plan (None unless it waits)


@dataclass(frozen=True, slots=True)
class StepView:
    step: int
    budget: int
    arrived: tuple[int, ...]  # rids accepted just before this step
    entries: tuple[EntryView, ...]
    cells: tuple[Cell, ...]  # every accepted, unfinished request, in arrival order
    kv_before: int  # KV reserved before the step
    kv_admitted: int  # reserved by this step's admissions
    plan: tuple[tuple[int, int], ...] = ()  # the plan as schedule() returned it, normalised
    emitted: tuple[int, ...] = ()  # known once the step completed
    finished: tuple[int, ...] = ()
    kv_after: int | None = None  # KV reserved once the step completed; None if it never ran
    # A lean view (a recording that keeps no pictures) holds cells for the first few waiting requests
    # only, so that a step costs what the table shows; these count what it leaves out.
    more_waiting: int = 0  # waiting requests after the plan with no cell
    num_live: int | None = None  # accepted, unfinished requests before the step (None: one cell each)

    @property
    def num_tokens(self) -> int:
        return sum(e.n for e in self.entries)

    def tokens(self, kind: str) -> int:
        return sum(e.n for e in self.entries if e.kind == kind)

    @property
    def completed(self) -> bool:
        """False for a step whose plan broke a rule: it never ran."""
        return self.kv_after is not None

    @property
    def kv_in_use(self) -> int:
        """KV reserved while the step runs: what was held plus what its admissions take."""
        return self.kv_before + self.kv_admitted

    @property
    def waiting(self) -> dict[int, str]:
        """rid -> why, for the requests still waiting after this step's plan (in a lean view, the
        first few: `more_waiting` counts the rest)."""
        return {c.rid: c.why for c in self.cells if c.why is not None}

    @property
    def is_idle(self) -> bool:
        """Nothing waiting or running before the step, nothing planned, nothing arrived."""
        live = len(self.cells) if self.num_live is None else self.num_live
        return not self.plan and not live and not self.arrived

    def describe(self) -> str:
        return ", ".join(e.describe() for e in self.entries) or "(empty)"


@dataclass(frozen=True, slots=True)
class Offer:
    """A request offered to add() before `step`, and whether the scheduler took it."""

    arrival: Arrival
    step: int
    accepted: bool


@dataclass(slots=True)
class Recording:
    workload: Workload
    scheduler: str
    keep: bool = True  # keep every step; False: only the last, so a long run is judged in flat memory
    steps: list[StepView] = field(default_factory=list)
    num_steps: int = 0  # steps completed (all of them in `steps` when `keep`)
    offers: list[Offer] = field(default_factory=list)
    violation: RuleViolation | None = None
    broken_step: StepView | None = None  # the step a rule broke in (None: broken on add(), or none broke)
    stats: RunStats | None = None
    target: Any = None  # the scheduler recorded (the last one built)

    @property
    def config(self):  # type: ignore[no-untyped-def]
        return self.workload.config

    @property
    def rids(self) -> list[int]:
        """Accepted requests, in arrival order."""
        return [o.arrival.rid for o in self.offers if o.accepted]

    def arrival_step(self, rid: int) -> int:
        return next(o.step for o in self.offers if o.accepted and o.arrival.rid == rid)

    def finished_at(self) -> dict[int, int]:
        return {rid: s.step for s in self.steps for rid in s.finished}

    @property
    def shown_steps(self) -> list[StepView]:
        """The completed steps, then the one whose plan broke a rule and never ran, if there is one."""
        broken = self.broken_step
        return self.steps + ([broken] if broken is not None and not broken.completed else [])


class Tap:
    """A plain-protocol scheduler in front of `inner` that records each step as a `StepView`.

    Its shadow follows the scheduler as the monitor's does; where the scheduler says something the
    contract cannot follow (a protocol error), the tap stops recording and the monitor reports it."""

    def __init__(self, inner: Any, recording: Recording) -> None:
        self.inner = inner
        self.recording = recording
        self.shadow = Shadow(recording.workload.config)
        self.arrived: list[int] = []
        self.pending: tuple[StepFacts, StepView] | None = None
        self.lost = False  # the shadow could not follow: record nothing more
        self.raised: tuple[str, BaseException] | None = None  # the last call into the scheduler that raised
        self.stallfree_capabilities = supports(inner)  # the tap forwards stops and cancels: the inner's
        self.stallfree_name = type(inner).__name__  # and errors name the scheduler, not the tap

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self.inner, method)(*args)
        except Exception as error:  # kept to tell the scheduler's own crash from the monitor's judgement
            self.raised = (method, error)
            raise

    @property
    def free_kv(self) -> object:
        return getattr(self.inner, "free_kv", None)

    def add(self, rid: Any, prompt_len: Any, max_new: Any, *priority: Any) -> Any:
        result = self._call("add", rid, prompt_len, max_new, *priority)
        if not self.lost:
            try:
                self.shadow.accept(Request(rid, prompt_len, max_new))
                self.arrived.append(rid)
            except (InvalidField, TypeError):
                self.lost = True
        return result

    def set_budget(self, token_budget: Any) -> Any:
        """A variant's runtime budget change, passed on; the view's budget follows an accepted one."""
        result = self._call("set_budget", token_budget)
        if type(token_budget) is int and token_budget >= 1:
            self.shadow.config = replace(self.shadow.config, token_budget=token_budget)
        return result

    def schedule(self) -> Any:
        plan = self._call("schedule")
        self.pending = None
        if not self.lost:
            try:
                facts = observe(self.shadow, plan)
            except RuleViolation:
                self.lost = True
            else:
                self.pending = (facts, self.view(facts))
                self.recording.broken_step = self.pending[1]  # until complete() says the step ran
        return plan

    def cancel(self, rid: Any) -> Any:
        """A cancel, passed on; the tap's shadow ends the request as the monitor's does."""
        result = self._call("cancel", rid)
        if not self.lost:
            track = self.shadow.tracks.get(rid) if type(rid) is int else None
            if track is None:
                return result
            pending = self.pending[0] if self.pending is not None else None
            if pending is not None and (track.admitted_at is not None or rid in pending.planned):
                pending.cancelled[rid] = track  # it ends when complete() runs
            else:
                self.shadow.end(track, Reason.CANCEL)
        return result

    def complete(self, plan: Any, *stopped: Any) -> Any:
        emitted = self._call("complete", plan, *stopped)
        if self.pending is not None:
            facts, view = self.pending
            self.pending = None
            try:
                if stopped and stopped[0]:
                    facts.stopped = frozenset(stopped[0])
                observe_emitted(self.shadow, facts, emitted, self.free_kv)
            except RuleViolation:
                self.lost = True
                return emitted
            finished = tuple(t.rid for t in facts.finished)
            apply(self.shadow, facts)
            kv_after = self.shadow.config.kv_tokens - self.shadow.free_kv
            done = replace(view, emitted=tuple(facts.emitted), finished=finished, kv_after=kv_after)
            recording = self.recording
            recording.num_steps += 1
            if recording.keep or not recording.steps:
                recording.steps.append(done)
            else:
                recording.steps[-1] = done
            self.recording.broken_step = None
        return emitted

    def view(self, facts: StepFacts) -> StepView:
        """The step about to run, from the shadow before it and the facts of its plan."""
        s = self.shadow
        entries: list[EntryView] = []
        planned: dict[int, int] = {}
        for track, n in facts.decodes:
            planned[track.rid] = n
        for chunk in facts.prefills:
            planned[chunk.track.rid] = chunk.n
        admitted = {c.track.rid for c in facts.admitted}
        chunks = {c.track.rid: c.start for c in facts.prefills}
        shown: set[int] = set()
        for rid, n in facts.plan:
            planned_track = s.tracks.get(rid)
            if planned_track is None or rid in shown:
                continue  # a repeated entry: ONE-ENTRY judges it; the view shows the first
            shown.add(rid)
            if rid in admitted:
                entries.append(EntryView(rid, n, ADMISSION, 0))
            elif rid in chunks:
                entries.append(EntryView(rid, n, CHUNK, chunks[rid]))
            else:
                context = planned_track.request.prompt_len + planned_track.num_emitted
                entries.append(EntryView(rid, n, DECODE, None, context))
        arrived, self.arrived = tuple(self.arrived), []
        kv_before = s.config.kv_tokens - s.free_kv
        if not self.recording.keep:  # no picture: the table's few waiting requests and the counts
            why = reasons(s, facts, WAITING_SHOWN)
            cells = [Cell(rid, WAITING, 0, reason) for rid, reason in why.items()]
            more = len(s.waiting) - len(facts.admitted) - len(cells)
            return StepView(facts.step, s.config.token_budget, arrived, tuple(entries), tuple(cells), kv_before,
                            facts.admitted_reservation, tuple(facts.plan), more_waiting=max(more, 0),
                            num_live=len(s.tracks))
        why = reasons(s, facts)
        all_cells = []
        for track in s.tracks.values():
            state = WAITING if track.admitted_at is None else READY if track.is_ready else PARTIAL
            all_cells.append(Cell(track.rid, state, planned.get(track.rid, 0), why.get(track.rid)))
        return StepView(facts.step, s.config.token_budget, arrived, tuple(entries), tuple(all_cells), kv_before,
                        facts.admitted_reservation, tuple(facts.plan))


def record(
    workload: Workload,
    factory: Callable[..., Any],
    rules: Iterable[str] | None = None,
    scheduler: str = "",
    on_step: Callable[[StepView, StepFacts], None] | None = None,
    on_offer: Callable[[Offer], None] | None = None,
    keep: bool = True,
    contract: Any = None,
    on_cancel: Callable[..., None] | None = None,
) -> Recording:
    """Play `workload` through `factory` under the monitor (checking `rules`, all when None) and
    record every step. A broken rule ends the recording: `violation` and `broken_step` say where.
    `on_step` is called once each step has been judged, `on_offer` after each add(). With `keep`
    False only the last step is kept (enough for the table and the verdicts, not for the views)."""
    recording = Recording(workload, scheduler, keep)
    taps: list[Tap] = []

    def tapped(**config: int) -> Tap:
        taps.append(Tap(factory(**config), recording))
        recording.target = taps[-1].inner
        return taps[-1]

    def offered(a: Arrival, accepted: bool) -> None:
        offer = Offer(a, a.arrival_step, accepted)  # play adds it just before that step
        recording.offers.append(offer)
        if on_offer is not None:
            on_offer(offer)

    def stepped(_monitor: Any, facts: StepFacts) -> None:
        if on_step is not None and recording.steps and recording.steps[-1].step == facts.step:
            on_step(recording.steps[-1], facts)

    try:
        recording.stats = play(workload, tapped, rules, on_step=stepped, on_add=offered, contract=contract,
                               on_cancel=on_cancel)
    except RuleViolation as violation:
        recording.violation = violation
        last = recording.steps[-1] if recording.steps else None
        if recording.broken_step is None and last is not None and last.step == violation.step:
            recording.broken_step = last  # broken once complete() had reported: the step ran
        elif recording.broken_step is not None and recording.broken_step.step != violation.step:
            recording.broken_step = None
    except Exception as error:
        raised = taps[-1].raised if taps else None
        if raised is None or raised[1] is not error:
            raise  # not the scheduler's: the factory's or a callback's, for the caller
        step = recording.steps[-1].step + 1 if recording.steps else 0
        message = f"{raised[0]}() raised {type(error).__name__}: {error}"
        recording.violation = RuleViolation(CRASH, step, message)
        if recording.broken_step is not None and recording.broken_step.step != step:
            recording.broken_step = None
    else:
        recording.broken_step = None
    return recording
