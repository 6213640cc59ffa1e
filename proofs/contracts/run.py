"""Running `crosshair check` on the contracts (or their planted copies) under a limit per condition.

CrossHair runs in a subprocess: its symbolic execution patches the interpreter, and a separate
process keeps that out of the caller. Exit 0 means no counterexample was found within the limit,
never that a contract was proved.

CrossHair's search is seeded (its own random source and Z3's are fixed), and the subprocess's string
hashing is too (PYTHONHASHSEED), so a search bounded by a number of iterations finds the same thing
on any machine at any load. The planted copies' modules bound each condition so
(`# crosshair: max_iterations=...`, PLANTED_ITERATIONS); their CPU seconds (PLANTED_S) are set far
above what those iterations take and only stop a runaway. The reference's contracts are bounded by
CPU seconds (PER_CONDITION_S): there the search finds nothing at any depth, so the verdict, not
refuted, is the same at any load."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

from stallfree.spec.verdict import Verdict

from .planted_contracts import TARGETS

CONTRACTS = "stallfree.proofs.contracts.contracts"
PLANTED = "stallfree.proofs.contracts.planted_contracts"  # every planted copy, one function per rule
PER_CONDITION_S = 4.0  # CPU seconds CrossHair spends on each contract
PLANTED_ITERATIONS = 1000  # each planted bug is found within 283 (DECODE-FIRST; docs/proofs.md)
PLANTED_S = 300.0  # CPU seconds on a planted copy: a runaway guard; PLANTED_ITERATIONS is the bound
NUM_CONTRACTS = {CONTRACTS: 4, PLANTED: len(TARGETS)}  # a single function's target counts one
WALL_SLACK_S = 60  # start-up, plus CPU time stretched by a loaded machine
CALL = re.compile(r"when calling (?P<name>\w+)\((?P<args>[-\d, ]*)\)")


@dataclass(frozen=True, slots=True)
class CrossHairResult:
    target: str
    found: tuple[str, ...]  # counterexamples, as CrossHair prints them
    seconds: float
    error: str | None = None  # CrossHair failed to run (exit 2): the check did not happen

    @property
    def verdict(self) -> Verdict:
        """unknown if CrossHair did not run, BROKEN if it found a counterexample, else not refuted:
        searched within the limit, nothing found, nothing proved (CrossHair never proves)."""
        if self.error is not None:
            return Verdict.UNKNOWN
        return Verdict.BROKEN if self.found else Verdict.NOT_REFUTED

    def calls(self, function: str) -> list[tuple[int, ...]]:
        """The arguments of each counterexample CrossHair found to `function`."""
        return [call for name, call in map(call_of, self.found) if name == function]


def call_of(line: str) -> tuple[str | None, tuple[int, ...]]:
    """The function and int arguments a counterexample line names ('... when calling f(1, 2)')."""
    match = CALL.search(line)
    if match is None:
        return None, ()
    return match["name"], tuple(int(a) for a in match["args"].split(",") if a.strip())


def check(target: str = CONTRACTS, per_condition_s: float = PER_CONDITION_S) -> CrossHairResult:
    began = time.perf_counter()
    command = [sys.executable, "-m", "crosshair", "check", "--analysis_kind=asserts",
               f"--per_condition_timeout={per_condition_s}", target]
    wall_limit = WALL_SLACK_S + 10 * per_condition_s * NUM_CONTRACTS.get(target, 1)
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same search on every run (see above)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=wall_limit, check=False, env=env)
    except subprocess.TimeoutExpired:
        return CrossHairResult(target, (), time.perf_counter() - began, f"no answer within {wall_limit:.0f} s")
    seconds = time.perf_counter() - began
    found = tuple(line for line in done.stdout.splitlines() if ": error:" in line)
    if done.returncode not in (0, 1) or (done.returncode == 1 and not found):
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return CrossHairResult(target, found, seconds, f"crosshair exited {done.returncode}: {' | '.join(tail)}")
    return CrossHairResult(target, found, seconds)
