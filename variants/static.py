"""Static batching: the baseline continuous batching is measured against (a teaching policy).

A batch is formed only when nothing runs, and runs until every request in it has finished: the
requests that arrive meanwhile wait for the whole batch, however much budget goes unused. Inside the
batch it spends the budget as the contract's policy does. Its own contract is `stallfree.spec.variants.static`
(`--contract static`, the default for `--scheduler static`); judged under the reference's, it breaks
WORK-CONSERVING, and only it.
"""

from __future__ import annotations

from .stepwise import Stepwise


class StaticBatching(Stepwise):
    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        if self.running:  # the phases before admission leave the running set as the step found it
            return left
        return super().admit(plan, left)
