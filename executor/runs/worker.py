"""One rank of a run. Rank 0 owns the scheduler: it plays the jobs and broadcasts each step's flat
batch; the other ranks receive batches and run the same forward until told to stop."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

from stallfree.conformance.isolation.remote import CallHung
from stallfree.spec import registry
from stallfree.spec.contract import Contract
from stallfree.spec.utils.loader import guarded, load_target
from stallfree.spec.verdict import CRASH, TIMEOUT
from stallfree.view.raised import Witnessed

from ..engine.broken import VARIANTS
from ..engine.executor import Executor, StepRecord
from ..engine.job import Job, JobResult, drive
from ..layers.batch import HEADER_LEN, OP_RESET, OP_STEP, OP_STOP, FlatBatch, control
from ..layers.group import Group, join, leave
from ..layers.progress import Progress
from ..layers.sampler import Sampler
from ..models.model import Transformer
from .launch import HEARTBEAT_S
from .runspec import RunSpec


def rank_main(rank: int, spec: RunSpec, port: int, results: Any, beats: Any, launcher_pid: int,
              stream_steps: bool = False, stamps: Any = None) -> None:
    """Entry point of a rank process: reports ("step", StepRecord) from rank 0 when `stream_steps`,
    ("result", i, JobResult), ("done", rank) or ("error", rank, text)."""
    torch.set_num_threads(1)  # ranks share the cores: more threads each only contend
    end_with_launcher()
    threading.Thread(target=heartbeat, args=(rank, beats, launcher_pid), daemon=True).start()
    try:
        if spec.device == "cuda":
            torch.cuda.set_device(rank)  # before joining: nccl binds each rank to its current device
        progress = None if stamps is None else Progress(stamps)
        group = join(rank, spec.tp, port, "nccl" if spec.device == "cuda" else "gloo", spec.collective_timeout_s,
                     progress)
        model = spec.build(group)
        if group.is_leader:
            on_step = (lambda record: results.put(("step", record))) if stream_steps else None
            before: JobResult | None = None
            for i, job in enumerate(spec.jobs):
                before = lead(spec, group, model, job.replaying(before), on_step)
                results.put(("result", i, before))
            stop(spec, group)
        else:
            follow(spec, group, model)
        leave(group)
        results.put(("done", rank))
    except BaseException:
        text = traceback.format_exc()
        print(f"rank {rank}: {text}", file=sys.stderr, flush=True)
        results.put(("error", rank, text))
        results.close()
        results.join_thread()  # the report must be out before the process goes
        os._exit(1)  # do not wait on collectives or queues: the launcher stops the other ranks


def heartbeat(rank: int, beats: Any, launcher_pid: int) -> None:
    """Beat into shared memory until the process ends; end the process if the launcher is gone
    (where the parent-death signal below is not available)."""
    while True:
        beats[rank] = time.time()
        if os.getppid() != launcher_pid:
            os._exit(1)
        time.sleep(HEARTBEAT_S)


def end_with_launcher() -> None:
    """Linux: have the kernel SIGKILL this rank when the launcher dies (a stopped rank included)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def lead(spec: RunSpec, group: Group, model: Transformer, job: Job,
         on_step: Callable[[StepRecord], None] | None = None) -> JobResult:
    """Rank 0: play one job; the other ranks follow each step, then reset their caches."""
    from stallfree.conformance.isolation.hosting import close

    factory, design = scheduler_factory(job)
    witnessed = Witnessed(factory)
    try:
        return lead_with(spec, group, model, job, on_step, witnessed, design)
    finally:
        close(factory)  # the host and whatever the target left running in it


def scheduler_factory(job: Job) -> tuple[Callable[..., Any], Contract]:
    """The factory of `job.scheduler` and its design: stallfree's own in this process; any other in a
    host process of its own (`conformance/isolation/remote.py`), each call timed by `job.call_timeout`,
    as `trace` hosts it: the scheduler's code never runs beside the monitor, so it can neither patch
    the oracle nor outlast the watchdog."""
    from stallfree.conformance.isolation.hosting import hosted, load_raw

    raw = load_raw(job.scheduler, job.call_timeout, "--call-timeout")
    if hosted(raw):
        return raw, registry.contract(raw.design)  # type: ignore[attr-defined]
    return guarded(raw, job.scheduler), registry.of(raw)


