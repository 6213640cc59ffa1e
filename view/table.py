"""Printing a run as a step table and a verdict per rule, for people reading a trace.

A row says what arrived before the step, what the plan ran (each entry named: `r3 decode`,
`r1 chunk 7-14`, `r2 chunk 0-5 (admitted)`), its tokens of the budget, optionally its milliseconds
on the cost model, what it emitted and finished, the free KV after it, and why each request still
waiting waits (`no slot`, `not enough free KV`, `no budget left`, `behind r4`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from stallfree.spec import RULES, Rule, RuleViolation
from stallfree.spec.verdict import CRASH, Judgement, Verdict

from .record import WAITING_SHOWN, StepView

NEVER_FIT = "NEVER-FIT"  # judged on add() as well as on steps
ARRIVED_SHOWN = 2  # arrivals named in a row when more than three arrive at once; the rest are counted
NOT_RUN = "(not run)"  # the emitted column of a plan that broke a rule before it ran
ENTRIES_WIDTH = 44  # the entries column; a plan that does not fit goes on under it, a line per part
ARRIVED_WIDTH = 9


def tokens_width(budget: int) -> int:
    return max(len("tokens"), 2 * len(str(budget)) + 1)


def header(budget: int, with_ms: bool = False) -> str:
    ms = f" {'ms':>7}" if with_ms else ""
    width = tokens_width(budget)
    return (f"{'step':>5}  {'arrived':<{ARRIVED_WIDTH}} {'entries':<{ENTRIES_WIDTH}} {'tokens':>{width}}{ms}  "
            f"{'emitted':<14} "
            f"{'finished':<10} {'free KV':>7}  waiting")


def rids(values: Iterable[int]) -> str:
    return " ".join(f"r{r}" for r in values) or "-"


def arrived(view: StepView) -> str:
    if len(view.arrived) <= ARRIVED_SHOWN + 1:
        return rids(view.arrived)
    return f"{rids(view.arrived[:ARRIVED_SHOWN])} +{len(view.arrived) - ARRIVED_SHOWN}"


def waiting(view: StepView) -> str:
    """Why each request still waits after the plan; requests waiting behind the same one counted."""
    why = view.waiting
    if not why:
        return "-"
    named = [f"r{rid} {reason}" for rid, reason in list(why.items())[:WAITING_SHOWN]]
    rest = len(why) + view.more_waiting - WAITING_SHOWN
    if rest > 0:
        named.append(f"+{rest} more")
    return ", ".join(named)


def entry_lines(view: StepView) -> list[str]:
    """The plan's entries cut into lines that fit their column (`wrap_entries`)."""
    return wrap_entries([e.describe() for e in view.entries] or ["(empty)"], ENTRIES_WIDTH)


def wrap_entries(parts: list[str], width: int) -> list[str]:
    """Entries cut at entry boundaries into lines of at most `width` characters (one entry longer than
    that stands alone), so a step with two admissions keeps the columns after it aligned."""
    lines = [parts[0]]
    for i, part in enumerate(parts[1:], start=2):
        comma = 1 if i < len(parts) else 0  # a line that more entries follow ends in a comma
        if len(lines[-1]) + len(", ") + len(part) + comma <= width:
            lines[-1] += f", {part}"
        else:
            lines[-1] += ","
            lines.append(part)
    return lines


def row(view: StepView, kv_tokens: int, ms: float | None = None) -> str:
    """The step's row; entries that do not fit their column go on lines of their own under it."""
    emitted = rids(view.emitted) if view.completed else NOT_RUN
    finished = rids(view.finished) if view.completed else "-"
    free_kv = f"{kv_tokens - view.kv_after}" if view.kv_after is not None else "-"
    ms_cell = "" if ms is None else f" {ms:>7.1f}"
    tokens = f"{view.num_tokens}/{view.budget}"
    first, *more = entry_lines(view)
    line = (
        f"{view.step:>5}  {arrived(view):<{ARRIVED_WIDTH}} {first:<{ENTRIES_WIDTH}} "
        f"{tokens:>{tokens_width(view.budget)}}{ms_cell}  {emitted:<14} {finished:<10} {free_kv:>7}  {waiting(view)}"
    )
    return "\n".join([line, *(f"{'':>5}  {'':<{ARRIVED_WIDTH}} {part}" for part in more)])


