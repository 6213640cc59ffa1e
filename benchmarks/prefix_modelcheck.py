"""The prefix design's explicit model check at a few bounds: states, time, the verdict, and how often
the search met hits, evictions, shared blocks and preemptions (states reached by a step that hit,
that evicted, that preempted; states in which a block was held by two requests at once).

    python benchmarks/prefix_modelcheck.py
    python benchmarks/prefix_modelcheck.py --bound 3,2,8,2,4,3 --faults

A bound is budget,slots,kv_tokens,requests,max_prompt,max_new (2-token blocks; the faults' pool has a
watermark of one block). --faults checks every prefix fault at the same bound.
"""

from __future__ import annotations

import argparse

from stallfree.prefix import faults, small_blocks
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.prefix import CONTENTS, check

BOUNDS = ("2,2,6,2,4,2", "3,2,6,2,4,3", "3,2,8,2,4,3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bound", action="append", help="budget,slots,kv,requests,max_prompt,max_new")
    parser.add_argument("--all-contents", action="store_true", help=f"adds under every content of {CONTENTS}")
    parser.add_argument("--faults", action="store_true", help="also every prefix fault at each bound")
    args = parser.parse_args()
    contents = CONTENTS if args.all_contents else ((), ((0, 2),))
    targets = [small_blocks, faults.small]
    if args.faults:
        targets += [*faults.PREFIX_FAULTS, faults.EvictNewest]
    print(f"{'bound':<14} {'scheduler':<20} {'states':>8} {'s':>6}  {'verdict':<22} {'hit':>5} {'evict':>5} "
          f"{'shared':>6} {'preempt':>7}")
    for text in args.bound or BOUNDS:
        bound = Bounds(*(int(x) for x in text.split(",")))
        for target in targets:
            r = check(bound, factory=target, contents=contents)
            verdict = (f"BROKEN {r.counterexample.rule}" if r.counterexample else
                       "holds" if r.complete else "unknown (max_states)")
            name = target.__name__ if target is not faults.small else "small (faults' pool)"
            print(f"{text:<14} {name:<20} {r.states:>8,} {r.seconds:>6.1f}  {verdict:<22} {r.hit_states:>5} "
                  f"{r.evicting_states:>5} {r.shared_states:>6} {r.preempting_states:>7}", flush=True)


if __name__ == "__main__":
    main()
