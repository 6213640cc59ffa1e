"""The figures benchmarks/holdline.py compares, run in a worker process that imports one copy of
stallfree (the one first on PYTHONPATH): it reads one JSON request a line on stdin, {"figure": NAME,
"params": {...}}, runs that figure once and answers one JSON line: {"samples": {NAME: [cost, work]}}
(cost: CPU seconds, or microseconds per step for the step figures; work: what was done, which must
match between the two copies) or {"absent": WHY} where this copy lacks what the figure runs.

The same measuring code runs on both copies; where a module moved between commits, `first` finds it
under either name."""

from __future__ import annotations

import contextlib
import importlib
import json
import random
import resource
import statistics
import sys
from collections.abc import Callable
from typing import Any

from steptiming import loaded, time_steps

REF_WAITING = 10_000  # requests blocked behind the 256 decodes in the step figures
MONITOR_SEED = 20231116  # benchmarks/monitor_campaign.py's workloads
SIM_BUDGET, SIM_SEQS = 2048, 256  # benchmarks/sim_full_trace.py's deployment


class Absent(Exception):
    """This copy of stallfree has no module or name the figure needs."""


def first(*names: str) -> Any:
    """The first of `names` ("module:attribute") this copy has."""
    for name in names:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            continue
    raise Absent(" / ".join(names))


