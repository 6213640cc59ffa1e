"""What `stallfree prove --scheduler stallfree.prefix:small_blocks` runs: the explicit model check of a
prefix-caching scheduler (`explicit.prefix`: adds that share a system prompt, the prefix monitor and
invariants), as rows of the same table; with --fault RULE, the same check on the prefix fault that
breaks RULE, which must fail naming it. The Z3 theorems of `smt.prefix` (the scheduler's own
first_chunk and hit_admits, match, hold, release and evict, and its schedule() then complete() for the
admission step, executed symbolically) are its z3 rows. No CrossHair contract or
differential check is written for the prefix design: those methods are rows that say "not checked",
never rows that hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.prefix.contract.invariants import PREFIX_INVARIANTS
from stallfree.prefix.contract.rules import PREFIX_RULE_IDS
from stallfree.prefix.faults import PREFIX_FAULTS, PrefixFault
from stallfree.spec.verdict import Verdict

from .explicit import prefix
from .explicit.bounds import Bounds
from .explicit.snapshot import Hidden
from .suite import HOLDS, UNKNOWN, Row

DEFAULT_BOUND = "3,2,6,2,4,3"  # hits, evictions, shared blocks and preemptions, one stop or cancel a behaviour
CONTENTS = ((), ((0, 2),))  # no content, or a one-block system prompt
METHOD = "model check (prefix)"


# HitOneMore's extra block needs a prompt of five beside a hit, on a pool that holds it with the watermark.
FAULT_BOUNDS = {"HIT-SAME-TOKENS": "3,1,10,2,5,1"}
# CountRevivedTwice (WORK-CONSERVING) is found by the monitor sessions and the state machine, at no bound
# the model check runs in seconds: --fault WORK-CONSERVING is refused rather than shown holding.
UNREACHED = {"WORK-CONSERVING"}


def fault(rule: str) -> type[PrefixFault]:
    """The prefix scheduler that breaks `rule`; ValueError naming the rules that have one the model check finds."""
    if rule in UNREACHED:
        raise ValueError(f"--fault {rule}: its prefix fault is found by the monitor sessions and the state machine, "
                         "not by the model check at a small bound (docs/prefix.md)")
    for f in PREFIX_FAULTS:
        if f.breaks == rule:
            return f
    rules = ", ".join(f.breaks for f in PREFIX_FAULTS if f.breaks not in UNREACHED)
    raise ValueError(f"no prefix fault the model check finds breaks {rule}; they break {rules}")


def control_bound(rule: str) -> Bounds:
    """The bound at which the model check finds `rule`'s fault."""
    return Bounds.parse(FAULT_BOUNDS.get(rule, DEFAULT_BOUND))


def model_rows(bound: Bounds, factory: Callable[..., Any], max_states: int | None = None,
               hidden: Hidden | None = None) -> list[Row]:
    """The prefix model check's rows: a counterexample, or the rules holding with what the search met;
    `hidden` is the scheduler's state the checker's key leaves out (none for the project's own)."""
    r = prefix.check(bound, factory, max_states=max_states, contents=CONTENTS, hidden=hidden)
    label = f"{bound.label()}: {r.states:,} states"
    if r.counterexample is not None:
        ce = r.counterexample
        return [Row(ce.rule, METHOD, label, r.verdict, r.seconds, ce.describe(), {"workload": ce.workload.to_json()})]
    if r.verdict is not HOLDS:
        return [Row("ALL PREFIX RULES", METHOD, label, r.verdict, r.seconds, "stopped at max_states")]
    if r.running_states == 0:
        return [Row("ALL PREFIX RULES", METHOD, label, UNKNOWN, r.seconds,
                    "vacuous: no request ever ran at this bound (NEVER-FIT refuses every shape)")]
    return [Row("ALL PREFIX RULES", METHOD, label, r.verdict, r.seconds,
                f"{len(PREFIX_RULE_IDS)} prefix rules on every transition, {len(PREFIX_INVARIANTS)} prefix invariants "
                f"in every state; states reached by a hit {r.hit_states}, by an eviction {r.evicting_states}, by a "
                f"preemption {r.preempting_states}; with a block shared {r.shared_states}")]


def z3_rows(fault_rule: str | None, deep: bool = False) -> list[Row]:
    """The prefix theorems (`smt.prefix`) of the prefix scheduler; with a fault rule, the theorem of that
    rule on its fault, which must be refuted (none where no theorem states the rule). A rule no theorem
    states (EVICT-LRU) is a row that says so, never one that holds."""
    from .smt import prefix as theorems

    rows = []
    for t in theorems.THEOREMS:
        if fault_rule is not None and t.name != fault_rule:
            continue
        cls = None if fault_rule is None else theorems.control(t)
        o = theorems.prove(t, cls, deep=deep)
        what = ("any lengths, budget, pool and watermark" if t.bound == "any value" else
                "budget, slots, free blocks and watermark symbolic, every reachable cache, prompt and content "
                "within the bound" if t.method == theorems.STEP else
                "the cache's state of each block symbolic, every target and content within the bound")
        detail = (f"the scheduler's own {t.method}, every path, {what}; block sizes "
                  f"{', '.join(map(str, t.block_sizes))}") if o.verdict is HOLDS else str(o.counterexample)
        rows.append(Row(t.name, f"Z3 prefix ({o.scheduler}.{t.method})", theorems.bound(t, deep), o.verdict,
                        o.seconds, detail, o.counterexample))
    if fault_rule is None:
        rows += [Row(rule, "Z3 prefix", "-", Verdict.NOT_CHECKED, 0.0, f"not proved in Z3: {why}")
                 for rule, why in theorems.NOT_PROVED.items()]
    return rows


def not_written(methods: tuple[str, ...]) -> list[Row]:
    return [Row(m.upper(), m, "-", Verdict.NOT_CHECKED, 0.0, f"no {m} is written for the prefix design")
            for m in methods if m not in ("model", "z3")]
