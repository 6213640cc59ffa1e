"""stallfree's own schedulers (a target in the `stallfree.` package: the reference, its faults,
policies and variants) judged in the kit's own process, as `trace` and `simulate` run them (hosting.py):
no worker and no pipe, about a sixth of a default run. Any other target runs in a worker
(`sandbox.Sandbox`), whatever it does; so does an own one where conform runs off the main thread, where
no signal reaches and the per-call alarm could not stop it.

The same runs as in the worker (`worker.run_one`, the same guard and per-call timeout), so the same
Outcomes. What differs is only what stallfree's own code never does: it is not watched from outside
(no per-run or import clock: it never hangs in C) and its prints are not kept. A Ctrl-C during a run is
the user's, not the target's: it stops the kit, as it does while the kit waits for a worker.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

from stallfree.spec import Workload, registry
from stallfree.spec.utils.loader import TargetError, load_target, split_target

from .hosting import OWN
from .outcome import Outcome
from .sandbox import DEFAULT_TIMEOUT, Sandbox
from .worker import capabilities, not_applicable, run_one


def sandbox_for(target: str, timeout: float = DEFAULT_TIMEOUT, run_timeout: float | None = None,
                contract: str | None = None, load_timeout: float | None = None) -> Sandbox | InProcess:
    """Where the kit plays `target`: in process if it is stallfree's own and the kit runs in the main
    thread, else in a worker process (`Sandbox`). Either is a context manager with `run`."""
    if target.startswith(OWN) and threading.current_thread() is threading.main_thread():
        return InProcess(target, timeout, contract)
    return Sandbox(target, timeout, run_timeout, contract, load_timeout)


class InProcess:
    """`target` loaded in this process; runs as a worker would (see the module's docstring)."""

    def __init__(self, target: str, timeout: float = DEFAULT_TIMEOUT, contract: str | None = None) -> None:
        split_target(target)  # a malformed target is an argument error
        self.target = target
        self.contract = contract
        self.timeout = timeout
        self.not_applicable: dict[str, str] = {}
        self.capabilities: frozenset[str] = frozenset()
        self._interrupted = False

    def __enter__(self) -> InProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        pass  # nothing to stop

    def start(self) -> None:
        """Import the target (TargetError if that fails, as from a worker) and read what it supports."""
        self.factory = load_target(self.target)
        try:
            self._contract = registry.contract(self.contract) if self.contract else registry.of(self.factory)
        except ValueError as error:
            raise TargetError(f"{self.target}: {error}") from None
        self.not_applicable = not_applicable(self.factory)
        self.capabilities = frozenset(capabilities(self.factory, self._contract.min_budget) or ())

    def run(self, workload: Workload, rules: list[str], known: list[str] | None = None) -> Outcome:
        """Play `workload`, checking `rules` (and `known`, see `worker.run_one`): its Outcome."""
        self._interrupted = False
        previous = signal.signal(signal.SIGINT, self._interrupt)
        try:
            outcome = run_one(self.factory, workload, rules, self.timeout, known or [], self._contract)
        finally:
            signal.signal(signal.SIGINT, previous)
        if self._interrupted:  # run_one reads whatever a call raised as the target's: this one is the user's
            raise KeyboardInterrupt
        return outcome

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        self._interrupted = True
        raise KeyboardInterrupt
