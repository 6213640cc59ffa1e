"""vLLM's whole engine on the CPU (tiny model, dummy weights) with its own scheduler and with stallfree's,
side by side on a burst and on the head of the Azure conversation trace (scaled to what a CPU runs):
output tokens a second, time to first token and per output token
(percentiles), the scheduler's share of a step, and for stallfree the monitor's part of it. Run in the
vLLM venv (scripts/vllm-venv.sh):

    .venv-vllm/bin/python benchmarks/serving_side_by_side.py [--workload burst|azure] [--requests N]
        [--blocks B] [--repeats R]

The Azure trace (Azure LLM inference trace 2023, conversation; Patel et al., "Splitwise: Efficient
generative LLM inference using phase splitting", ISCA 2024; CC BY 4.0; shipped in sim/data/) gives the
arrivals and the length mix: its first N requests, prompt and output lengths divided by 16 and 4 (to
4..200 and 4..48 tokens), arrival times spread over 4 engine steps a request on average.

The scheduler's share is the time in schedule() and update_from_output() (vLLM's bookkeeping of the
sampled tokens included, for every scheduler alike) over the engine step's wall time. The model is tiny,
so a step is short and the share is an upper bound of what a real model would show.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
from typing import Any

from vllm import SamplingParams
from vllm.v1.core.sched.scheduler import Scheduler

from stallfree.serving.live import Costs
from stallfree.serving.offline import Arrival, build, drive
from stallfree.serving.tiny import text
from stallfree.serving.vllm_scheduler import PagedScheduler, ReservationScheduler


class Timed:
    """A mixin that adds up the time of each step's schedule() and update_from_output(), and counts
    vLLM's own preemptions (its scheduler keeps no total)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self.scheduler_seconds: list[float] = []
        self.max_running = 0
        self.running_counts: list[int] = []  # requests running after each schedule()
        self.num_preempted = 0

    def schedule(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        output = super().schedule(*args, **kwargs)  # type: ignore[misc]
        self.scheduler_seconds.append(time.perf_counter() - start)
        self.max_running = max(self.max_running, len(self.running))  # type: ignore[attr-defined]
        self.running_counts.append(len(self.running))  # type: ignore[attr-defined]
        self.num_preempted += len(output.preempted_req_ids or ())
        return output

    def update_from_output(self, *args: Any) -> Any:
        start = time.perf_counter()
        outputs = super().update_from_output(*args)  # type: ignore[misc]
        self.scheduler_seconds[-1] += time.perf_counter() - start
        return outputs


class VllmTimed(Timed, Scheduler):
    pass


class ReservationTimed(Timed, ReservationScheduler):
    pass


class PagedTimed(Timed, PagedScheduler):
    pass


RUNS = (("vLLM's scheduler", VllmTimed, {}), ("stallfree reservation", ReservationTimed, {}),
        ("stallfree paged", PagedTimed, {}),
        ("stallfree paged, no monitor", PagedTimed, {"additional_config": {"stallfree": {"monitor": False}}}))


def workload(n: int, seed: int = 0) -> list[Arrival]:
    """A burst: `n` requests at step 0, prompts of 8 to 90 tokens, 8 to 40 tokens out, greedy."""
    rng = random.Random(seed)
    return [Arrival(text([rng.randrange(2, 999) for _ in range(rng.randint(8, 90))]),
                    SamplingParams(max_tokens=rng.randint(8, 40), temperature=0.0, ignore_eos=True), 0)
            for _ in range(n)]


def azure(n: int, seed: int = 0) -> list[Arrival]:
    """The first `n` requests of the Azure conversation trace, scaled to the CPU (see the docstring)."""
    from stallfree.sim.trace import load

    trace = load("conv").head(n)
    rng, spread = random.Random(seed), 4 * n / max(trace.duration, 1e-9)
    return [Arrival(text([rng.randrange(2, 999) for _ in range(min(200, max(4, r.prompt_len // 16)))]),
                    SamplingParams(max_tokens=min(48, max(4, r.max_new // 4)), temperature=0.0, ignore_eos=True),
                    round(r.arrival * spread)) for r in trace.requests]


WORKLOADS = {"burst": workload, "azure": azure}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(run: Any) -> dict[str, float]:
    tokens = sum(len(o.outputs[0].token_ids) for o in run.outputs.values() if o is not None)
    wall = sum(run.step_seconds)
    tpot = [(times[-1] - times[0]) / (len(times) - 1) for times in run.token_times.values() if len(times) > 1]
    sched = run.scheduler
    share = sum(sched.scheduler_seconds) / wall
    live = getattr(sched, "live", None)
    monitor = sum(live.costs.monitor_ns) / 1e9 / wall if live is not None and live.monitored else 0.0
    return {"tok/s": tokens / wall, "ttft50": percentile(list(run.first_token_at.values()), 0.5),
            "ttft90": percentile(list(run.first_token_at.values()), 0.9), "tpot50": percentile(tpot, 0.5),
            "tpot90": percentile(tpot, 0.9), "share": share, "monitor": monitor, "steps": len(run.step_seconds),
            "max_running": sched.max_running, "mean_running": statistics.mean(sched.running_counts or [0]),
            "tokens": tokens, "preemptions": preemptions(sched)}


def preemptions(scheduler: Any) -> int:
    """Preemptions so far: stallfree's paged design counts its own; vLLM's requests count theirs."""
    live = getattr(scheduler, "live", None)
    return int(getattr(live.scheduler, "num_preemptions", 0)) if live is not None else scheduler.num_preempted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="burst")
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--blocks", type=int, default=17, help="KV blocks of 32 tokens, the null block included")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    arrivals = WORKLOADS[args.workload](args.requests)
    engine_args = {"num_blocks": args.blocks, "max_model_len": 256, "budget": 64, "max_seqs": 8}
    span = f"of the Azure conversation trace over {arrivals[-1].arrival_step} steps"
    when = "at once" if args.workload == "burst" else span
    print(f"{args.requests} requests {when}; budget 64, 8 slots, {args.blocks - 1} blocks of 32; medians of "
          f"{args.repeats} runs; times in ms")
    print(f"{'scheduler':<28} {'tok/s':>7} {'TTFT p50':>9} {'p90':>7} {'TPOT p50':>9} {'p90':>6} "
          f"{'sched %':>8} {'monitor %':>9} {'steps':>6} {'max run':>7} {'mean run':>8} {'preempt':>7}")
    outputs: dict[str, list[list[int]]] = {}
    table: list[tuple[str, dict[str, float]]] = []
    for name, cls, extra in RUNS:
        engine = build(cls, **engine_args, **extra)
        rows = []
        for _ in range(args.repeats):
            before = preemptions(engine.engine_core.engine_core.scheduler)
            run = drive(engine, arrivals)
            rows.append(measure(run))
            rows[-1]["preemptions"] -= before
            if getattr(run.scheduler, "live", None) is not None:
                run.scheduler.live.costs = Costs()
            outputs[name] = [list(run.outputs[i].outputs[0].token_ids) for i in range(len(arrivals))]
            run.scheduler.scheduler_seconds.clear()
            run.scheduler.running_counts.clear()
            run.scheduler.max_running = 0
        m = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        table.append((name, m))
        print(f"{name:<28} {m['tok/s']:>7.0f} {m['ttft50'] * 1e3:>9.1f} {m['ttft90'] * 1e3:>7.1f} "
              f"{m['tpot50'] * 1e3:>9.2f} {m['tpot90'] * 1e3:>6.2f} {m['share'] * 100:>7.1f}% "
              f"{m['monitor'] * 100:>8.1f}% {m['steps']:>6.0f} {m['max_running']:>7.0f} {m['mean_running']:>8.2f} "
              f"{m['preemptions']:>7.0f}")
        del engine, run  # shut down before the next is built: a shutdown tears down vLLM's process-wide state
        gc.collect()
    same = all(o == outputs["vLLM's scheduler"] for o in outputs.values())
    print(f"greedy outputs token for token the same as vLLM's scheduler: {'yes' if same else 'NO'}")
    markdown(table)


def markdown(table: list[tuple[str, dict[str, float]]]) -> None:
    """The table as docs/serving.md shows it."""
    print("\n| scheduler | tok/s | TTFT p50 / p90 (ms) | TPOT p50 / p90 (ms) | scheduler share | monitor share "
          "| steps | running, max / mean | preemptions |\n|---|---|---|---|---|---|---|---|---|")
    for name, m in table:
        monitor = f"{m['monitor'] * 100:.1f}%" if m["monitor"] else ""
        print(f"| {name} | {m['tok/s']:.0f} | {m['ttft50'] * 1e3:.0f} / {m['ttft90'] * 1e3:.0f} | "
              f"{m['tpot50'] * 1e3:.0f} / {m['tpot90'] * 1e3:.0f} | {m['share'] * 100:.1f}% | {monitor} | "
              f"{m['steps']:.0f} | {m['max_running']:.0f} / {m['mean_running']:.2f} | {m['preemptions']:.0f} |")


if __name__ == "__main__":
    main()
