"""Launching a run: one process per rank (world size 1 runs in this process), watched so that a
rank that raises, dies or hangs stops every rank within seconds, and the cause is reported.

A hung rank is found by progress (progress.py): each rank stamps the step it entered and each
collective it enters; when no stamp moves for a few seconds, the rank that entered fewer
collectives than every peer is the one that fell behind, and it alone is blamed. Each rank also
beats a heartbeat from a thread of its own, the backstop for a rank frozen before its first
collective (stopped while loading weights). Each rank watches the launcher: when it goes (even by
SIGKILL), every rank ends.
"""

from __future__ import annotations

import os
import queue
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

from stallfree.spec.utils.alarm import Alarm

from ..engine.executor import StepRecord
from ..engine.job import JobResult
from ..layers.group import Group
from ..layers.progress import Progress, StallWatch
from ..models.model import Transformer
from .runspec import RunSpec

POLL_S = 0.2  # how often the launcher looks at its ranks
STOP_GRACE_S = 2.0  # after SIGTERM, how long a rank gets before SIGKILL
CAUSE_WAIT_S = 1.0  # after a failure, how long to gather every rank's account before blaming one
HEARTBEAT_S = 0.25  # how often each rank beats
HUNG_S = 30.0  # no heartbeat this long: frozen (the progress stamps name a stalled rank sooner)
STARTUP_S = 120.0  # before its first beat a rank is importing torch and loading weights


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
class LaunchResult:
    results: list[JobResult] = field(default_factory=list)
    wall_s: float = 0.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


OnStep = Callable[[StepRecord], None]


def timed_out(timeout_s: float) -> TimeoutError:
    return TimeoutError(f"the run took longer than {timeout_s:g} s; all ranks stopped")


def alarm(timeout_s: float | None) -> Alarm:
    """Raise TimeoutError in this (main) thread once `timeout_s` has passed; elsewhere, or without
    a limit, nothing (signals reach the main thread only). An alarm already pending (a test
    runner's) is left to fire first if it is due sooner, and re-armed with its remaining time after."""
    if timeout_s is None:
        return Alarm(None, TimeoutError)
    return Alarm(timeout_s, lambda: timed_out(timeout_s), outer_first=True)


def run_local(spec: RunSpec, model: Transformer | None = None, threads: int | None = 1,
              timeout_s: float | None = None, on_step: OnStep | None = None) -> LaunchResult:
    """World size 1, in this process (on `model` if given: it must be `spec.build(Group())`).

    `threads`: torch threads for this process (None leaves the setting alone). One by default, as
    for every rank: on a shared machine OpenMP threads spin while they wait for a core, and two
    threads ran 2-10x slower than one on the 2-core machine this was written on. `timeout_s`
    holds here too (a SIGALRM in the main thread)."""
    import torch

    from .worker import lead

    if threads is not None:
        torch.set_num_threads(threads)
    start = time.perf_counter()
    with alarm(timeout_s):
        model = spec.build(Group()) if model is None else model
        results: list[JobResult] = []
        for job in spec.jobs:
            results.append(lead(spec, Group(), model, job.replaying(results[-1] if results else None), on_step))
    return LaunchResult(results, time.perf_counter() - start)


