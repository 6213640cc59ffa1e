"""Launching a run: one process per rank (world size 1 runs in this process), watched so that a
rank that raises or dies stops every rank within seconds, and the cause is reported."""

from __future__ import annotations

import queue
import socket
import sys
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

from .group import Group
from .job import JobResult
from .runspec import RunSpec

POLL_S = 0.2  # how often the launcher looks at its ranks
STOP_GRACE_S = 2.0  # after SIGTERM, how long a rank gets before SIGKILL
CAUSE_WAIT_S = 1.0  # how long to wait for a dead rank's own account of why


class RankFailure(RuntimeError):
    """A rank raised or died; every rank has been stopped. `rank` and `cause` say which and why."""

    def __init__(self, rank: int, cause: str) -> None:
        super().__init__(f"rank {rank} failed: {cause}")
        self.rank = rank
        self.cause = cause


@dataclass(slots=True)
class Outcome:
    results: list[JobResult] = field(default_factory=list)
    wall_s: float = 0.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_local(spec: RunSpec) -> Outcome:
    """World size 1, in this process."""
    import torch

    from .worker import lead

    start = time.perf_counter()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    model = spec.build(Group())
    results = [lead(spec, Group(), model, job) for job in spec.jobs]
    return Outcome(results, time.perf_counter() - start)


def launch(spec: RunSpec, timeout_s: float | None = None) -> Outcome:
    """Run `spec` on `spec.tp` rank processes. Raises RankFailure (all ranks stopped) if one fails,
    TimeoutError (all ranks stopped) if the run outlasts `timeout_s`."""
    if spec.tp == 1:
        return run_local(spec)
    import torch.multiprocessing as mp

    from .worker import rank_main

    start = time.perf_counter()
    ctx = mp.get_context("spawn")
    messages = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=rank_main, args=(r, spec, port, messages), daemon=True) for r in range(spec.tp)]
    for p in procs:
        p.start()
    results: dict[int, JobResult] = {}
    done: set[int] = set()
    try:
        while len(done) < spec.tp:
            drain(messages, results, done)
            if timeout_s is not None and time.perf_counter() - start > timeout_s:
                raise TimeoutError(f"the run took longer than {timeout_s:.0f} s; all ranks stopped")
            wait([p.sentinel for p in procs], timeout=POLL_S)
            for rank, p in enumerate(procs):
                if p.exitcode is not None and p.exitcode != 0:
                    raise RankFailure(rank, cause_of(messages, results, done, rank, p.exitcode))
                if p.exitcode == 0 and rank not in done:
                    drain(messages, results, done)
    finally:
        stop_all(procs)
    return Outcome([results[i] for i in sorted(results)], time.perf_counter() - start)


def drain(messages: Any, results: dict[int, JobResult], done: set[int]) -> list[tuple[Any, ...]]:
    errors = []
    while True:
        try:
            message = messages.get_nowait()
        except queue.Empty:
            return errors
        if message[0] == "result":
            results[message[1]] = message[2]
        elif message[0] == "done":
            done.add(message[1])
        else:
            errors.append(message)
            raise RankFailure(message[1], message[2].strip().splitlines()[-1] + "\n" + message[2])


def cause_of(messages: Any, results: dict[int, JobResult], done: set[int], rank: int, exitcode: int) -> str:
    """The dead rank's own traceback if it sent one, else its exit code."""
    deadline = time.perf_counter() + CAUSE_WAIT_S
    while time.perf_counter() < deadline:
        drain(messages, results, done)  # raises RankFailure with the traceback if one arrives
        time.sleep(0.05)
    how = f"killed by signal {-exitcode}" if exitcode < 0 else f"exited with code {exitcode}"
    return f"{how} without reporting an error"


def stop_all(procs: list[Any]) -> None:
    """Stop every rank still running: SIGTERM, then SIGKILL after a grace period."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.perf_counter() + STOP_GRACE_S
    for p in procs:
        p.join(timeout=max(0.0, deadline - time.perf_counter()))
        if p.is_alive():
            p.kill()
            p.join(timeout=STOP_GRACE_S)
    print("", end="", file=sys.stderr, flush=True)