def cpu() -> float:
    """CPU seconds of this process and of its children that have ended."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = cpu()
    out = run()
    return cpu() - started, out


CACHE: dict[str, Any] = {}


def cached(key: str, make: Callable[[], Any]) -> Any:
    if key not in CACHE:
        CACHE[key] = make()
    return CACHE[key]


# -- the figures ------------------------------------------------------------------------------------


def step_figure(target: str, steps: int) -> dict[str, list[Any]]:
    """Median microseconds of a schedule() + complete() at serving scale (benchmarks/steptiming.py)."""
    s = cached(target, lambda: loaded(first(target), REF_WAITING))
    return {"": [statistics.median(time_steps(s, steps)), [REF_WAITING, steps]]}


def bare_play(workload: Any, factory: Any) -> int:
    """The workload through the plain protocol, no monitor (benchmarks/monitor_campaign.py)."""
    cfg = workload.config
    s = factory(cfg.token_budget, cfg.max_seqs, cfg.kv_tokens)
    arrivals = sorted(workload.requests, key=lambda a: a.arrival_step)
    i = steps = 0
    while True:
        while i < len(arrivals) and arrivals[i].arrival_step <= steps:
            a = arrivals[i]
            with contextlib.suppress(ValueError, TypeError):  # never-fit requests are refused
                s.add(a.rid, a.prompt_len, a.max_new)
            i += 1
        if i == len(arrivals) and s.is_idle:
            return steps
        s.complete(s.schedule())
        steps += 1


def monitor_figure(workloads: int) -> dict[str, list[Any]]:
    """The reference alone, under the monitor with no rule (the shadow's bookkeeping) and with every rule."""
    generate = first("stallfree.testing.generate:random_workload", "stallfree.spec.generate:random_workload")
    play, factory = first("stallfree.spec:play"), first("stallfree.reference:Scheduler")

    def make() -> list[Any]:
        rng = random.Random(MONITOR_SEED)
        return [generate(rng) for _ in range(workloads)]

    ws = cached(f"workloads{workloads}", make)
    out: dict[str, list[Any]] = {}
    for name, run in (("bare", lambda: sum(bare_play(w, factory) for w in ws)),
                      ("shadow", lambda: sum(play(w, factory, ()).steps for w in ws)),
                      ("monitor", lambda: sum(play(w, factory).steps for w in ws))):
        seconds, steps = timed(run)
        out[name] = [seconds, steps]
    return out


def campaign_figure(sims: int) -> dict[str, list[Any]]:
    """A campaign of `sims` simulations from seed 0, one job, in this process."""
    campaign = first("stallfree.testing.campaign:Campaign", "stallfree.spec.campaign:Campaign")
    run = first("stallfree.testing.campaign:run", "stallfree.spec.campaign:run")
    seconds, tally = timed(lambda: run(campaign(sims, 0, first("stallfree.reference:Scheduler"), jobs=1)))
    return {"": [seconds, [tally.sims, tally.steps, tally.tokens, tally.violation is None]]}


def simulate_figure(trace: str, requests: int) -> dict[str, list[Any]]:
    """The first `requests` requests of a shipped trace under the reference, unchecked and checked."""
    costs = importlib.import_module("stallfree.costs")
    Trace, load = first("stallfree.sim.trace:Trace"), first("stallfree.sim.trace:load")
    simulate, config = first("stallfree.sim.simulator:simulate"), first("stallfree.spec:Config")
    deployment = costs.Deployment(costs.model("llama-3.3-70b"), costs.gpu("h100-sxm"), 4, "fp8")
    roofline = costs.Roofline(deployment, "full")
    head = cached(f"{trace}{requests}", lambda: Trace(trace, load(trace).requests[:requests]))
    factory, cfg = first("stallfree.reference:Scheduler"), config(SIM_BUDGET, SIM_SEQS, deployment.kv_tokens)
    out: dict[str, list[Any]] = {}
    for name, check in (("unchecked", False), ("checked", True)):
        seconds, r = timed(lambda check=check: simulate(head, factory, cfg, roofline, "reference", check=check))
        tokens = sum(s.num_emitted for s in r.streams)
        out[name] = [seconds, [len(r.step_tokens), tokens, round(r.clock, 6), round(r.busy_seconds, 6)]]
    return out


def read_all(path: str, judge: Callable[[Any], Any]) -> tuple[float, Any]:
    read_lines = first("stallfree.conformance.trace.tracecheck:read_lines",
                       "stallfree.conformance.tracecheck:read_lines")
    with open(path, "rb") as stream:
        return timed(lambda: judge(read_lines(stream)))


def trace_figure(path: str, version: int) -> dict[str, list[Any]]:
    """json.loads of every line, then check-trace (v1: the monitor on the trace; v2: the engine checker)."""
    if version == 1:
        check = first("stallfree.conformance.trace.tracecheck:check_trace",
                      "stallfree.conformance.tracecheck:check_trace")
    else:
        check = first("stallfree.conformance.trace.enginecheck:check_engine_trace")
    parse_seconds, lines = read_all(path, lambda lines: sum(1 for line in lines if "step" in json.loads(line)))
    seconds, verdict = read_all(path, check)
    broken = sorted(getattr(verdict, "violations", None) or {})
    return {"json.loads": [parse_seconds, lines], "check": [seconds, [verdict.steps, broken]]}


def kit_figure(examples: int) -> dict[str, list[Any]]:
    """`stallfree conform` of the reference on the default grid, `examples` per grid point."""
    conform = first("stallfree.conformance.kit:conform")
    seconds, report = timed(lambda: conform("stallfree.reference:Scheduler", examples=examples))
    return {"": [seconds, [report.runs, report.steps, sorted(report.counterexamples)]]}


FIGURES: dict[str, Callable[..., dict[str, list[Any]]]] = {
    "step": step_figure, "monitor": monitor_figure, "campaign": campaign_figure,
    "simulate": simulate_figure, "trace": trace_figure, "kit": kit_figure,
}


def only_this_copy() -> None:
    """Drop the import hooks of an editable install of stallfree, so that a module this copy lacks is
    absent here rather than found in the working tree."""
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in getattr(h, "__module__", "")]
    sys.path_importer_cache.clear()


def serve() -> None:
    """Answer requests until stdin closes (the first line names this copy: stallfree's path)."""
    only_this_copy()
    print(json.dumps({"stallfree": importlib.import_module("stallfree").__file__}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer: dict[str, Any] = {"samples": FIGURES[request["figure"]](**request["params"])}
        except Absent as absent:
            answer = {"absent": f"no {absent}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve()