def launch(spec: RunSpec, timeout_s: float | None = None, threads: int | None = 1,
           on_step: OnStep | None = None) -> LaunchResult:
    """Run `spec` on `spec.tp` rank processes. Raises RankFailure (all ranks stopped) if one fails
    or hangs, TimeoutError (all ranks stopped) if the run outlasts `timeout_s`. `on_step` sees each
    step's record on the launcher's side as rank 0 finishes the step."""
    if spec.tp == 1:
        return run_local(spec, threads=threads, timeout_s=timeout_s, on_step=on_step)
    import torch.multiprocessing as mp

    from .worker import rank_main

    start = time.perf_counter()
    ctx = mp.get_context("spawn")
    messages = ctx.Queue()
    beats = ctx.Array("d", spec.tp, lock=False)  # each rank's last heartbeat (time.time()); 0 before the first
    progress = Progress.shared(ctx, spec.tp)
    port = free_port()
    procs = [ctx.Process(target=rank_main, args=(r, spec, port, messages, beats, os.getpid(), on_step is not None,
                                                 progress.stamps), daemon=True) for r in range(spec.tp)]
    for p in procs:
        p.start()
    results: dict[int, JobResult] = {}
    done: set[int] = set()
    try:
        watched = Watched(results, done, beats, on_step, StallWatch(progress, spec.tp))
        return watch(spec, procs, messages, watched, start, timeout_s)
    except RankFailure as failure:
        stop_all(procs)
        failure.stopped_at = time.time()
        failure.results = [results[i] for i in sorted(results)]
        raise
    finally:
        stop_all(procs)


@dataclass(slots=True)
class Watched:
    """What the launcher gathers from its ranks while it watches them."""

    results: dict[int, JobResult]
    done: set[int]
    beats: Any  # shared array of each rank's last heartbeat
    on_step: OnStep | None
    stalls: StallWatch
    failures: dict[int, str] = field(default_factory=dict)


def watch(spec: RunSpec, procs: list[Any], messages: Any, w: Watched, start: float,
          timeout_s: float | None) -> LaunchResult:
    """Wait for every rank to finish; raise RankFailure as soon as one fails or hangs."""
    launched_at = time.time()
    while len(w.done) < spec.tp:
        drain(messages, w)
        if w.failures or any(p.exitcode not in (None, 0) for p in procs):
            raise root_cause(procs, messages, w)
        behind = w.stalls.behind()
        if behind is not None:
            raise RankFailure(*behind)
        hung = hung_rank(procs, w.beats, launched_at)
        if hung is not None:
            raise hung
        if timeout_s is not None and time.perf_counter() - start > timeout_s:
            raise timed_out(timeout_s)
        wait([p.sentinel for p in procs], timeout=POLL_S)
    return LaunchResult([w.results[i] for i in sorted(w.results)], time.perf_counter() - start)


def hung_rank(procs: list[Any], beats: Any, launched_at: float) -> RankFailure | None:
    """The first live rank whose heartbeat stopped (HUNG_S; STARTUP_S before its first beat)."""
    now = time.time()
    for rank, p in enumerate(procs):
        last = beats[rank]
        silent = now - (last or launched_at)
        if p.is_alive() and silent > (HUNG_S if last else STARTUP_S):
            return RankFailure(rank, f"stopped responding: no heartbeat for {silent:.1f} s (last at {last:.3f}; "
                                     "the process is stopped or hung)")
    return None


def drain(messages: Any, w: Watched) -> None:
    """Take every report waiting: steps, results, ranks done, ranks' error reports (tracebacks)."""
    while True:
        try:
            message = messages.get_nowait()
        except queue.Empty:
            return
        if message[0] == "step":
            if w.on_step is not None:
                w.on_step(message[1])
        elif message[0] == "result":
            w.results[message[1]] = message[2]
        elif message[0] == "done":
            w.done.add(message[1])
        else:
            w.failures.setdefault(message[1], message[2])


# Words of an error that only reports a peer's failure: a collective that lost its partner.
CONSEQUENCE = ("by peer", "Connection closed", "Connection reset", "remote worker", "Timed out", "timed out")


def root_cause(procs: list[Any], messages: Any, w: Watched) -> RankFailure:
    """Once one rank fails the others soon fail too, their collectives cut off. Gather every account
    for a moment, then blame the rank that failed on its own: an error that is not a lost peer, else
    a rank that died without a word, else the first report."""
    deadline = time.perf_counter() + CAUSE_WAIT_S
    while time.perf_counter() < deadline:
        drain(messages, w)
        time.sleep(0.05)
    failures = w.failures
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
