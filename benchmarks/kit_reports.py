"""A digest of each report of 17 kit runs (its JSON and its text, the seconds left out) and of every
workload, rule list and outcome each sent through the sandbox: two trees that print the same lines
explore and judge alike (run it in each; a change meant to speed the kit up must leave them the same).

    python benchmarks/kit_reports.py [TARGET-SUBSTRING ...]
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from stallfree.conformance.isolation import sandbox as sb
from stallfree.conformance.isolation.outcome import Outcome
from stallfree.conformance.kit import conform
from stallfree.conformance.kit.report import render
from stallfree.spec import Workload

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "examples"))
REAL_RUN = sb.Sandbox.run
RUNS: list[tuple[str, dict[str, Any]]] = [
    ("stallfree.reference:Scheduler", {}),
    ("stallfree.faults.catalog:SkipAhead", {"examples": 6}),
    ("prefill_first:PrefillFirst", {"examples": 6}),
    ("skip_ahead:SkipAhead", {"examples": 6}),
    ("stallfree.faults.catalog:OvercommitKV", {"rules": ["KV"], "examples": 4}),
    ("stallfree.faults.catalog:AcceptNeverFit", {"rules": ["NEVER-FIT"], "examples": 4}),
    ("stallfree.faults.catalog:PlansCancelled", {"rules": ["CANCEL"], "examples": 4}),
    ("stallfree.faults.catalog:PeriodicStall", {"rules": ["PROGRESS"], "examples": 4}),
    ("stallfree.faults.catalog:DoubleFirstToken", {"examples": 4}),
    ("stallfree.faults.paged:small", {"profile": "paged", "examples": 5, "budget": 4}),
    ("stallfree.faults.paged:PreemptOldest", {"profile": "paged", "examples": 5, "budget": 4}),
    ("stallfree.prefix.faults:small", {"profile": "prefix", "examples": 5, "budget": 4}),
    ("stallfree.variants.priority:Prioritized", {"profile": "aging", "examples": 4}),
    ("stallfree.faults.priority:NoAging", {"profile": "aging", "examples": 4}),
    ("stallfree.variants.rotating:Rotating", {"profile": "rotation", "examples": 4}),
    ("stallfree.variants.aligned:Aligned", {"profile": "aligned", "examples": 4}),
    ("stallfree.variants.static:StaticBatching", {"profile": "static", "examples": 4}),
]
def main() -> None:
    only = sys.argv[1:]
    trail = hashlib.sha256()

    def run(self: sb.Sandbox, workload: Workload, rules: list[str], known: list[str] | None = None) -> Outcome:
        outcome = REAL_RUN(self, workload, rules, known)
        facts = [workload.to_json(), rules, known, outcome.to_json()]
        trail.update(json.dumps(facts, sort_keys=True, default=repr).encode())
        return outcome

    sb.Sandbox.run = run  # type: ignore[method-assign]
    for target, kwargs in RUNS:
        if only and not any(o in target for o in only):
            continue
        trail = hashlib.sha256()
        report = conform(target, **kwargs)
        data = report.to_json()
        data.pop("seconds")
        text = [line for i, line in enumerate(render(report).split("\n")) if i != 1]  # line 2 holds the seconds
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode() + "\n".join(text).encode()).hexdigest()
        print(f"{target} {kwargs}: runs {report.runs} steps {report.steps} broken {sorted(report.counterexamples)} "
              f"report {digest[:16]} trail {trail.hexdigest()[:16]}", flush=True)


if __name__ == "__main__":
    main()
