"""What each restating field of the reference buys: the time of the one read a step makes of it,
against the time of deriving the same fact from the rest of the state, and that derivation against
a whole step (schedule() + complete()). Measured at serving scale (benchmarks/reference_step.py's
state: 256 ready requests, one partial, W waiting), in one run, interleaved.

- `_ready` (the ready requests as their decode entries): the plan's decodes as one copy, against
  building them from the ready requests' sequences, which `_running` holds.
- `_finishing` (step -> the ready requests due their last token then): the step's ends as one pop,
  against a pass over the ready requests.
- `_free_kv`: the free KV count as a read, against K minus a sum over the running requests (the
  monitor reads it after every step; admission reads it whenever a slot is free).
- The line held by rid, which lets add() check a taken rid without a search: under churn (one
  admission and one arrival a step), the pop of its head from an ordered dict (`_waiting`), from a
  plain dict, and from a deque (which cannot be searched by rid).

    python benchmarks/reference_fields.py [--waiting 10000] [--rounds 7] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from steptiming import loaded, time_steps

from stallfree.reference import Scheduler


def per_call(fn: Callable[[], Any], repeat: int) -> float:
    """Microseconds per call of `fn`, over `repeat` calls."""
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat * 1e6


def pairs(s: Scheduler) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """For each field: (the read of it, the derivation that would replace it)."""
    ready, running = s._ready, s._running
    sequences = {rid: running[rid] for rid in ready}  # the ready ones' sequences, the first of `_running`
    step = s.num_steps
    kv = s.config.kv_tokens
    return {
        "_ready": (lambda: list(ready.values()), lambda: [seq.decode for seq in sequences.values()]),
        "_finishing": (lambda: s._finishing.get(step),
                       lambda: [q for q in sequences.values() if q.first_token_step + q.request.max_new - 1 == step]),  # type: ignore[operator]
        "_free_kv": (lambda: s.free_kv, lambda: kv - sum(q.request.reservation for q in running.values())),
    }


def line_pops(waiting: int, pops: int) -> tuple[float, float, float]:
    """Microseconds per admission under churn (pop the head, append an arrival) from a line of `waiting`
    requests held as an ordered dict (a linked list: its head is found at once), as a plain dict in
    arrival order (its head is found past the entries deleted before it, until an insertion resizes
    it), and as a deque."""
    ordered = OrderedDict.fromkeys(range(waiting))
    line = dict.fromkeys(range(waiting))
    queue = deque(range(waiting))
    t0 = time.perf_counter()
    for rid in range(waiting, waiting + pops):
        next(iter(ordered.values()))
        ordered.popitem(last=False)
        ordered[rid] = None
    t1 = time.perf_counter()
    for rid in range(waiting, waiting + pops):
        del line[next(iter(line))]
        line[rid] = None
    t2 = time.perf_counter()
    for rid in range(waiting, waiting + pops):
        queue.popleft()
        queue.append(rid)
    t3 = time.perf_counter()
    return (t1 - t0) / pops * 1e6, (t2 - t1) / pops * 1e6, (t3 - t2) / pops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    s = loaded(Scheduler, args.waiting)
    s.complete(s.schedule())
    samples: dict[str, list[float]] = {"step": []}
    for _ in range(args.rounds):  # interleaved: each round measures everything once
        samples["step"] += time_steps(s, args.repeat // 4)
        for name, (read, derive) in pairs(s).items():
            samples.setdefault(f"{name} read", []).append(per_call(read, args.repeat))
            samples.setdefault(f"{name} derived", []).append(per_call(derive, args.repeat))
    step = statistics.median(samples["step"])
    print(f"state: {len(s.running)} running, {len(s.waiting)} waiting; median step {step:.1f} us; each read and "
          "derivation: the fastest of its rounds")
    print(f"{'field':<12} {'read us':>9} {'derived us':>11} {'derived / step':>15}")
    for name in pairs(s):
        read, derived = min(samples[f"{name} read"]), min(samples[f"{name} derived"])  # the least disturbed round
        print(f"{name:<12} {read:>9.2f} {derived:>11.2f} {derived / step:>14.2f}x")
    pops = [line_pops(args.waiting, 5 * args.waiting) for _ in range(3)]
    ordered, as_dict, as_deque = (statistics.median(p[i] for p in pops) for i in range(3))
    print(f"the line by rid, one admission under churn: {ordered:.2f} us as an ordered dict (the reference's), "
          f"{as_dict:.2f} us as a plain dict ({as_dict / step:.2f}x a step), {as_deque:.2f} us as a deque")


if __name__ == "__main__":
    main()
