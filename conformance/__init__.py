"""The conformance kit: check any scheduler, or any engine's trace, against the rules.

`conform(target)` explores a scheduler (MODULE:FACTORY, run in a worker process) with generated
workloads and shrinks each broken rule to a minimal workload; `check_workload` replays one workload
in-process (what pasted counterexamples call); `conformance_tests` makes one pytest test per rule.
`conform` needs Hypothesis (the `conform` extra); `check_workload` and the trace checker need only
the standard library.
"""

from __future__ import annotations

from typing import Any

from .kit.profiles import PROFILES, checked_rules
from .kit.replay import check_workload

__all__ = ["PROFILES", "check_workload", "checked_rules", "conform", "conformance_tests"]


def conform(*args: Any, **kwargs: Any) -> Any:
    """See `stallfree.conformance.kit.conform` (imported on first use: it needs Hypothesis)."""
    from .kit.check import conform as run

    return run(*args, **kwargs)


def conformance_tests(*args: Any, **kwargs: Any) -> Any:
    """See `stallfree.conformance.plugin.conformance_tests` (imported on first use: it needs pytest)."""
    from .plugin import conformance_tests as make

    return make(*args, **kwargs)
