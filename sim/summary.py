"""What a simulation shows: latency spreads per request, throughput, and budget use per step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stallfree.costs import worst_step

from .simulator import SimResult
from .stats import Spread, spread

MS = 1e3
LATENCIES = ("ttft", "tpot", "max_gap", "e2e", "queueing")
LATENCY_NAMES = {
    "ttft": "time to first token",
    "tpot": "time per output token (mean per request)",
    "max_gap": "worst gap between two tokens of a stream",
    "e2e": "end-to-end latency",
    "queueing": "queueing delay (arrival to admission)",
}
MAX_SKIPPED_LISTED = 20


@dataclass(frozen=True, slots=True)
class Summary:
    trace: str
    policy: str
    token_budget: int
    max_seqs: int
    kv_tokens: int
    cost: str  # the deployment and cost mode
    num_requests: int  # accepted
    num_finished: int
    skipped: tuple[tuple[int, str], ...]  # (rid, reason) of requests the contract refuses
    latency: dict[str, Spread | None]  # seconds, by the names in LATENCIES
    clock: float  # seconds from the first arrival to the last token
    busy_seconds: float
    longest_step: float  # seconds: under the reference, the worst gap a stream sees (DECODE-FIRST)
    step_bound: float  # seconds: the longest any step may take at this budget (costs.worst_step)
    num_steps: int  # non-empty steps
    output_tokens: int
    prompt_tokens: int
    budget_use: Spread | None  # tokens of each step over the budget (may exceed 1 for a variant)
    full_steps: float  # share of steps that used the whole budget
    wall_seconds: float
    max_new_cap: int | None = None  # max_new each request reserved; None: its real length (the oracle)
    max_new_caps: tuple[int, ...] = ()  # or the caps each request drew one of
    num_truncated: int = 0  # requests whose real length exceeds the cap: they run to the cap
    kv_reserved: float = 0.0  # KV tokens reserved by running requests, mean over time (busy seconds)
    kv_used: float = 0.0  # KV positions computed of running requests, mean over time
    mean_running: float = 0.0  # requests running at once, mean over time
    max_running: int = 0

    @property
    def kv_use_of_reserved(self) -> float:
        """The share of reserved KV that holds computed positions: 1 - the reservation's waste."""
        return self.kv_used / self.kv_reserved if self.kv_reserved else 0.0

    @property
    def output_tokens_per_second(self) -> float:
        return self.output_tokens / self.clock if self.clock else 0.0

    @property
    def requests_per_second(self) -> float:
        return self.num_finished / self.clock if self.clock else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "trace": self.trace, "policy": self.policy, "cost": self.cost,
            "config": {"token_budget": self.token_budget, "max_seqs": self.max_seqs, "kv_tokens": self.kv_tokens},
            "requests": self.num_requests, "finished": self.num_finished,
            "skipped": [{"rid": rid, "reason": reason} for rid, reason in self.skipped],
            "latency_s": {k: (v.to_json() if v else None) for k, v in self.latency.items()},
            "clock_s": self.clock, "busy_s": self.busy_seconds,
            "longest_step_s": self.longest_step, "step_bound_s": self.step_bound, "steps": self.num_steps,
            "output_tokens": self.output_tokens, "prompt_tokens": self.prompt_tokens,
            "output_tokens_per_s": self.output_tokens_per_second, "requests_per_s": self.requests_per_second,
            "budget_use": self.budget_use.to_json() if self.budget_use else None,
            "full_steps": self.full_steps, "wall_s": self.wall_seconds,
            "max_new_cap": self.max_new_cap, "max_new_caps": list(self.max_new_caps), "truncated": self.num_truncated,
            "kv_reserved_mean": self.kv_reserved, "kv_used_mean": self.kv_used,
            "kv_use_of_reserved": self.kv_use_of_reserved, "running_mean": self.mean_running,
            "running_max": self.max_running,
        }


