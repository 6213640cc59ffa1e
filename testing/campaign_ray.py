"""A campaign's batches as Ray tasks, on this machine or a cluster: the same seeds, the same batches
and the same verdicts as the local pool (`stallfree.testing.campaign.run`).

Each batch of BATCH simulations is one task running `run_batch`, the local pool's own function. A task
whose worker dies (killed, or its node lost) is run again by Ray, up to MAX_RERUNS times, from its
first simulation: a batch's simulations are counted only from the one run that answered. The driver
takes one result per batch, in simulation order, and stops at the first violation, as the local pool
does; so a batch is never skipped and never counted twice. A batch whose worker dies on every try (a
scheduler that ends its process) is a CRASH; one that takes longer than the batch timeout, a TIMEOUT.

Needs the `ray` extra (`pip install 'stallfree[ray]'`); the rest of stallfree never imports ray. A
cluster's nodes need stallfree (and the scheduler's module) installed, as the driver has it.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from stallfree.spec.verdict import TIMEOUT

from .campaign import CRASHED, Campaign, CampaignStatus, Tally, Violation, batches, collect, run_batch

MAX_RERUNS = 3  # a batch whose worker dies is run again this often before it is a CRASH
CONNECT_TIMEOUT = 5.0  # seconds to reach a cluster's address before it is refused (Ray's own wait is minutes)


class RayUnavailable(ValueError):
    """Ray is not installed here, or the cluster at the address given cannot be reached."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError as error:
        why = f"ray is not installed ({error}); install the extra: pip install 'stallfree[ray]'"
        raise RayUnavailable(why) from None
    return ray


def check_reachable(address: str) -> None:
    """Refuse an address with nothing listening, within CONNECT_TIMEOUT: Ray itself waits for minutes,
    then ends the process. 'auto' and forms Ray parses itself are left to Ray, which answers at once."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as error:
        raise RayUnavailable(f"no Ray cluster answers at {host}:{port} ({error.strerror or error})") from None


@dataclass(slots=True)
class RayRunner:
    """A connection to Ray: a local instance of `workers` CPUs, or the cluster at `address`."""

    address: str | None = None
    workers: int = 1
    started: bool = False  # whether this runner connected (and so disconnects), or found Ray connected

    def connect(self) -> RayRunner:
        """Connect, unless this process is connected to Ray already: then that connection is used as it is."""
        ray = import_ray()
        if ray.is_initialized():
            return self
        if self.address is not None:
            check_reachable(self.address)
        options: dict[str, Any] = {"num_cpus": self.workers} if self.address is None else {"address": self.address}
        try:
            ray.init(**options, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
        except SystemExit:  # what ray.init does when something listens at the address but no Ray answers
            raise RayUnavailable(f"no Ray cluster answered at {self.address}") from None
        except (ValueError, ConnectionError, RuntimeError) as error:
            raise RayUnavailable(f"Ray could not connect: {error}") from None
        self.started = True
        return self

    @property
    def num_workers(self) -> int:
        """CPUs of the cluster: batches that run at once (each task takes one CPU)."""
        return int(import_ray().cluster_resources().get("CPU", 0))

    def close(self) -> None:
        ray = import_ray()
        if self.started and ray.is_initialized():
            ray.shutdown()  # a local instance stops; a cluster's driver disconnects, the cluster stays up
        self.started = False

    def run(self, campaign: Campaign, on_progress: Callable[[CampaignStatus], None] | None = None) -> Tally:
        """`campaign` on Ray: every batch submitted, results merged in simulation order up to the first
        violation, as `stallfree.testing.campaign.run` merges them; batches still due are cancelled."""
        ray = import_ray()
        remote_batch = ray.remote(num_cpus=1, max_retries=MAX_RERUNS, retry_exceptions=False)(run_batch)
        shared = ray.put(campaign)
        spans = [(first, last) for _, first, last in batches(campaign)]
        refs = [remote_batch.remote(shared, first, last) for first, last in spans]
        try:
            return collect(_results(ray, campaign, refs, spans), CampaignStatus(Tally(), campaign.sims), on_progress)
        finally:  # after a violation, a timeout or Ctrl-C: batches still due are stopped, never merged
            _, due = ray.wait(refs, num_returns=len(refs), timeout=0)
            for ref in due:
                ray.cancel(ref, force=True)


def _results(ray: Any, campaign: Campaign, refs: list[Any], spans: list[tuple[int, int]]) -> Iterator[Tally]:
    for ref, (first, last) in zip(refs, spans, strict=True):
        try:
            yield ray.get(ref, timeout=campaign.batch_timeout)
        except ray.exceptions.GetTimeoutError:
            message = (f"simulations {first} to {last - 1} did not finish within {campaign.batch_timeout:g} s "
                       f"(a call that does not return?); the workload is simulation {first}'s")
            yield Tally(violation=Violation(first, TIMEOUT, None, message, campaign.workload(first).dumps()))
            return
        except ray.exceptions.RayError as error:
            message = (f"{_failure(ray, error)} while running simulations {first} to {last - 1}; "
                       f"the workload is simulation {first}'s")
            yield Tally(violation=Violation(first, CRASHED, None, message, campaign.workload(first).dumps()))
            return


def _failure(ray: Any, error: Exception) -> str:
    """What became of a batch's task, in words: its worker died on every try, or it raised past run_batch."""
    if isinstance(error, ray.exceptions.WorkerCrashedError | ray.exceptions.NodeDiedError):
        return (f"a Ray worker died on each of {MAX_RERUNS + 1} tries ({type(error).__name__}: did the scheduler "
                "call os._exit, or were the workers killed?)")
    first_line = (str(error).strip().splitlines() or [""])[-1]
    return f"the Ray task failed ({type(error).__name__}: {first_line[:200]})"
