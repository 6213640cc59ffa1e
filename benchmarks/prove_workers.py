"""The CPU seconds of each worker of the default `stallfree prove` (no flags), as each says when it
ends (its subprocesses included), for N runs: the busiest worker's CPU is the critical path, the wall
time an idle machine with as many cores takes (give or take the start and the table). Also the run's
wall and CPU seconds and the load it ran at. Progress lines go to a terminal only, so stderr is a
pseudo-terminal here.

    python benchmarks/prove_workers.py [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time


def one() -> tuple[float, float, int, list[float]]:
    """(wall s, CPU s of the run and its workers, exit status, each worker's CPU s) of one prove."""
    ours, theirs = os.openpty()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "stallfree", "prove"], stdout=subprocess.DEVNULL, stderr=theirs)
    os.close(theirs)
    said = b""
    while True:
        try:
            chunk = os.read(ours, 65536)
        except OSError:  # the terminal's other end closed: the run is over
            break
        if not chunk:
            break
        said += chunk
    code = proc.wait()
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    os.close(ours)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    workers = [float(line.split(": ")[1].split()[0]) for line in said.decode(errors="replace").splitlines()
               if line.strip().startswith("proof worker ")]
    return wall, cpu, code, workers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for run in range(args.runs):
        load = os.getloadavg()[0]
        wall, cpu, code, workers = one()
        each = ", ".join(f"{w:.1f}" for w in workers)
        print(f"run {run + 1}: exit {code}, wall {wall:.1f} s, CPU {cpu:.1f} s, load {load:.1f} at the start; "
              f"workers' CPU {each} s; busiest {max(workers, default=0.0):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
