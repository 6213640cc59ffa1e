"""Paged scheduler with stops and cancels: the memory and the step time of a long run.

The soak of benchmarks/reference_lifecycle.py (N requests, default 2,000,000, through 256 slots, a
third stopping early, one in forty cancelled while waiting, a running one cancelled every tenth step)
through the paged scheduler on a pool that makes it preempt: 96 blocks of 16 tokens, no watermark,
while 256 running requests peak at up to 3 blocks each. Prints the RSS growth after warm-up (target < 5 MB:
memory bounded by what waits and runs), the step time in the first and last tenth of the run, and
the preemptions and recomputed tokens.

    python benchmarks/paged_lifecycle.py [--soak 2000000]
"""

from __future__ import annotations

import argparse
from typing import Any

from reference_lifecycle import NUM_RUNNING, soak

from stallfree.paged import Phase, Scheduler

BLOCK_SIZE = 16
NUM_BLOCKS = 96


def emits(p: Any, n: int) -> bool:
    """Whether the paged request of progress `p`, planned `n` tokens, emits a token in the step: a decode,
    or the chunk that completes its prefill (its prompt plus, after a preemption, what it emitted)."""
    return p.phase is Phase.READY or p.num_computed + n >= p.prompt_len + p.num_emitted


def make() -> Scheduler:
    return Scheduler(token_budget=512, max_seqs=NUM_RUNNING, kv_tokens=NUM_BLOCKS * BLOCK_SIZE,
                     block_size=BLOCK_SIZE, watermark=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--soak", type=int, default=2_000_000)
    args = parser.parse_args()
    s = soak(args.soak, make=make, emits=emits, name="paged")
    print(f"paged: {s.num_preemptions:,} preemptions, {s.num_recomputed:,} recomputed tokens; "
          f"{s.free_blocks} of {s.num_blocks} blocks free at the end")


if __name__ == "__main__":
    main()
