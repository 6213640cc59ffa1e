"""What each restating field of the reference buys: the time of the one read a step makes of it,
against the time of deriving the same fact from the rest of the state, and that derivation against
a whole step (schedule() + complete()). Measured at serving scale (benchmarks/reference_step.py's
state: 256 ready requests, one partial, W waiting), in one run, interleaved.

- `_live` (every request waiting or running, by rid): add()'s check that a rid is free, against a
  search of the line and the running requests.
- `_ready` holding decode entries: the plan's decodes as one copy, against building them from the
  ready requests' sequences.
- `_finishing` (step -> the ready requests due their last token then): the step's ends as one pop,
  against a pass over the ready requests.
- `_free_kv`: the free KV count as a read, against K minus a sum over the running requests (the
  monitor reads it after every step; admission reads it whenever a slot is free).
- The line held by rid (a dict in arrival order, which would make `_live` a restatement to drop):
  under churn (one admission and one arrival a step), the pop of its head, against the deque's.

    python benchmarks/reference_fields.py [--waiting 10000] [--rounds 7] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import deque
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
    live, ready, partial, waiting = s._live, s._ready, s._partial, s._waiting
    sequences = {rid: live[rid] for rid in ready}  # `_ready` as sequences, as it would be without entries
    free_rid = max(live) + 1  # a rid that is not taken: the search finds nothing and reads everything
    step = s.num_steps
    kv = s.config.kv_tokens
    return {
        "_live": (lambda: free_rid in live,
                  lambda: free_rid in ready or free_rid in partial or any(q.rid == free_rid for q in waiting)),
        "_ready": (lambda: list(ready.values()), lambda: [seq.decode for seq in sequences.values()]),
        "_finishing": (lambda: s._finishing.get(step),
                       lambda: [q for q in sequences.values() if q.first_token_step + q.request.max_new - 1 == step]),  # type: ignore[operator]
        "_free_kv": (lambda: s.free_kv,
                     lambda: kv - sum(q.request.reservation for q in sequences.values())
                     - sum(q.request.reservation for q in partial.values())),
    }


def line_pops(waiting: int, pops: int) -> tuple[float, float]:
    """Microseconds per admission under churn (pop the head, append an arrival) from a line of `waiting`
    requests held as a dict in arrival order, and as a deque: a dict's head is found past the entries
    deleted before it, until an insertion resizes it."""
    line = dict.fromkeys(range(waiting))
    queue = deque(range(waiting))
    t0 = time.perf_counter()
    for rid in range(waiting, waiting + pops):
        del line[next(iter(line))]
        line[rid] = None
    t1 = time.perf_counter()
    for rid in range(waiting, waiting + pops):
        queue.popleft()
        queue.append(rid)
    t2 = time.perf_counter()
    return (t1 - t0) / pops * 1e6, (t2 - t1) / pops * 1e6


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
            times = args.repeat // (100 if name == "_live" else 1)  # the line's search reads all W requests
            samples.setdefault(f"{name} derived", []).append(per_call(derive, times))
    step = statistics.median(samples["step"])
    print(f"state: {len(s.running)} running, {len(s.waiting)} waiting; median step {step:.1f} us; each read and "
          "derivation: the fastest of its rounds")
    print(f"{'field':<12} {'read us':>9} {'derived us':>11} {'derived / step':>15}")
    for name in pairs(s):
        read, derived = min(samples[f"{name} read"]), min(samples[f"{name} derived"])  # the least disturbed round
        print(f"{name:<12} {read:>9.2f} {derived:>11.2f} {derived / step:>14.2f}x")
    pops = [line_pops(args.waiting, 5 * args.waiting) for _ in range(3)]
    as_dict, as_deque = statistics.median(p[0] for p in pops), statistics.median(p[1] for p in pops)
    print(f"the line by rid (a dict), one admission under churn: {as_dict:.2f} us, against {as_deque:.2f} us "
          f"as a deque ({as_dict / step:.2f}x a step)")


if __name__ == "__main__":
    main()
