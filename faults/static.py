"""Negative controls of the static-batching contract (`stallfree.spec.variants.static`), one per rule of its own."""

from __future__ import annotations

from stallfree.variants import StaticBatching, Stepwise


class JoinsRunningBatch(Stepwise):
    """Continuous batching under the static contract: admits while a batch runs (breaks BATCH-CLOSED)."""


class OnePerBatch(StaticBatching):
    """Forms each batch of one request, however many fit beside it (breaks BATCH-CONSERVING)."""

    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        if self.running or not self.waiting or not self.fits(self.waiting[0]):
            return left
        return self.start(self.waiting[0], plan, left)


STATIC_FAULTS = {"BATCH-CLOSED": JoinsRunningBatch, "BATCH-CONSERVING": OnePerBatch}
