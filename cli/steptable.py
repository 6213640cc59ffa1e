"""Printing a run as a step table and a verdict per rule, for people reading a trace."""

from __future__ import annotations

from collections.abc import Iterable

from stallfree.spec import RULES, Rule, RuleViolation, StepFacts

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
    registry: tuple[Rule, ...] = RULES,
) -> list[str]:
    """One line per rule: holds, BROKEN (with the facts), not checked, or not exercised when no step
    ran (every request refused): a rule judged on no step has shown nothing. NEVER-FIT judges add()
    calls too, so it holds over the `adds` calls judged even then."""
    checked = set(checked)
    lines = []
    for rule in registry:
        if violation is not None and rule.id == violation.rule:
            lines.append(f"{rule.id:<16} BROKEN at step {violation.step}: {violation.message}")
        elif rule.id not in checked:
            lines.append(f"{rule.id:<16} not checked")
        elif violation is not None:
            lines.append(f"{rule.id:<16} held until step {violation.step}")
        elif steps > 0:
            lines.append(f"{rule.id:<16} holds ({steps} steps)")
        elif rule.id == NEVER_FIT and adds > 0:
            lines.append(f"{rule.id:<16} holds ({adds} add() call(s) judged; no step ran)")
        else:
            lines.append(f"{rule.id:<16} not exercised (no step ran)")
    if violation is not None and violation.rule not in {r.id for r in registry}:
        lines.append(f"{violation.rule:<16} BROKEN at step {violation.step}: {violation.message}")
    return lines