def summarise(result: SimResult) -> Summary:
    streams = result.streams
    latency = {
        "ttft": spread(s.ttft for s in streams),
        "tpot": spread(s.tpot for s in streams),
        "max_gap": spread(s.max_gap if s.num_emitted >= 2 else None for s in streams),
        "e2e": spread(s.e2e for s in streams),
        "queueing": spread(s.queueing for s in streams),
    }
    budget = result.config.token_budget
    tokens = result.step_tokens
    max_context = max((s.prompt_len + s.max_new for s in streams), default=1)
    return Summary(
        trace=result.trace,
        policy=result.policy,
        token_budget=budget,
        max_seqs=result.config.max_seqs,
        kv_tokens=result.config.kv_tokens,
        cost=f"{result.roofline.deployment.describe()}; {result.roofline.mode} cost",
        num_requests=len(streams),
        num_finished=result.num_finished,
        skipped=tuple((s.request.rid, s.reason) for s in result.skipped),
        latency=latency,
        clock=result.clock,
        busy_seconds=result.busy_seconds,
        longest_step=result.longest_step,
        step_bound=worst_step(result.roofline, budget, max_context, result.config.kv_tokens),
        num_steps=len(tokens),
        output_tokens=sum(s.num_emitted for s in streams),
        prompt_tokens=sum(s.num_prefilled for s in streams),
        budget_use=spread(n / budget for n in tokens),
        full_steps=sum(1 for n in tokens if n >= budget) / len(tokens) if tokens else 0.0,
        wall_seconds=result.wall_seconds,
        max_new_cap=result.max_new_cap,
        max_new_caps=result.max_new_caps,
        num_truncated=sum(1 for s in streams if s.request.max_new > s.max_new),
        kv_reserved=result.kv_reserved_seconds / busy if (busy := result.busy_seconds) else 0.0,
        kv_used=result.kv_used_seconds / busy if busy else 0.0,
        mean_running=result.running_seconds / busy if busy else 0.0,
        max_running=result.max_running,
    )


def report(summary: Summary) -> list[str]:
    """The summary as text, latencies in milliseconds."""
    s = summary
    lines = [
        f"trace {s.trace}, policy {s.policy}: budget {s.token_budget:,}, max_seqs {s.max_seqs}, "
        f"kv_tokens {s.kv_tokens:,}",
        f"cost: {s.cost}",
        f"requests: {s.num_requests:,} simulated, {s.num_finished:,} finished, {len(s.skipped)} skipped "
        f"(never fit the KV capacity)",
    ]
    for rid, reason in s.skipped[:MAX_SKIPPED_LISTED]:
        lines.append(f"  skipped rid {rid}: {reason}")
    if len(s.skipped) > MAX_SKIPPED_LISTED:
        lines.append(f"  ... and {len(s.skipped) - MAX_SKIPPED_LISTED} more (all listed in --json)")
    lines.append(f"{'ms':<44}{'p50':>10}{'p90':>10}{'p99':>10}{'max':>10}")
    for key in LATENCIES:
        value = s.latency[key]
        if value is None:
            lines.append(f"{LATENCY_NAMES[key]:<44}{'-':>10}")
            continue
        ms = value.scaled(MS)
        lines.append(f"{LATENCY_NAMES[key]:<44}{ms.p50:>10.1f}{ms.p90:>10.1f}{ms.p99:>10.1f}{ms.max:>10.1f}")
    lines.append(
        f"throughput: {s.output_tokens_per_second:,.0f} output tokens/s, {s.requests_per_second:.2f} requests/s "
        f"over {s.clock:,.1f} s ({s.busy_seconds / s.clock if s.clock else 0:.0%} busy)"
    )
    if s.budget_use is not None:
        u = s.budget_use
        lines.append(
            f"budget use per step: mean {u.mean:.0%}, p50 {u.p50:.0%}, p99 {u.p99:.0%}, max {u.max:.0%}; "
            f"{s.full_steps:.1%} of {s.num_steps:,} steps full"
        )
    truncated = f"stopping at its real length ({s.num_truncated:,} truncated at the cap)"
    if s.max_new_caps:
        caps = ", ".join(f"{c:,}" for c in s.max_new_caps)
        reserve = f"max_new = one of {caps} (drawn per request), {truncated}"
    elif s.max_new_cap is not None:
        reserve = f"max_new = {s.max_new_cap:,} (the cap), {truncated}"
    else:
        reserve = "its real output length (the oracle)"
    lines.append(f"each request reserves {reserve}")
    lines.append(
        f"KV over busy time: {s.kv_reserved:,.0f} reserved, {s.kv_used:,.0f} used ({s.kv_use_of_reserved:.0%} of the "
        f"reserved; K = {s.kv_tokens:,}); requests running at once: mean {s.mean_running:.1f}, max {s.max_running}"
    )
    lines.append(
        f"longest step {s.longest_step * MS:.1f} ms; no step at budget {s.token_budget:,} can exceed "
        f"{s.step_bound * MS:.1f} ms (every token attending to the longest reservation, all KV read)"
    )
    lines.append(f"simulated in {s.wall_seconds:.1f} s")
    return lines
