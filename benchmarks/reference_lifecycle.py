"""Reference scheduler with stops and cancels: the cost of the plain step against the reference
before stops and cancels, side by side, and the memory of a long run.

1. Step cost: `schedule()+complete()` at 256 running, no stop or cancel in the workload, for the
   current reference and for the one before it (read from git into a temporary package), measured
   interleaved in one process. Two states: 256 decodes that never finish beside a long partial
   prompt (the steady state of benchmarks/reference_step.py), and churn: 256 slots of short
   requests, a few finishing every step and as many admitted from a queue kept full.
2. Soak: N requests (default 2,000,000) through the current reference, a third of them stopping
   early and one in twenty cancelled (waiting or running); RSS growth and the step time at the
   start and end of the run.

    python benchmarks/reference_lifecycle.py [--rounds 10] [--steps 300] [--soak 2000000] [--base REV]
"""

from __future__ import annotations

import argparse
import importlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from oldcode import copy_package, git, newest
from steptiming import BUDGET, NUM_DECODES, loaded, time_steps

from stallfree.reference import Scheduler

NUM_RUNNING = NUM_DECODES


def before_lifecycle() -> str:
    """The newest commit whose reference has no cancel(): the code before stops and cancels."""
    return newest("reference", lambda rev: "def cancel(" not in git("show", f"{rev}:reference/scheduler.py"))


def load_old(rev: str, where: Path) -> Any:
    """The reference at `rev`, as the package `old_reference` under `where`."""
    copy_package(rev, "reference", where / "old_reference")
    sys.path.insert(0, str(where))
    return importlib.import_module("old_reference").Scheduler


class Churn:
    """256 slots of requests of 16 prompt tokens and 64 new ones, the queue refilled every step."""

    def __init__(self, cls: Any) -> None:
        self.s = cls(token_budget=BUDGET, max_seqs=NUM_RUNNING, kv_tokens=2**62)
        self.next_rid = 0
        for _ in range(400):
            self.refill()
        for _ in range(200):  # staggered: a few finish every step
            self.s.complete(self.s.schedule())
            self.refill()

    def refill(self) -> None:
        while len(self.s.waiting) < 64:
            self.s.add(self.next_rid, 16, 8 + self.next_rid % 113)
            self.next_rid += 1


def compare(old_cls: Any, rounds: int, steps: int) -> None:
    states = {}
    for label, cls in (("before", old_cls), ("now", Scheduler)):
        states[("steady", label)] = (loaded(cls, 0), None)
        churn = Churn(cls)
        states[("churn", label)] = (churn.s, churn)
    samples: dict[tuple[str, str], list[float]] = {k: [] for k in states}
    for _ in range(rounds):  # interleaved, so that machine noise hits both alike
        for key, (s, churn) in states.items():
            # the churn's refill runs outside the timed call: add() is not what is measured
            samples[key] += time_steps(s, steps, None if churn is None else churn.refill)
    print(f"{'state':>7} {'code':>7} {'median us':>10} {'p25':>8} {'p75':>8}")
    for state in ("steady", "churn"):
        for label in ("before", "now"):
            xs = samples[(state, label)]
            q = statistics.quantiles(xs, n=4)
            print(f"{state:>7} {label:>7} {statistics.median(xs):>10.1f} {q[0]:>8.1f} {q[2]:>8.1f}")
        ratio = statistics.median(samples[(state, "now")]) / statistics.median(samples[(state, "before")])
        print(f"{state:>7} now/before median: {ratio:.3f}x (target <= 1.2x)")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def emits(p: Any, n: int) -> bool:
    """Whether the reference request of progress `p`, planned `n` tokens, emits a token in the step."""
    return bool(p.num_prefilled + (n if p.num_prefilled < p.prompt_len else 0) >= p.prompt_len)


def soak(num_requests: int, seed: int = 0, make: Any = None, emits: Any = emits, name: str = "reference") -> Any:
    """Requests of 1..32 prompt tokens and 1..16 new ones through 256 slots, the queue kept at 512;
    a third stop before max_new, one in forty is cancelled while waiting, and every tenth step a
    running one is cancelled. The harness keeps only bounded state of its own (the time of every
    sixteenth step), so that the RSS growth is the scheduler's. `make()` builds the scheduler (the
    reference by default); `emits(progress, n)` says whether a planned request emits. Returns the
    scheduler at the end."""
    rng = random.Random(seed)
    s = make() if make is not None else Scheduler(token_budget=512, max_seqs=NUM_RUNNING, kv_tokens=NUM_RUNNING * 64)
    next_rid = stops = cancels = 0
    stop_at: dict[int, int] = {}  # rid -> the token it stops on, for requests not ended
    sampled: list[float] = []  # microseconds of every SAMPLE-th step
    rss_start = 0.0
    step = 0
    while next_rid < num_requests or not s.is_idle:
        while next_rid < num_requests and len(s.waiting) < 512:
            max_new = rng.randint(1, 16)
            s.add(next_rid, rng.randint(1, 32), max_new)
            if rng.random() < 1 / 40:
                s.cancel(next_rid)
                cancels += 1
            elif rng.random() < 1 / 3 and max_new > 1:
                stop_at[next_rid] = rng.randint(1, max_new - 1)
            next_rid += 1
        if step % 10 == 9 and s.running:
            rid = s.running[rng.randrange(len(s.running))].rid
            s.cancel(rid)
            stop_at.pop(rid, None)
            cancels += 1
        t0 = time.perf_counter_ns()
        plan = s.schedule()
        stopped = []
        for rid, n in plan:
            due = stop_at.get(rid)
            if due is not None:
                p = s.progress(rid)
                if emits(p, n) and p.num_emitted + 1 == due:
                    stopped.append(rid)
        s.complete(plan, stopped)
        t1 = time.perf_counter_ns()
        for rid in stopped:
            del stop_at[rid]
        for rid in s.ended:
            stop_at.pop(rid, None)
        stops += len(stopped)
        if step % SAMPLE == 0:
            sampled.append((t1 - t0) / 1000)
        step += 1
        if step == WARMUP:
            rss_start = rss_mb()
    rss_end = rss_mb()
    tenth = max(1, len(sampled) // 10)
    first, last = statistics.median(sampled[:tenth]), statistics.median(sampled[-tenth:])
    print(f"soak ({name}): {num_requests:,} requests, {step:,} steps, {stops:,} stops, {cancels:,} cancels; RSS "
          f"{rss_start:.1f} MB after {WARMUP:,} steps -> {rss_end:.1f} MB at the end (growth "
          f"{rss_end - rss_start:+.1f} MB, target < 5 MB); median step (schedule + complete with stops) "
          f"{first:.1f} us in the first tenth, {last:.1f} us in the last tenth")
    return s


SAMPLE = 16
WARMUP = 2000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--soak", type=int, default=2_000_000)
    parser.add_argument("--base", default=None, help="git revision of the reference to compare (default: the "
                        "newest without cancel())")
    args = parser.parse_args()
    rev = args.base or before_lifecycle()
    print(f"before: reference at {rev[:12]}; now: the working tree")
    with tempfile.TemporaryDirectory() as where:
        compare(load_old(rev, Path(where)), args.rounds, args.steps)
    if args.soak:
        soak(args.soak)


if __name__ == "__main__":
    main()
