"""`stallfree trace` as one table: the steps as they run, a refused add() where it happens, the
plan that broke a rule under the row of its step, and, to keep going, the same workload replayed
with the broken rules left unchecked, its table taken up where the last run stopped."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from stallfree.spec import RULE_IDS, Request, RuleViolation, Shadow, StepFacts, Workload, refusal, registry
from stallfree.view import Recording, StepView, record
from stallfree.view.record import Offer
from stallfree.view.table import broken_line, row

ACCEPTABLE = "the contract would accept it (NEVER-FIT not checked)"
StepPrice = Callable[[StepView], float]  # milliseconds of a step on the cost model


class Nondeterministic(Exception):
    """A replay planned differently from the run before it: the scheduler's plans depend on more
    than the workload, so the runs cannot be joined into one table."""


@dataclass(slots=True)
class Explained:
    recording: Recording  # the last run: with every rule broken before it left unchecked
    broken: list[RuleViolation] = field(default_factory=list)  # found in earlier runs, in order
    checked: tuple[str, ...] = RULE_IDS  # the rules the last run checked


def explain(
    workload: Workload,
    factory: Callable[..., Any],
    rules: Iterable[str] | None,
    name: str,
    out: Callable[[str], None],
    price: StepPrice | None = None,
    keep_going: bool = False,
    on_step: Callable[[StepView, StepFacts], None] | None = None,
    on_offer: Callable[[Offer], None] | None = None,
    keep: bool = False,
    contract: Any = None,
    on_cancel: Callable[..., None] | None = None,
) -> Explained:
    """Run `workload` and print its table with `out`; see the module doc. `keep`: keep every step in
    the recording, for the views (keeping going keeps them anyway, to compare each replay)."""
    checked = tuple(rules) if rules is not None else (contract or registry.RESERVATION).ids
    broken: list[RuleViolation] = []
    shown_steps = shown_offers = 0
    previous: Recording | None = None
    while True:
        recording = _run(workload, factory, checked, name, out, price, shown_steps, shown_offers, previous,
                         on_step, on_offer, keep or keep_going, contract, on_cancel)
        violation = recording.violation
        shown_steps, shown_offers = recording.num_steps, len(recording.offers)
        if violation is None or not keep_going or violation.rule not in checked:
            return Explained(recording, broken, checked)
        broken.append(violation)
        checked = tuple(r for r in checked if r != violation.rule)
        shown_steps = min(violation.step, recording.num_steps)  # steps count from 0: show the broken one again
        out(f"{'':>5}  (keeping going: replaying with {violation.rule} unchecked)")
        previous = recording


def _run(
    workload: Workload, factory: Callable[..., Any], checked: tuple[str, ...], name: str, out: Callable[[str], None],
    price: StepPrice | None, skip_steps: int, skip_offers: int, previous: Recording | None,
    on_step: Callable[[StepView, StepFacts], None] | None, on_offer: Callable[[Offer], None] | None, keep: bool,
    contract: Any = None, on_cancel: Callable[..., None] | None = None,
) -> Recording:
    cfg = workload.config
    idle = IdleSteps(out)
    offered = Shadow(cfg)  # the requests as the contract knows them, so a refusal is explained by the spec
    counts = {"steps": 0, "offers": 0}

    def shown_offer(offer: Offer) -> None:
        a = offer.arrival
        counts["offers"] += 1
        if offer.accepted:
            offered.accept(Request(a.rid, a.prompt_len, a.max_new))
        if counts["offers"] <= skip_offers:
            return
        if on_offer is not None:
            on_offer(offer)
        if not offer.accepted:
            idle.flush()
            why = refusal(offered, a.rid, a.prompt_len, a.max_new) or ACCEPTABLE
            out(f"{'':>5}  refused: add({a.rid}, {a.prompt_len}, {a.max_new}): {why}")

    def shown_step(view: StepView, facts: StepFacts) -> None:
        counts["steps"] += 1
        if counts["steps"] <= skip_steps:
            if previous is not None and view.plan != previous.steps[counts["steps"] - 1].plan:
                raise Nondeterministic(f"step {view.step} planned {list(view.plan)} on the replay, "
                                       f"{list(previous.steps[counts['steps'] - 1].plan)} before")
            return
        if view.is_idle:
            idle.add(view.step)
        else:
            idle.flush()
            out(row(view, cfg.kv_tokens, price(view) if price else None))
        if on_step is not None:
            on_step(view, facts)

    recording = record(workload, factory, checked, name, on_step=shown_step, on_offer=shown_offer, keep=keep,
                       contract=contract, on_cancel=on_cancel)
    idle.flush()
    violation, view = recording.violation, recording.broken_step
    if violation is not None:
        # The broken step: its plan never ran (a check before it), or it ran and a check after it
        # broke, so play never handed it on.
        if view is not None and (not view.completed or counts["steps"] < recording.num_steps):
            out(row(view, cfg.kv_tokens, price(view) if price else None))
        out(broken_line(violation))
    return recording


class IdleSteps:
    """Steps with nothing waiting or running, printed as one line per stretch, not one per step (a
    request arriving at step 200,000 is not preceded by 200,000 empty rows)."""

    def __init__(self, out: Callable[[str], None]) -> None:
        self.out = out
        self.first: int | None = None
        self.last = 0

    def add(self, step: int) -> None:
        if self.first is None:
            self.first = step
        self.last = step

    def flush(self) -> None:
        if self.first is None:
            return
        count = self.last - self.first + 1
        stretch = f", {count:,} steps to {self.last}" if count > 1 else ""
        self.out(f"{self.first:>5}  (idle: nothing waiting or running{stretch})")
        self.first = None
