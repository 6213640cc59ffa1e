"""Printing a run as a step table and a verdict per rule, for people reading a trace."""

from __future__ import annotations

from collections.abc import Iterable

from stallfree.spec import RULES, RuleViolation, StepFacts
from stallfree.spec.verdict import CRASH, Judgement, Verdict

NEVER_FIT = "NEVER-FIT"  # judged on add() as well as on steps


def describe(facts: StepFacts) -> str:
    """The plan in order, each entry named: `r3 decode`, `r1 chunk 7-14`, `r2 chunk 0-5 (admitted)`."""
    kinds: dict[int, str] = {}
    for track, _ in facts.decodes:
        kinds[track.rid] = "decode"
    for c in facts.chunks:
        kinds[c.track.rid] = f"chunk {c.start}-{c.start + c.n}"
    for c in facts.admitted:
        kinds[c.track.rid] = f"chunk 0-{c.n} (admitted)"
    return ", ".join(f"r{rid} {kinds.get(rid, f'n={n}')}" for rid, n in facts.plan) or "(empty)"


HEADER = f"{'step':>5}  {'entries':<44} {'tokens':>9}  {'emitted':<14} {'finished':<10} {'free KV':>8}"


def row(facts: StepFacts, budget: int, free_kv: int) -> str:
    emitted = " ".join(f"r{r}" for r in facts.emitted) or "-"
    finished = " ".join(f"r{t.rid}" for t in facts.finished) or "-"
    entries = describe(facts)
    return (
        f"{facts.step:>5}  {entries:<44} {f'{facts.num_tokens}/{budget}':>9}  {emitted:<14} "
        f"{finished:<10} {free_kv:>8}"
    )


def verdicts(
    checked: Iterable[str], steps: int, violation: RuleViolation | None, adds: int = 0,
    crash: str | None = None, stopped_by: str = CRASH,
) -> list[Judgement]:
    """One verdict per rule: holds (over the steps run), BROKEN (with the facts), not checked, or not
    judged: the run stopped first (a rule broke, the scheduler crashed), or no step ran (every request
    refused), and a rule judged on no step has shown nothing. NEVER-FIT judges add() calls too, so it
    holds over the `adds` calls judged even then. `crash`: what stopped the run where no rule judged it
(what the scheduler raised, or that it did not return), reported under `stopped_by` (CRASH, TIMEOUT)."""
    checked = set(checked)
    stopped = None
    if violation is not None:
        stopped = f"(held until step {violation.step}, where {violation.rule} broke; nothing judged after)"
    elif crash is not None:
        stopped = f"(held until step {steps}, where {stopped_by} stopped the run; nothing judged after)"
    judged = []
    for rule in RULES:
        if violation is not None and rule.id == violation.rule:
            judged.append(Judgement(rule.id, Verdict.BROKEN, f"at step {violation.step}: {violation.message}",
                                    (("step", violation.step),)))
        elif rule.id not in checked:
            judged.append(Judgement(rule.id, Verdict.NOT_CHECKED))
        elif stopped is not None:
            judged.append(Judgement(rule.id, Verdict.NOT_JUDGED, stopped))
        elif steps > 0:
            judged.append(Judgement(rule.id, Verdict.HOLDS, f"({steps} steps)", (("steps", steps),)))
        elif rule.id == NEVER_FIT and adds > 0:
            judged.append(Judgement(rule.id, Verdict.HOLDS, f"({adds} add() call(s) judged; no step ran)"))
        else:
            judged.append(Judgement(rule.id, Verdict.NOT_JUDGED, "(no step ran)"))
    if violation is not None and violation.rule not in {r.id for r in RULES}:
        judged.append(Judgement(violation.rule, Verdict.BROKEN, f"at step {violation.step}: {violation.message}",
                                (("step", violation.step),)))
    if crash is not None:
        judged.append(Judgement(stopped_by, Verdict.BROKEN, f"at step {steps}: {crash}", (("step", steps),)))
    return judged
