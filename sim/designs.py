"""The two memory designs on one trace, one cost model and one KV pool, under the cap model.

The cap model is the simulator's (`caps`, as `stallfree simulate --max-new-cap` runs it; what each
design does with the cap is said there). Both designs are offered the same requests: any whose
prompt_len + cap exceeds K (NEVER-FIT under the reservation design) is skipped for both.

The paged side is `stallfree.paged.Scheduler` (16-token blocks, the default watermark). A run is priced
step by step by the same roofline as `simulate`, with preemption followed: a preempted request's KV
is forgotten, and its recompute prefill is priced like any prompt chunk.

Per run: requests running at once, KV held against KV used (time-weighted over busy time), the
latency spreads and throughput of `summary`, preemptions, recomputed tokens and the step time they
took (each step's seconds shared among its tokens).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from stallfree.costs import Roofline
from stallfree.spec import Config, registry
from stallfree.spec.contract import CONTENTS, Contract
from stallfree.spec.utils.loader import load_target

from .simulator import Measured, SimResult, Simulation, bounded
from .stream import Stream
from .summary import Summary, summarise
from .trace import Trace

DESIGNS = tuple(d.name for d in registry.designs())  # the designs registered when the simulator was loaded


@dataclass(slots=True)
class DesignStats:
    """What the memory design did over a run."""

    design: str
    cap: int | None
    rate_scale: float
    busy_seconds: float = 0.0
    running_seconds: float = 0.0  # integral of requests running over busy time
    held_seconds: float = 0.0  # integral of KV tokens held (reserved or in blocks)
    used_seconds: float = 0.0  # integral of KV tokens computed
    max_running: int = 0
    preemptions: int = 0
    recomputed_tokens: int = 0
    recompute_seconds: float = 0.0
    kv_tokens: int = 0
    hit_tokens: int = 0  # prefill positions taken from cached blocks (prefix design)
    prefill_tokens: int = 0  # prefill positions computed, recompute included

    @property
    def hit_rate(self) -> float:
        """Share of the prefill positions admissions needed that came from the cache."""
        total = self.hit_tokens + self.prefill_tokens
        return self.hit_tokens / total if total else 0.0

    @property
    def mean_running(self) -> float:
        return self.running_seconds / self.busy_seconds if self.busy_seconds else 0.0

    @property
    def kv_held(self) -> float:
        """Mean share of K held while steps ran."""
        return self.held_seconds / self.busy_seconds / self.kv_tokens if self.busy_seconds else 0.0

    @property
    def kv_used(self) -> float:
        """Mean share of K holding computed tokens while steps ran."""
        return self.used_seconds / self.busy_seconds / self.kv_tokens if self.busy_seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(mean_running=self.mean_running, kv_held=self.kv_held, kv_used=self.kv_used, hit_rate=self.hit_rate)
        return out


def fed(contents: dict[int, Any], base: Any) -> Callable[..., Any]:
    """`base` (a prefix-caching scheduler), each add() given its request's content from `contents`."""

    class Fed(base):  # type: ignore[valid-type,misc]
        def add(self, rid: int, prompt_len: int, max_new: int, content: object = ()) -> None:
            super().add(rid, prompt_len, max_new, content or contents.get(rid, ()))

    return Fed


class DesignSimulation(Simulation):
    """`Simulation`'s step, following the preemptions the plan names (a preempted request's KV is
    forgotten, its recompute prefill of prompt and emitted tokens, rule RECOMPUTE, priced like any
    chunk) and measuring the memory design: running requests, KV held and used. What differs from a
    plain run is in the three hooks alone."""

    def __init__(self, trace: Trace, factory: Callable[..., Any], config: Config, roofline: Roofline,
                 stats: DesignStats, held: Callable[[Any], int], policy: str | None = None) -> None:
        super().__init__(trace, factory, config, roofline, policy or stats.design, max_new_cap=stats.cap)
        self.stats = stats
        self.held = held
        self.used = 0  # tokens in KV over running requests
        self.recomputed = 0  # of the step's tokens, run again after a preemption (set by `preempt`)

    def preempt(self, given: Any, plan: Any) -> None:
        streams = self.streams
        for rid in bounded(getattr(given, "preempted", ()), len(streams), "schedule() preempted"):
            stream = streams[rid]
            self.used -= stream.num_in_kv
            stream.num_computed = 0
            stream.target = stream.prompt_len + stream.num_emitted  # its residency's prefill, from position 0
            self.stats.preemptions += 1
        for rid, cached in getattr(given, "cached", ()):  # an admission's hit: its chunk starts after it
            streams[rid].num_computed = cached
            self.used += cached
            self.stats.hit_tokens += cached
        self.recomputed = 0  # the plan's tokens run again after a preemption: prompt and emitted tokens
        for rid, n in plan:
            stream = streams[rid]
            if stream.num_computed < stream.target > stream.prompt_len:
                self.recomputed += n

    def measure(self, m: Measured) -> None:
        super().measure(m)
        self.used += m.num_tokens
        self.stats.prefill_tokens += m.num_tokens - m.num_decodes
        if not m.num_tokens:
            return
        st, seconds = self.stats, m.seconds
        running = len(self.scheduler.running)
        st.busy_seconds += seconds
        st.running_seconds += running * seconds
        st.held_seconds += self.held(self.scheduler) * seconds
        st.used_seconds += self.used * seconds
        st.max_running = max(st.max_running, running)
        st.recomputed_tokens += self.recomputed
        st.recompute_seconds += seconds * self.recomputed / m.num_tokens

    def finished(self, stream: Stream) -> None:
        self.used -= stream.num_in_kv


@dataclass(slots=True)
class DesignRun:
    stats: DesignStats
    summary: Summary
    result: SimResult = field(repr=False)


def run_design(design: str | Contract, trace: Trace, config: Config, roofline: Roofline, cap: int | None = None,
               rate_scale: float = 1.0, contents: dict[int, Any] | None = None,
               factory: Callable[..., Any] | None = None, policy: str | None = None) -> DesignRun:
    """One run of `design` (a registered design, or its name: "reservation", "paged", "prefix") over
    `trace` with outputs capped at `cap` (requests reserving it under the reservation design; None: the
    exact max_new), by its reference scheduler, or by `factory` (a user's scheduler of that design, named
    `policy` in the report). `contents` gives requests' content by rid (`stallfree.prefix.contract.keys`;
    a design whose workloads carry contents reads it; the reference scheduler's only)."""
    simulated = {d.name: d for d in registry.designs() if d.held is not None}
    if not isinstance(design, Contract) and design not in simulated:
        raise ValueError(f"design {design!r} is unknown; the designs are {', '.join(simulated)}")
    contract = design if isinstance(design, Contract) else simulated[design]
    shaped = trace.scaled(rate_scale)
    if cap is not None:  # both designs skip what could never fit the cap's reservation
        fits = tuple(r for r in shaped.requests if r.prompt_len + cap <= config.kv_tokens)
        shaped = Trace(shaped.name, fits)
    stats = DesignStats(contract.name, cap, rate_scale, kv_tokens=config.kv_tokens)
    if factory is None:
        scheduler = load_target(contract.scheduler)
        factory = fed(contents or {}, scheduler) if CONTENTS in contract.carries else scheduler
    measure = contract.held or registry.RESERVATION.held

    def held(s: Any) -> int:
        return measure(s, config)

    sim = DesignSimulation(shaped, factory, config, roofline, stats, held, policy)
    result = sim.run()
    return DesignRun(stats, summarise(result), result)
