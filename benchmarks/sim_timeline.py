"""Timeline: a 32,768-token prompt arrives while 64 streams decode (Llama 3.3 70B, 4 H100 SXM,
FP8), under each policy. Prints the prompt's time to first token and the worst gap the streams see,
next to the cost model's longest step; writes the timeline plot.

    python benchmarks/sim_timeline.py [--budget 2048] [--mode full] [--plot docs/img]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from stallfree.costs import Deployment, Roofline, gpu, model
from stallfree.sim.policies import COMPARED
from stallfree.sim.summary import MS
from stallfree.sim.timeline import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument("--mode", default="full", choices=("floor", "full"))
    parser.add_argument("--plot", type=Path, default=None, help="folder for timeline-<budget>.png")
    args = parser.parse_args()
    roofline = Roofline(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8"), args.mode)
    timelines = [run(policy, roofline, args.budget) for policy in COMPARED]
    print(f"budget {args.budget}, {args.mode} cost")
    print(f"{'policy':<15}{'TTFT of the long prompt ms':>28}{'worst stream gap ms':>21}{'longest step ms':>17}")
    for tl in timelines:
        print(f"{tl.policy:<15}{(tl.first_token - tl.arrival) * MS:>28.1f}{tl.worst_gap * MS:>21.1f}"
              f"{tl.result.longest_step * MS:>17.1f}")
    if args.plot is not None:
        from stallfree.sim.plots import plot_timeline

        print(f"plot: {plot_timeline(timelines, args.plot / f'timeline-{args.budget}.png')}")


if __name__ == "__main__":
    main()
