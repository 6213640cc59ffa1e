"""Schedulers that starve a request while planning every step: the negative controls of the
per-request liveness bound (`stallfree.proofs.explicit.starvation`, the Z3 theorem LIVENESS). Each
keeps PROGRESS (no step with work pending is empty), so termination once arrivals stop holds for
it; under arrivals that never stop, a request waits forever."""

from __future__ import annotations

from stallfree.variants.stepwise import Stepwise, StepwiseSequence


class LifoAdmission(Stepwise):
    """Admits the newest waiting request first: under a steady stream, an old one is never admitted."""

    breaks = "FCFS"

    def next_admission(self) -> StepwiseSequence | None:
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


class IdleOneInThree(Stepwise):
    """Plans nothing every third step, by its own step counter (hidden state: `idle_phase`), and is the
    reference otherwise: every request still finishes, at 2,2,8,2,2,2 each within W + w steps (the work
    ahead of it plus its own), but not within the per-request bound in steps, floor(P / B) + D."""

    breaks = "PROGRESS"
    PERIOD = 3

    def schedule(self) -> list[tuple[int, int]]:
        if self.num_steps % self.PERIOD == self.PERIOD - 1:
            return []
        return super().schedule()


def idle_phase(scheduler: IdleOneInThree) -> int:
    """IdleOneInThree's hidden state: where it is in its period, which decides when it idles."""
    return scheduler.num_steps % IdleOneInThree.PERIOD


STARVING: dict[str, type[Stepwise]] = {cls.__name__: cls for cls in (LifoAdmission, StarveLongPrompt)}
# The controls of the bound in steps alone: each keeps W + w (LIVENESS's weaker bound).
SLOW: dict[str, type[Stepwise]] = {IdleOneInThree.__name__: IdleOneInThree}
