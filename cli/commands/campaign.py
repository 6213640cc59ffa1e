"""`stallfree campaign`: randomized simulations of the reference (or any scheduler) under the
monitor, on several processes; prints what was run and how fast, or the first broken rule and the
workload that replays it."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import stallfree.spec.reservation.monitor as monitor
from stallfree.spec import RULE_IDS
from stallfree.spec.verdict import TIMEOUT
from stallfree.testing.campaign import BATCH, CRASHED, Campaign, CampaignStatus, Tally
from stallfree.testing.campaign import run as run_campaign
from stallfree.testing.campaign_ray import RayRunner, RayUnavailable, import_ray

from .. import exits
from .args import (
    FactoryError,
    add_output_arguments,
    bounded_int,
    check_json,
    guarded,
    positive_int,
    rule_list,
    seconds,
    seed,
    shows_progress,
    write_json,
)
from .hosting import close, hosted, load_raw

NAME = "campaign"
HELP = "randomized simulations under the monitor: counts, rules checked per step, steps per second"

BAR_WIDTH = 30
DEFAULT_SIMS = 500  # enough for our base scale: >= 400 simulations and >= 366,724 steps
DEFAULT_TIMEOUT = 600.0  # seconds per batch: the reference takes well under one
MAX_JOBS = 256  # worker processes; a campaign never starts more than it has batches of simulations
RUNNERS = ("local", "ray")  # where the batches run: this machine's processes, or Ray tasks


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sims", type=positive_int, default=DEFAULT_SIMS,
                   help=f"simulations to run (default {DEFAULT_SIMS})")
    p.add_argument("--seed", type=seed, default=0,
                   help="campaign seed; simulation i plays workload (seed, i) (default 0)")
    p.add_argument("--jobs", type=bounded_int(MAX_JOBS), default=min(os.cpu_count() or 1, MAX_JOBS),
                   help=f"worker processes, at most {MAX_JOBS} (default: every core)")
    p.add_argument("--runner", choices=RUNNERS, default="local",
                   help="local: worker processes here (default); ray: Ray tasks, on a local instance of "
                        "--jobs CPUs or the cluster at --ray-address (the `ray` extra)")
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="with --runner ray: the cluster to run on (HOST:PORT, auto); default: a local instance")
    p.add_argument("--scheduler", default="stallfree.reference:Scheduler", metavar="MODULE:FACTORY",
                   help="the scheduler to check (default: the reference)")
    p.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID", help="check only these rules")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"a batch of {BATCH} simulations taking longer is a TIMEOUT (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--lifecycle", action="store_true",
                   help="workloads that also stop requests early and cancel them (the scheduler needs "
                        "complete(plan, stopped) and cancel(rid))")
    add_output_arguments(p, "the figures and the first violation")


def show_progress(progress: CampaignStatus) -> None:
    done = progress.done
    share = done.sims / progress.total_sims
    filled = int(share * BAR_WIDTH)
    rate = done.steps / progress.elapsed if progress.elapsed else 0.0
    print(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done.sims}/{progress.total_sims} sims, "
          f"{done.steps:,} steps, {rate:,.0f} steps/s", end="", file=sys.stderr, flush=True)


def report(campaign: Campaign, tally: Tally, wall: float, where: str | None = None) -> list[str]:
    """The figures of a campaign, one per line; `where` it ran (default: its jobs)."""
    per_core = tally.steps / tally.cpu_seconds if tally.cpu_seconds else 0.0
    stops = f"stops, cancels   {tally.stops:,} stops, {tally.cancels:,} cancel() calls"
    lifecycle = [stops] if campaign.lifecycle else []
    return [
        f"simulations      {tally.sims:,}",
        f"requests         {tally.requests:,} ({tally.refused:,} refused as never-fit)",
        *lifecycle,
        f"steps            {tally.steps:,} ({tally.busy_steps:,} with a non-empty plan)",
        f"tokens           {tally.tokens:,}",
        f"rules per step   {campaign.checks_per_step} predicates ({tally.checks:,} evaluations in all)",
        f"wall time        {wall:.1f} s on {where or f'{campaign.jobs} job(s)'}",
        f"steps per second {tally.steps / wall:,.0f} in all (wall), {per_core:,.0f} per CPU-second of a worker "
        "(monitor included)",
    ]


def core_build() -> str:
    """Which copy of the monitor runs: the Python source, or the mypyc-compiled copy of it that
    scripts/compiled.sh builds (C extension modules, chosen by PYTHONPATH)."""
    where = monitor.__file__ or ""
    if not any(where.endswith(suffix) for suffix in EXTENSION_SUFFIXES):
        return "Python"
    return f"compiled with mypyc ({Path(where).parent})"


def run(args: argparse.Namespace) -> int:
    try:
        factory = load_raw(args.scheduler, args.timeout)
        (factory if hosted(factory) else guarded(factory, args.scheduler))(  # fails here, not in a worker
            token_budget=8, max_seqs=2, kv_tokens=64)
        check_json(args)
        runner = ray_runner(args)
    except (ValueError, FactoryError) as error:
        print(f"stallfree campaign: {error}", file=sys.stderr)
        return exits.USAGE
    try:
        return campaigned(args, factory, runner)
    finally:
        close(factory)
        if runner is not None:
            runner.close()


def ray_runner(args: argparse.Namespace) -> RayRunner | None:
    """Ray, connected, for --runner ray (None for the local pool); a ValueError naming the flag and the
    value where ray is missing or the cluster cannot be reached."""
    address = args.ray_address
    if args.runner == "local":
        if address is not None:
            raise ValueError(f"--ray-address {address!r}: needs --runner ray")
        return None
    try:
        import_ray()
    except RayUnavailable as error:
        raise ValueError(f"--runner ray: {error}") from None
    try:
        return RayRunner(address, args.jobs).connect()
    except RayUnavailable as error:
        flag = "--runner ray" if address is None else f"--ray-address {address!r}"
        raise ValueError(f"{flag}: {error}") from None


def ray_where(runner: RayRunner) -> str:
    return f"Ray ({runner.address or 'a local instance'}, {runner.num_workers} worker CPUs)"


def campaigned(args: argparse.Namespace, factory: Callable[..., Any], runner: RayRunner | None = None) -> int:
    """The campaign of a loaded scheduler, on the local pool or on `runner`: its report, JSON and exit status."""
    rules = None if args.rules is None else tuple(args.rules)
    campaign = Campaign(args.sims, args.seed, factory, rules, args.jobs, batch_timeout=args.timeout,
                        lifecycle=args.lifecycle)
    where = f"{args.jobs} job(s)" if runner is None else ray_where(runner)
    print(f"campaign: {args.sims:,} simulations, seed {args.seed}, {where}, scheduler {args.scheduler}")
    print(f"core: {core_build()}")
    progress = show_progress if shows_progress(args) else None
    started = time.perf_counter()
    # The local pool isolates even one job: a scheduler that ends its process is a crash, not the end of this one.
    tally = run_campaign(campaign, progress, isolate=True) if runner is None else runner.run(campaign, progress)
    wall = time.perf_counter() - started
    if progress is not None:
        print(file=sys.stderr)
    for line in report(campaign, tally, wall, None if runner is None else where):
        print(line)
    violation = tally.violation
    data = {"scheduler": args.scheduler, "runner": args.runner, "seed": args.seed, "sims": tally.sims,
            "requests": tally.requests, "refused": tally.refused, "steps": tally.steps,
            "busy_steps": tally.busy_steps, "tokens": tally.tokens,
            "checks": tally.checks, "wall_seconds": round(wall, 3), "cpu_seconds": round(tally.cpu_seconds, 3),
            "rules": list(campaign.rules or RULE_IDS),
            "violation": None if violation is None else {
                "rule": violation.rule, "sim": violation.sim, "step": violation.step, "message": violation.message,
                "workload": json.loads(violation.workload)}}
    try:
        write_json(args, data)
    except ValueError as error:  # checked before the run, yet the write failed
        print(f"stallfree campaign: {error}", file=sys.stderr)
        return exits.USAGE
    if violation is None:
        print(f"no rule broken (checked: {', '.join(campaign.rules or RULE_IDS)})")
        return exits.HOLDS
    if violation.rule in (CRASHED, TIMEOUT):
        print(f"\n{violation.rule} in simulation {violation.sim} (seed {args.seed}): {violation.message}")
    else:
        print(f"\n{violation.rule} broken at step {violation.step} of simulation {violation.sim} "
              f"(seed {args.seed}): {violation.message}")
    print("replay it: save the workload below to a file and run "
          f"stallfree trace --workload FILE --scheduler {args.scheduler}")
    print(violation.workload)
    return exits.CRASHED if violation.rule in (CRASHED, TIMEOUT) else exits.BROKEN
