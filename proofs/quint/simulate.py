"""Quint's simulator on the spec: one `quint run` process, its verdict and its ITF traces.

A simulation samples random behaviours up to a number of steps; finding no violation is "not
refuted", never "holds". The TypeScript backend is used: the default one downloads a binary."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SPEC = HERE / "stallfree.qnt"
CHECKS = HERE / "checks.qnt"
CLI = HERE / "node_modules" / "@informalsystems" / "quint" / "dist" / "src" / "cli.js"
TIMEOUT_S = 600.0

# Every invariant of the spec, by rule ID (the Quint names write '-' as '_'; KV is KV_RULE there).
INVARIANTS: dict[str, str] = {
    "TYPES": "TypeOK", "BUDGET": "BUDGET", "ONE-ENTRY": "ONE_ENTRY", "SLOTS": "SLOTS", "KV": "KV_RULE",
    "PREFILL-ONCE": "PREFILL_ONCE", "FIRST-TOKEN": "FIRST_TOKEN", "TOKENS": "TOKENS", "CANCEL": "CANCEL",
    "NEVER-FIT": "NEVER_FIT", "PROGRESS": "PROGRESS_NONEMPTY", "FCFS": "FCFS", "DECODE-FIRST": "DECODE_FIRST",
    "PARTIAL-NEXT": "PARTIAL_NEXT", "WORK-CONSERVING": "WORK_CONSERVING",
    "READY-WITHIN-BUDGET": "READY_WITHIN_BUDGET", "ONE-PARTIAL": "ONE_PARTIAL",
}
CONTRACT = "contract"  # the module of checks.qnt with nothing planted
# The negative controls: the module of checks.qnt with a bug planted, for each rule it must break.
PLANTED: dict[str, str] = {
    "FCFS": "skip_ahead", "BUDGET": "free_decodes", "READY-WITHIN-BUDGET": "free_decodes",
    "PARTIAL-NEXT": "admit_first", "ONE-PARTIAL": "admit_first", "WORK-CONSERVING": "one_admission",
    "SLOTS": "ignore_slots", "KV": "stop_keeps_kv", "DECODE-FIRST": "partials_first",
    "NEVER-FIT": "accept_never_fit", "FIRST-TOKEN": "late_first_token",
}


class QuintMissing(RuntimeError):
    """node, or Quint under proofs/quint/node_modules, is not installed."""


@dataclass(slots=True)
class Simulation:
    module: str
    invariants: tuple[str, ...]  # rule IDs
    max_steps: int
    max_samples: int
    seed: int
    violated: bool
    seconds: float
    output: str
    traces: list[dict[str, Any]] = field(default_factory=list)  # ITF JSON, one per trace written

    @property
    def bound(self) -> str:
        return f"{self.max_samples} traces of {self.max_steps} steps, seed {self.seed}"


def quint_command() -> list[str]:
    node = shutil.which("node")
    if node is None or not CLI.is_file():
        raise QuintMissing(f"Quint is not installed: need node on PATH ({node}) and {CLI} "
                           f"(run `npm ci` in {HERE})")
    return [node, str(CLI)]


def constants(module: str) -> dict[str, int | str]:
    """The constants `module` of checks.qnt instantiates the spec with, read off its import."""
    text = CHECKS.read_text()
    found = re.search(r"module " + re.escape(module) + r" \{[^}]*?import stallfree\(([^)]*)\)", text)
    if found is None:
        raise ValueError(f"module {module!r}: not in {CHECKS.name}")
    values: dict[str, int | str] = {}
    for part in found.group(1).split(","):
        name, value = (p.strip() for p in part.split("="))
        values[name] = value.strip('"') if value.startswith('"') else int(value)
    return values


def simulate(module: str, rules: tuple[str, ...], max_steps: int, max_samples: int, seed: int,
             num_traces: int = 0) -> Simulation:
    """`quint run` of `module` of checks.qnt, checking the invariants of `rules` together; with
    `num_traces`, that many of its traces come back as ITF (a violation's trace first)."""
    unknown = [r for r in rules if r not in INVARIANTS]
    if unknown:
        raise ValueError(f"rules {unknown}: no Quint invariant (known: {', '.join(INVARIANTS)})")
    command = [*quint_command(), "run", str(CHECKS), "--main", module, "--backend", "typescript",
               "--max-steps", str(max_steps), "--max-samples", str(max_samples), "--seed", str(seed),
               "--invariants", *(INVARIANTS[r] for r in rules)]
    with tempfile.TemporaryDirectory() as tmp:
        if num_traces:
            command += ["--n-traces", str(num_traces), "--out-itf", str(Path(tmp) / "trace{seq}.itf.json")]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=HERE)
        seconds = time.perf_counter() - started
        traces = [json.loads(p.read_text()) for p in sorted(Path(tmp).glob("trace*.itf.json"),
                                                             key=lambda p: int(p.stem.split(".")[0][5:]))]
    output = done.stdout + done.stderr
    if "[violation]" in output:
        violated = True
    elif "[ok]" in output and done.returncode == 0:
        violated = False
    else:
        raise RuntimeError(f"quint run {module} failed (exit {done.returncode}): {output[-2000:]}")
    return Simulation(module, rules, max_steps, max_samples, seed, violated, seconds, output, traces)


# What the invariants leave out, by rule ID: each is stated in part only, and why.
PARTIAL: dict[str, str] = {
    "PROGRESS": "only its safety half (a plan is empty only when nothing waits or runs); 'every accepted request "
                "finishes' is a temporal property under weak fairness of the step, which Quint's simulator does "
                "not check and `quint verify` (Apalache, a download) cannot run here",
    "CANCEL": "cancels between steps only: a cancel while a plan is pending (it takes effect at complete()) and "
              "the refusal of an unknown rid are not modelled (the reference's refusal is checked elsewhere)",
    "KV": "as free KV = K less the running reservations after every action, so each comes back on the step its "
          "request ends; the model holds no reservation apart from its running request",
}
