"""Schedulers that starve a request while planning every step: the negative controls of the
per-request liveness bound (`stallfree.proofs.explicit.starvation`, the Z3 theorem LIVENESS). Each
keeps PROGRESS (no step with work pending is empty), so termination once arrivals stop holds for
it; under arrivals that never stop, a request waits forever."""

from __future__ import annotations

from stallfree.variants.stepwise import Seq, Stepwise


class LifoAdmission(Stepwise):
    """Admits the newest waiting request first: under a steady stream, an old one is never admitted."""

    breaks = "FCFS"

    def next_admission(self) -> Seq | None:
        newest = self.waiting[-1]
        return newest if self.fits(newest) else None


class StarveLongPrompt(Stepwise):
    """Keeps first come first served among admissions, but admits new requests before a partial
    prompt longer than the budget gets its chunk ("short work first"): a stream of short requests
    keeps the long prompt from ever finishing its prefill."""

    breaks = "PARTIAL-NEXT"

    def phases(self):  # type: ignore[no-untyped-def]
        long = any(not seq.is_ready and seq.request.prompt_len > self.config.token_budget
                   for seq in self.running.values())
        if long:
            return (self.plan_decodes, self.admit, self.plan_partials)
        return super().phases()


STARVING: dict[str, type[Stepwise]] = {cls.__name__: cls for cls in (LifoAdmission, StarveLongPrompt)}
