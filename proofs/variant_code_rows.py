"""The variants' code theorems as rows of `stallfree prove --methods variants`: STEP, END, STOP-READY
and CANCEL of each variant, in both renderings (on `Stepwise` and on `Batched`: `smt.variant_state`
builds either's fields), under its own contract, at N = 2 requests; `--profile deep` adds N = 3.

The negative controls (a lifecycle or policy fault on a variant, each making its theorem read BROKEN)
are in tests/test_proofs_variant_code_lifecycle.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

N = 2  # requests per state in the default profile
DEEP_N = 3  # and with --profile deep, besides


def concrete(factory: Callable[..., Any], contract: Any) -> Callable[[], Any]:
    """A new variant of `factory` at the least budget `contract` allows (the theorems then set every
    field symbolically)."""
    return lambda: factory(token_budget=contract.min_budget, max_seqs=1, kv_tokens=1)


def variant_cases() -> list[tuple[str, Callable[[], Any], Any]]:
    """(name, a maker of the variant, its contract) for each variant of `variant_rows.cases`."""
    from .variant_rows import cases

    return [(name, concrete(factory, case.contract), case.contract) for case in cases()
            for name, factory in case.variants]


def code_rows(row: Callable[..., Any], say: Callable[[str], None], deep: bool = False) -> list[Any]:
    """One row per variant, theorem and N: holds, BROKEN with its path's values, or unknown naming the
    path it could not decide."""
    from .smt.variant_code import THEOREMS, prove

    out = []
    for name, make, contract in variant_cases():
        for theorem in THEOREMS:
            for n in (N, DEEP_N) if deep else (N,):
                say(f"variants: z3 {theorem.name} of {name}'s code under {contract.name} (states of at most {n})")
                o = prove(theorem, make, contract, n)
                out.append(row(theorem.name, f"Z3 symbolic execution ({name}, {contract.name})", f"N={n}",
                               o.verdict, o.seconds, o.detail))
    return out
