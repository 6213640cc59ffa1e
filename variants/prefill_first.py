"""Chunked, but prefill first: prompts take the budget before the running streams do.

Each step gives the budget to the partial prompt, then to new admissions (first come first served),
and only what is left to decodes. Chunking keeps every step within the budget, but while prompt
tokens fill it the running streams get no token at all: a long prompt stalls them for all its chunks.
It breaks DECODE-FIRST by design.
"""

from __future__ import annotations

from .stepwise import Stepwise


class PrefillFirst(Stepwise):
    def phases(self):  # type: ignore[no-untyped-def]
        return (self.plan_partials, self.admit, self.plan_decodes)
