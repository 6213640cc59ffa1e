"""The conformance kit proper: explore a grid of configs with Hypothesis workloads (`explore`, `grid`,
`strategies`), shrink each broken rule to a minimal workload (`shrink`), report it as JSON and a
pasteable pytest test (`report`, `replay`), for the rules a profile claims (`profiles`). `conform`
is the entry point (in `check`).

The names of `check` are imported on first use: they need Hypothesis (the `conform` extra), and
`profiles` and `replay` must import without it."""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_EXAMPLES", "FAIL", "NOT_APPLICABLE", "NOT_CHECKED", "NOT_JUDGED", "NOT_SUPPORTED", "PASS",
           "Counterexample", "Report", "conform"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from importlib import import_module

        return getattr(import_module(".check", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
