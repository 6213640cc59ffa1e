"""Running `crosshair check` on the contracts (or the planted copy) under a time limit per condition.

CrossHair runs in a subprocess: its symbolic execution patches the interpreter, and a separate
process keeps that out of the caller. Exit 0 means no counterexample was found within the limit,
never that a contract was proved."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass

CONTRACTS = "stallfree.proofs.contracts"
PLANTED = "stallfree.proofs.planted"
PER_CONDITION_S = 4.0  # CPU seconds CrossHair spends on each contract
NUM_CONTRACTS = {CONTRACTS: 3, PLANTED: 1}


@dataclass(frozen=True, slots=True)
class CrossHairResult:
    target: str
    found: tuple[str, ...]  # counterexamples, as CrossHair prints them
    seconds: float
    error: str | None = None  # CrossHair failed to run (exit 2): the check did not happen

    @property
    def holds(self) -> bool:
        return self.error is None and not self.found


def check(target: str = CONTRACTS, per_condition_s: float = PER_CONDITION_S) -> CrossHairResult:
    began = time.perf_counter()
    command = [sys.executable, "-m", "crosshair", "check", "--analysis_kind=asserts",
               f"--per_condition_timeout={per_condition_s}", target]
    wall_limit = 60 + 10 * per_condition_s * NUM_CONTRACTS.get(target, 4)  # CPU limit, plus a loaded machine
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=wall_limit, check=False)
    except subprocess.TimeoutExpired:
        return CrossHairResult(target, (), time.perf_counter() - began, f"no answer within {wall_limit:.0f} s")
    seconds = time.perf_counter() - began
    found = tuple(line for line in done.stdout.splitlines() if ": error:" in line)
    if done.returncode not in (0, 1) or (done.returncode == 1 and not found):
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return CrossHairResult(target, found, seconds, f"crosshair exited {done.returncode}: {' | '.join(tail)}")
    return CrossHairResult(target, found, seconds)
