"""The simulator: replays a trace through any plain-protocol scheduler, one step at a time, with
each step's time from the cost model.

Event-driven: the clock jumps from the end of one step to the end of the next, and over any gap in
which nothing is waiting or running straight to the next arrival. Requests that arrive during a step
are added before the next plan, as a server would queue them. A request the contract refuses (its
reservation exceeds the KV capacity: rule NEVER-FIT) is skipped and reported, never dropped silently.

With `max_new_cap` (or a distribution, `max_new_caps`), requests follow the cap model (`caps`): each
is added with max_new = its cap and stops (complete(plan, stopped)) on its real length from the
trace. Without either max_new is the real length: the oracle. Each step records the KV reserved (the running
requests' prompt_len + max_new) and the KV used (positions already computed) to compare the two.
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, NamedTuple

from stallfree.costs import Roofline
from stallfree.spec import STOP, Config, Plan, Shadow, Unsupported, refusal, registry, supports

from .caps import CapModel, stops
from .checked import Checked
from .progress import ProgressBar
from .stream import Stream
from .trace import Trace, TraceRequest

# A scheduler that plans nothing, with work pending and no arrival to wait for, this many times
# running, has stalled (rule PROGRESS); the simulation stops rather than spin.
MAX_EMPTY_PLANS = 1_000
PROGRESS_EVERY_STEPS = 2_048


class Stalled(RuntimeError):
    """The scheduler stopped planning while requests were pending."""


@dataclass(frozen=True, slots=True)
class Variant:
    """What a variant's run adds to the trace: a budget schedule, (seconds, B) in time order, each
    set with set_budget(B) before the first step that starts at or after it; a priority per rid,
    passed to add(); the contract `check` judges it under (`stallfree.spec.registry`)."""

    budgets: tuple[tuple[float, int], ...] = ()
    priority_of: Callable[[int], int] | None = None
    contract: Any = None


@dataclass(frozen=True, slots=True)
class Skipped:
    request: TraceRequest
    reason: str


@dataclass(frozen=True, slots=True)
class StepSpan:
    """One step's span of simulated time and its tokens, kept when a run records its steps (for
    timelines)."""

    start: float
    seconds: float
    num_decodes: int
    num_prefill: int  # prompt tokens


class Measured(NamedTuple):
    """What one priced step shows, before it completes: the figures a simulation accounts (a named
    tuple: one is made every step, and a tuple is made in a fraction of a frozen dataclass's time)."""

    seconds: float
    end: float  # the clock after it
    num_planned: int  # requests in the plan
    num_tokens: int
    kv_reserved: int  # the planned requests' prompt_len + max_new
    kv_used: int  # KV positions of the planned requests
    num_decodes: int = 0  # of the plan's entries


@dataclass(slots=True)
class SimResult:
    trace: str
    policy: str
    config: Config
    roofline: Roofline
    streams: list[Stream]  # accepted requests, in arrival order
    skipped: list[Skipped]
    clock: float = 0.0  # seconds from the first arrival to the last token
    busy_seconds: float = 0.0  # of which spent running steps
    longest_step: float = 0.0  # seconds
    step_tokens: array = field(default_factory=lambda: array("l"))  # tokens of each non-empty step
    steps: list[StepSpan] | None = None
    wall_seconds: float = 0.0
    max_new_cap: int | None = None
    max_new_caps: tuple[int, ...] = ()  # a distribution of caps, one drawn per request
    # Over the steps that ran, weighted by their seconds: KV reserved and used, requests running.
    kv_reserved_seconds: float = 0.0
    kv_used_seconds: float = 0.0
    running_seconds: float = 0.0
    max_running: int = 0
    kv_timeline: array = field(default_factory=lambda: array("d"))  # (end, reserved, used) of each step

    @property
    def num_finished(self) -> int:
        return sum(1 for s in self.streams if s.is_finished)


class Simulation:
    def __init__(
        self,
        trace: Trace,
        factory: Callable[..., Any],
        config: Config,
        roofline: Roofline,
        policy: str = "",
        check: bool = False,
        record: bool = False,
        progress: ProgressBar | None = None,
        variant: Variant | None = None,
        max_new_cap: int | None = None,
        max_new_caps: tuple[int, ...] = (),
    ) -> None:
        self.caps = CapModel(max_new_cap, max_new_caps)
        self.capped = self.caps.is_capped
        self.measures = type(self).measure is not Simulation.measure  # a design that measures its own figures
        self.preempts = type(self).preempt is not Simulation.preempt  # a design that follows preemptions
        self.empty = Shadow(config)  # the contract's state with no request: NEVER-FIT reads it, never changes it
        scheduler = factory(token_budget=config.token_budget, max_seqs=config.max_seqs, kv_tokens=config.kv_tokens)
        if self.caps.is_capped and STOP not in supports(scheduler):
            raise Unsupported(STOP, scheduler)  # it could not be told that a request stopped
        self.variant = variant or Variant()
        contract = self.variant.contract or registry.of(scheduler)  # a variant's, else the design it declares
        self.scheduler = Checked(scheduler, config, contract) if check else scheduler
        self.next_budget = 0  # index into variant.budgets
        self.trace = trace
        self.roofline = roofline
        self.record = record
        self.progress = progress
        self.result = SimResult(trace.name, policy, config, roofline, [], [], steps=[] if record else None,
                                max_new_cap=max_new_cap, max_new_caps=max_new_caps)
        self.streams: dict[int, Stream] = {}
        self.next_arrival = 0  # index into trace.requests
        self.num_pending = 0  # accepted, not finished
        self.num_finished = 0
        self.num_empty_plans = 0

    # -- arrivals --------------------------------------------------------------------------------

    def add_arrivals(self, clock: float) -> float:
        """Offer the scheduler every request that has arrived by `clock`, in arrival order; return the
        next arrival's time (infinity: none is left)."""
        requests = self.trace.requests
        while self.next_arrival < len(requests) and requests[self.next_arrival].arrival <= clock:
            self.offer(requests[self.next_arrival])
            self.next_arrival += 1
        return requests[self.next_arrival].arrival if self.next_arrival < len(requests) else math.inf

    def offer(self, request: TraceRequest) -> None:
        reserved = self.caps.max_new(request)
        why = refusal(self.empty, request.rid, request.prompt_len, reserved)
        reason = None if why is None else f"NEVER-FIT: {why}"
        priority = self.variant.priority_of
        if reason is None:
            try:
                if priority is None:
                    self.scheduler.add(request.rid, request.prompt_len, reserved)
                else:
                    self.scheduler.add(request.rid, request.prompt_len, reserved, priority(request.rid))
            except ValueError as error:  # refused by the scheduler: reported, like the contract's refusals
                reason = f"refused by the scheduler: {error}"
        if reason is not None:
            self.result.skipped.append(Skipped(request, reason))
            return
        stream = Stream(request, reserved)
        if self.record:
            stream.token_times = []
        self.streams[request.rid] = stream
        self.result.streams.append(stream)
        self.num_pending += 1

    # -- steps -----------------------------------------------------------------------------------

    def step(self, clock: float) -> float:
        """Plan, price and complete one step starting at `clock`; return the clock after it."""
        streams, given = self.streams, self.scheduler.schedule()
        plan = given.entries if type(given) is Plan else given  # a Plan's entries: a tuple
        if (type(plan) is not tuple and type(plan) is not list) or len(plan) > len(streams):
            plan = bounded(given, len(streams), "schedule() returned")
        if self.preempts:  # a design that forgets KV before the plan runs
            self.preempt(given, plan)
        num_tokens = pairs = kv_read = num_chunks = contexts = kv_reserved = kv_used = 0
        for rid, n in plan:
            stream = streams[rid]
            if stream.num_computed < stream.target:  # a chunk: positions [done, done + n) of this residency's prefill
                done, target = stream.num_computed, stream.target
                if stream.admitted is None:
                    stream.admitted = clock
                if target == stream.prompt_len:  # not a recompute of prompt and emitted tokens (`designs`)
                    stream.num_prefilled = done + n
                pairs += n * done + n * (n + 1) // 2
                kv_read += done
                stream.num_computed = done = done + n
                kv_used += done
                num_chunks += 1
            else:  # a decode: the last token in, attending to every position so far (summed below)
                contexts += stream.prompt_len + stream.num_emitted
            kv_reserved += stream.reservation
            num_tokens += n
        num_planned = len(plan)  # of which num_planned - num_chunks decodes
        # Each decode's context: its pairs, its KV positions, all but one of them read.
        seconds = self.roofline.seconds(num_tokens, pairs + contexts, kv_read + contexts - num_planned + num_chunks)
        kv_used += contexts
        end = clock + seconds
        if self.measures:  # a design's own figures, before the step completes (the state is the plan's)
            self.measure(Measured(seconds, end, num_planned, num_tokens, kv_reserved, kv_used,
                                  num_planned - num_chunks))
        if self.capped and (stopped := self.stops_in(plan)):  # uncapped, none stops before its max_new
            emitted = self.scheduler.complete(given, stopped)
        else:
            emitted = self.scheduler.complete(given)
        rids = self.emit(emitted, end)
        result = self.result  # the figures over the steps that ran, weighted by their seconds
        result.kv_reserved_seconds += kv_reserved * seconds
        result.kv_used_seconds += kv_used * seconds
        result.running_seconds += num_planned * seconds
        if num_planned > result.max_running:
            result.max_running = num_planned
        if self.record:
            self.keep(clock, seconds, num_tokens, num_planned - num_chunks, kv_reserved, kv_used, rids)
        if num_tokens:
            self.num_empty_plans = 0
            result.busy_seconds += seconds
            if seconds > result.longest_step:
                result.longest_step = seconds
            result.step_tokens.append(num_tokens)
        else:
            self.num_empty_plans += 1
        return end

    def stops_in(self, plan: list[Any] | tuple[Any, ...]) -> list[int]:
        """The rids of a capped run's priced `plan` whose token now is their real last one, before the
        cap (`stops`): of those whose residency's prefill is done (a decode, or the chunk that
        completed it; a chunk that leaves prompt to run emits nothing), in plan order."""
        streams = self.streams
        return [rid for rid, _ in plan if (s := streams[rid]).num_computed >= s.target and stops(s)]

    def keep(self, clock: float, seconds: float, num_tokens: int, num_decodes: int, kv_reserved: int,
             kv_used: int, rids: list[int] | tuple[int, ...]) -> None:
        """Record a step (from `clock`, for `seconds`) for a run that records its steps: its KV, a
        `StepSpan` of a step that carried tokens, and the time of each token emitted (by `rids`: only
        a recording run's streams keep their token times, `offer`)."""
        result, streams, end = self.result, self.streams, clock + seconds
        for rid in rids:
            streams[rid].token_times.append(end)
        result.kv_timeline.extend((end, kv_reserved, kv_used))
        if num_tokens and result.steps is not None:
            result.steps.append(StepSpan(clock, seconds, num_decodes, num_tokens - num_decodes))

    def preempt(self, given: Any, plan: Any) -> None:
        """What a design does to KV before the plan `given` (its entries: `plan`) runs: nothing under
        the plain protocol (the paged design's plan names the requests it preempts: `designs`). Called
        only where a subclass overrides it."""

    def measure(self, m: Measured) -> None:
        """What a design adds to the figures of a priced step, before it completes (so the scheduler's
        state is the plan's): nothing here, where `account` keeps the result's figures. Called only
        where a subclass overrides it, so that the plain run builds no record a step."""

    def finished(self, stream: Stream) -> None:
        """`stream` emitted its last token (a hook: a design forgets its KV)."""

    def emit(self, rids: Any, clock: float) -> list[int] | tuple[int, ...]:
        """Each rid emitted a token at `clock`, the end of the step; return the rids, bounded (a
        recording run's `keep` times their tokens)."""
        streams = self.streams
        if (type(rids) is not tuple and type(rids) is not list) or len(rids) > len(streams):
            rids = bounded(rids, len(streams), "complete() returned")
        for rid in rids:
            stream = streams[rid]
            stream.num_emitted += 1
            last = stream.last_token
            if last is None:
                stream.first_token = clock
            elif clock - last > stream.max_gap:
                stream.max_gap = clock - last
            stream.last_token = clock
            if stream.num_emitted == stream.max_new:
                self.num_pending -= 1
                self.num_finished += 1
                self.finished(stream)
        return rids  # type: ignore[no-any-return]

    # -- the run ---------------------------------------------------------------------------------

    def run(self) -> SimResult:
        started = time.perf_counter()
        requests = self.trace.requests
        clock = 0.0
        num_steps = 0
        budgets, progress = self.variant.budgets, self.progress
        next_arrival = clock  # the next arrival's time: the first call offers those at 0
        while True:
            while budgets and self.next_budget < len(budgets) and budgets[self.next_budget][0] <= clock:
                self.scheduler.set_budget(budgets[self.next_budget][1])
                self.next_budget += 1
            if next_arrival <= clock:  # most steps see no arrival
                next_arrival = self.add_arrivals(clock)
            if not self.num_pending or self.num_empty_plans >= MAX_EMPTY_PLANS:
                if self.next_arrival >= len(requests):
                    break
                clock = max(clock, next_arrival)  # skip the idle gap
                self.num_empty_plans = 0
                continue
            clock = self.step(clock)
            if progress is not None:  # the steps are counted only for it
                num_steps += 1
                if num_steps % PROGRESS_EVERY_STEPS == 0:
                    progress.update(self.num_finished, clock)
        if self.num_pending:
            raise Stalled(
                f"the scheduler planned nothing {MAX_EMPTY_PLANS} times running with {self.num_pending} "
                f"request(s) pending and none left to arrive (rule PROGRESS)"
            )
        if self.progress is not None:
            self.progress.close(self.num_finished, clock)
        self.result.clock = clock
        self.result.wall_seconds = time.perf_counter() - started
        return self.result


def simulate(
    trace: Trace,
    factory: Callable[..., Any],
    config: Config,
    roofline: Roofline,
    policy: str = "",
    check: bool = False,
    record: bool = False,
    progress: bool = False,
    variant: Variant | None = None,
    max_new_cap: int | None = None,
    max_new_caps: tuple[int, ...] = (),
) -> SimResult:
    """Replay `trace` through `factory(token_budget=, max_seqs=, kv_tokens=)`; see `Simulation`."""
    bar = ProgressBar(f"simulate {trace.name} {policy}".strip(), len(trace.requests)) if progress else None
    return Simulation(trace, factory, config, roofline, policy, check, record, bar, variant, max_new_cap,
                      max_new_caps).run()


def bounded(items: Any, limit: int, what: str) -> list[Any]:
    """A plan or emitted list as a list of at most `limit` items (one per request known): an endless
    iterable is cut and refused, never read to exhaustion."""
    if type(items) is not list:
        items = list(islice(items, limit + 1))
    if len(items) > limit:
        raise ValueError(f"{what} more entries than there are requests ({limit}): not a step")
    return items  # type: ignore[no-any-return]