def broken_line(violation: RuleViolation) -> str:
    """The line under the row of the step that broke a rule (or in which the scheduler raised)."""
    if violation.rule == CRASH:
        return f"{'':>5}  ^ the scheduler raised at step {violation.step}: {violation.message}"
    return f"{'':>5}  ^ {violation.rule} broken at step {violation.step}: {violation.message}"


def verdicts(
    checked: Iterable[str], steps: int, violation: RuleViolation | None, adds: int = 0,
    broken_before: Sequence[RuleViolation] = (), crash: str | None = None, stopped_by: str = CRASH,
    registry: Iterable[Rule] = RULES, unjudged: Mapping[str, str] | None = None,
) -> list[Judgement]:
    """One verdict per rule: holds (over the steps run), BROKEN (with the facts), not checked, or not
    judged: the run stopped first (a rule broke, the scheduler crashed), or no step ran (every request
    refused), and a rule judged on no step has shown nothing. NEVER-FIT judges add() calls too, so it
    holds over the `adds` calls judged even then. `broken_before` are rules found broken in earlier runs
    of the same workload, left unchecked in this one to keep going. `crash`: what stopped the run where
    no rule judged it (what the scheduler raised, or that it did not return), reported under
    `stopped_by` (CRASH, TIMEOUT); a recorded violation CRASH is the same. `registry`: the reference's
    RULES, or a variant contract's rules. `unjudged`: rule -> why the run could not judge it (a CANCEL
    of a scheduler with no cancel(), on a workload that cancels nothing), read not judged unless broken."""
    checked = set(checked)
    crash_step = steps
    if violation is not None and violation.rule == CRASH:
        crash, crash_step, violation = violation.message, violation.step, None
    earlier = {v.rule: v for v in broken_before}
    stopped = None
    if violation is not None:
        stopped = f"(held until step {violation.step}, where {violation.rule} broke; nothing judged after)"
    elif crash is not None:
        stopped = f"(held until step {crash_step}, where {stopped_by} stopped the run; nothing judged after)"
    registry = tuple(registry)
    judged = []
    for rule in registry:
        broke = earlier.get(rule.id) or (violation if violation is not None and rule.id == violation.rule else None)
        if broke is not None:
            judged.append(Judgement(rule.id, Verdict.BROKEN, f"at step {broke.step}: {broke.message}",
                                    (("step", broke.step),)))
        elif rule.id not in checked:
            judged.append(Judgement(rule.id, Verdict.NOT_CHECKED))
        elif unjudged and rule.id in unjudged:
            judged.append(Judgement(rule.id, Verdict.NOT_JUDGED, unjudged[rule.id]))
        elif stopped is not None:
            judged.append(Judgement(rule.id, Verdict.NOT_JUDGED, stopped))
        elif steps > 0:
            judged.append(Judgement(rule.id, Verdict.HOLDS, f"({steps} steps)", (("steps", steps),)))
        elif rule.id == NEVER_FIT and adds > 0:
            judged.append(Judgement(rule.id, Verdict.HOLDS, f"({adds} add() call(s) judged; no step ran)"))
        else:
            judged.append(Judgement(rule.id, Verdict.NOT_JUDGED, "(no step ran)"))
    known = {r.id for r in registry}
    for v in [*broken_before, *([violation] if violation is not None else [])]:
        if v.rule not in known:
            judged.append(Judgement(v.rule, Verdict.BROKEN, f"at step {v.step}: {v.message}", (("step", v.step),)))
    if crash is not None:
        judged.append(Judgement(stopped_by, Verdict.BROKEN, f"at step {crash_step}: {crash}", (("step", crash_step),)))
    return judged
