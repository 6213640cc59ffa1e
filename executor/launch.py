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
from .model import Transformer
from .runspec import RunSpec

POLL_S = 0.2  # how often the launcher looks at its ranks
STOP_GRACE_S = 2.0  # after SIGTERM, how long a rank gets before SIGKILL
CAUSE_WAIT_S = 1.0  # after a failure, how long to gather every rank's account before blaming one


class RankFailure(RuntimeError):
    """A rank raised or died; every rank has been stopped. `rank` and `cause` say which and why;
    `stopped_at` is when the last rank was gone (time.time()); `results` holds the jobs that
    finished before the failure."""

    def __init__(self, rank: int, cause: str) -> None:
        super().__init__(f"rank {rank} failed: {cause}")
        self.rank = rank
        self.cause = cause
        self.stopped_at: float | None = None
        self.results: list[JobResult] = []


@dataclass(slots=True)
class Outcome:
    results: list[JobResult] = field(default_factory=list)
    wall_s: float = 0.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_local(spec: RunSpec, model: Transformer | None = None, threads: int | None = 1) -> Outcome:
    """World size 1, in this process (on `model` if given: it must be `spec.build(Group())`).

    `threads`: torch threads for this process (None leaves the setting alone). One by default, as
    for every rank: on a shared machine OpenMP threads spin while they wait for a core, and two
    threads ran 2-10x slower than one on the 2-core machine this was written on."""
    import torch

    from .worker import lead

    if threads is not None:
        torch.set_num_threads(threads)
    start = time.perf_counter()
    model = spec.build(Group()) if model is None else model
    results = [lead(spec, Group(), model, job) for job in spec.jobs]
    return Outcome(results, time.perf_counter() - start)


def launch(spec: RunSpec, timeout_s: float | None = None, threads: int | None = 1) -> Outcome:
    """Run `spec` on `spec.tp` rank processes. Raises RankFailure (all ranks stopped) if one fails,
    TimeoutError (all ranks stopped) if the run outlasts `timeout_s`."""
    if spec.tp == 1:
        return run_local(spec, threads=threads)
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
        return watch(spec, procs, messages, results, done, start, timeout_s)
    except RankFailure as failure:
        stop_all(procs)
        failure.stopped_at = time.time()
        failure.results = [results[i] for i in sorted(results)]
        raise
    finally:
        stop_all(procs)


def watch(spec: RunSpec, procs: list[Any], messages: Any, results: dict[int, JobResult], done: set[int],
          start: float, timeout_s: float | None) -> Outcome:
    """Wait for every rank to finish; raise RankFailure as soon as one fails."""
    failures: dict[int, str] = {}
    while len(done) < spec.tp:
        drain(messages, results, done, failures)
        if failures or any(p.exitcode not in (None, 0) for p in procs):
            raise root_cause(procs, messages, results, done, failures)
        if timeout_s is not None and time.perf_counter() - start > timeout_s:
            raise TimeoutError(f"the run took longer than {timeout_s:.0f} s; all ranks stopped")
        wait([p.sentinel for p in procs], timeout=POLL_S)
    return Outcome([results[i] for i in sorted(results)], time.perf_counter() - start)


def drain(messages: Any, results: dict[int, JobResult], done: set[int], failures: dict[int, str]) -> None:
    """Take every report waiting: results, ranks done, ranks' error reports (their tracebacks)."""
    while True:
        try:
            message = messages.get_nowait()
        except queue.Empty:
            return
        if message[0] == "result":
            results[message[1]] = message[2]
        elif message[0] == "done":
            done.add(message[1])
        else:
            failures.setdefault(message[1], message[2])


# Words of an error that only reports a peer's failure: a collective that lost its partner.
CONSEQUENCE = ("by peer", "Connection closed", "Connection reset", "remote worker", "Timed out", "timed out")


def root_cause(procs: list[Any], messages: Any, results: dict[int, JobResult], done: set[int],
               failures: dict[int, str]) -> RankFailure:
    """Once one rank fails the others soon fail too, their collectives cut off. Gather every account
    for a moment, then blame the rank that failed on its own: an error that is not a lost peer, else
    a rank that died without a word, else the first report."""
    deadline = time.perf_counter() + CAUSE_WAIT_S
    while time.perf_counter() < deadline:
        drain(messages, results, done, failures)
        time.sleep(0.05)
    own = [r for r, text in failures.items() if not any(w in text for w in CONSEQUENCE)]
    if own:
        text = failures[own[0]]
        return _reported(own[0], text)
    for rank, p in enumerate(procs):
        if p.exitcode not in (None, 0) and rank not in failures:
            how = f"killed by signal {-p.exitcode}" if p.exitcode < 0 else f"exited with code {p.exitcode}"
            return RankFailure(rank, f"{how} without reporting an error")
    return _reported(*next(iter(failures.items())))


def _reported(rank: int, text: str) -> RankFailure:
    """A rank's own report: its last line (the error) first, then the whole of it."""
    return RankFailure(rank, text.strip().splitlines()[-1] + "\n" + text)


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
