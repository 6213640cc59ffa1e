"""Breaks DECODE-FIRST and no other rule: partial prompts take the budget before the decodes."""

from stallfree.variants import Stepwise


class Scheduler(Stepwise):
    def phases(self):  # type: ignore[no-untyped-def]
        return (self.plan_partials, self.plan_decodes, self.admit)
