"""The monitor's cost against the size of a step and of a run, side by side in one run:

- one step that admits N requests (every rule checked, FCFS among them): seconds per N, and the
  ratio to the smallest N (linear: the ratio follows N);
- `stallfree trace --workload` of N requests, no picture (`--quiet`): seconds per N and the ratio.

    python benchmarks/rule_checks_scale.py [--admissions 10000,40000] [--requests 5000,20000,100000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stallfree.reference import Scheduler
from stallfree.spec import Config, Monitor


def one_step(n: int) -> float:
    monitor = Monitor(Scheduler(token_budget=n, max_seqs=n, kv_tokens=2 * n), Config(n, n, 2 * n))
    for rid in range(n):
        monitor.add(rid, 1, 1)
    began = time.perf_counter()
    monitor.step()
    return time.perf_counter() - began


def trace(n: int, where: Path) -> float:
    requests = [{"rid": i, "prompt_len": 4, "max_new": 2, "arrival_step": 0} for i in range(n)]
    path = where / f"w{n}.json"
    path.write_text(json.dumps({"config": {"token_budget": 64, "max_seqs": 16, "kv_tokens": 10**6},
                                "requests": requests}))
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "stallfree", "trace", "--workload", str(path), "--quiet"], check=True,
                   capture_output=True)
    return time.perf_counter() - began


def show(title: str, sizes: list[int], seconds: list[float]) -> None:
    print(title)
    for n, s in zip(sizes, seconds, strict=True):
        print(f"  {n:>9,}  {s:8.2f} s  x{s / seconds[0]:6.1f} time for x{n / sizes[0]:.1f} size")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--admissions", default="10000,40000")
    parser.add_argument("--requests", default="5000,20000,100000")
    args = parser.parse_args()
    admissions = [int(x) for x in args.admissions.split(",")]
    show("one step admitting N requests, every rule checked", admissions, [one_step(n) for n in admissions])
    requests = [int(x) for x in args.requests.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        show("stallfree trace --workload of N requests, no picture", requests, [trace(n, Path(tmp)) for n in requests])


if __name__ == "__main__":
    main()