def stopped_by(witnessed: Witnessed) -> Callable[[BaseException], tuple[str, str] | None]:
    """How a call into the scheduler ended the run: TIMEOUT (a hosted call did not answer) or CRASH (it
    raised, or its host died); None for an error that is not the scheduler's."""

    def read(error: BaseException) -> tuple[str, str] | None:
        if isinstance(error, CallHung):
            return TIMEOUT, str(error)
        crash = witnessed.crash(error) if isinstance(error, Exception) else None
        return None if crash is None else (CRASH, crash)

    return read


def lead_with(spec: RunSpec, group: Group, model: Transformer, job: Job,
              on_step: Callable[[StepRecord], None] | None, witnessed: Witnessed, design: Contract) -> JobResult:
    """`lead` on a scheduler made by `witnessed` (which keeps the call that raised), judged by `design`."""
    cfg = job.workload.config
    scheduler = witnessed(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
    monitor = design.watch(scheduler, cfg, job.monitor_rules)
    device = spec.device_for(group.rank)
    cls = VARIANTS[job.variant] if job.variant else load_target(design.executor)

    sent = 0

    def send(batch: FlatBatch) -> None:
        nonlocal sent
        group.stamp_step(sent)
        crash_if_due(job, group.rank, sent)
        sent += 1
        if group.world_size > 1:
            header, payload = batch.pack(OP_STEP)
            group.broadcast(header.to(device))
            group.broadcast(payload.to(device))

    executor = cls(model, monitor, Sampler(job.temperature, spec.seed), spec.seed, device, send, job.keep_logits,
                   {rid: list(tokens) for rid, tokens in job.prompts}, job.stop_token, dict(job.stop_after))
    result = drive(executor, job, on_step if job.stream else None, design, stopped_by(witnessed))
    result.design = design.name
    if group.world_size > 1:
        group.broadcast(control(OP_RESET).to(device))
    return result


def follow(spec: RunSpec, group: Group, model: Transformer) -> None:
    """Ranks 1..: run each broadcast batch until rank 0 says stop."""
    device = spec.device_for(group.rank)
    caches = model.new_caches(spec.jobs[0].workload.config.kv_tokens, device)
    job_index = batches = 0  # batches: received in the current job
    while True:
        header = group.broadcast(torch.zeros(HEADER_LEN, dtype=torch.int64, device=device)).cpu()
        op = int(header[0])
        if op == OP_STOP:
            return
        if op == OP_RESET:
            job_index, batches = job_index + 1, 0
            if job_index < len(spec.jobs):
                caches = model.new_caches(spec.jobs[job_index].workload.config.kv_tokens, device)
            continue
        group.stamp_step(batches)
        crash_if_due(spec.jobs[job_index], group.rank, batches)
        payload = group.broadcast(torch.zeros(int(header[1:].sum()), dtype=torch.int64, device=device))
        batch = FlatBatch.unpack(header, payload)
        if batch.poison_cells.numel():
            for cache in caches:
                cache.poison(batch.poison_cells)
        job = spec.jobs[job_index]
        model(batch, caches, VARIANTS[job.variant].plan_type if job.variant else Executor.plan_type)
        batches += 1


def stop(spec: RunSpec, group: Group) -> None:
    if group.world_size > 1:
        group.broadcast(control(OP_STOP).to(spec.device_for(group.rank)))


def crash_if_due(job: Job, rank: int, batch: int) -> None:
    """The injected fault of a launch test (or `--fault`): this rank raises, dies without a word,
    stops (SIGSTOP: alive, silent), or hangs inside the step (asleep: its heartbeat goes on, its
    progress does not) at the job's batch number `batch` (counting from 0)."""
    if job.crash is None or job.crash[0] != rank or job.crash[1] != batch:
        return
    if job.crash[2] == "exit":
        os._exit(3)
    if job.crash[2] == "hang":
        while True:
            time.sleep(HEARTBEAT_S)
    if job.crash[2] == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    raise RuntimeError(f"injected fault: rank {rank} raises at batch {batch} (at {time.time():.3f})")
