"""Exercises 4 and 5, on schedulers: break exactly one named rule; fix a faulty scheduler."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from stallfree.spec import RULE_IDS
from stallfree.variants import Stepwise

from .base import Exercise, Grade
from .judge import NUM_RANDOM, Judgement, fresh_seed, judge, report
from .loading import NotWritten, load, watched

BREAK_NUMBER, FIX_NUMBER = 4, 5
BREAK_RULE = "DECODE-FIRST"
# What an answer may not use in place of its own code, found in sys.modules after it ran (`loading`).
# Exercise 4: the deliberately wrong schedulers, the simulator's policies, these files.
NOT_USED_BREAK = ("stallfree.faults", "stallfree.sim", "stallfree.exercises")
# Exercise 5: a fix must be a fix, so no scheduler of stallfree's either.
NOT_USED_FIX = ("stallfree.reference", "stallfree.paged", "stallfree.variants", *NOT_USED_BREAK)
STEPWISE_PHASES = ("plan_decodes", "plan_partials", "admit")  # Stepwise.phases(), the contract's order
ANSWER_SEED = 0  # the derived answer is judged on the workloads of this seed


def resource(name: str) -> str:
    return (files("stallfree.exercises") / "files" / name).read_text()


STARTER = "faulty.py"


def fixed_source() -> str:
    """The starter with both faults fixed, derived when asked (`derive`): the package holds no fixed line."""
    from .derive import derive_fix

    fixed = derive_fix(resource(STARTER), ANSWER_SEED)
    if fixed is None:
        raise RuntimeError(f"no one-token edit of the starter, alone or paired, keeps every rule on seed {ANSWER_SEED}")
    return fixed


def fix_diff() -> str:
    import difflib

    return "".join(difflib.unified_diff(resource(STARTER).splitlines(keepends=True), fixed_source().splitlines(
        keepends=True), fromfile="faulty.py", tofile="fixed.py", n=1))


def graded(path: Path, seed: int | None, not_used: Sequence[str]) -> tuple[Judgement | None, list[str]]:
    """FILE loaded and judged with the modules `not_used` watched: the judgement, or None and why not."""
    judgement, elsewhere = None, None
    with watched(not_used) as watch:
        try:
            judgement = judge(load(path), fresh_seed() if seed is None else seed)
        except NotWritten as error:
            elsewhere = error
    if watch.found:  # what it imported, however, while it was loaded and run: the first thing to say
        top = sorted({m for m in watch.found if not any(m.startswith(o + ".") for o in watch.found)})
        return None, [f"not yet: it uses {', '.join(top)}; write the scheduler in the file instead of "
                      "importing one"]
    if elsewhere is not None:
        return None, [f"not yet: {elsewhere}"]
    return judgement, []


def verdict_break(broken: set[str]) -> tuple[bool, str]:
    if broken == {BREAK_RULE}:
        return True, f"correct: {BREAK_RULE} breaks and every other rule holds"
    if not broken:
        return False, f"not yet: your scheduler keeps every rule; {BREAK_RULE} must break"
    others = sorted(broken - {BREAK_RULE})
    if BREAK_RULE in broken:
        return False, f"not yet: {BREAK_RULE} breaks, but so do {', '.join(others)}"
    return False, f"not yet: {BREAK_RULE} holds, and {', '.join(others)} break(s)"


def grade_break(path: Path, seed: int | None = None) -> Grade:
    judgement, refused = graded(path, seed, NOT_USED_BREAK)
    if judgement is None:
        return Grade(False, refused)
    correct, head = verdict_break(set(judgement.broken))
    return Grade(correct, [head, *report(judgement, path, BREAK_NUMBER)])


def phase_order(names: Sequence[str]) -> Callable[..., Any]:
    """Stepwise with its phases run in the order `names`."""
    order = tuple(names)

    class Scheduler(Stepwise):
        def phases(self):  # type: ignore[no-untyped-def]
            return tuple(getattr(self, name) for name in order)

    return Scheduler


def phase_order_source(names: Sequence[str]) -> str:
    calls = ", ".join(f"self.{name}" for name in names)
    return ("from stallfree.variants import Stepwise\n\n\nclass Scheduler(Stepwise):\n"
            f"    def phases(self):\n        return ({calls})\n")


def break_answer() -> str:
    """Derived when asked: every order of Stepwise's three phases judged; those that break exactly
    BREAK_RULE are the answers (the first shown as a FILE), and what each other order breaks is said."""
    found, others = [], []
    for names in itertools.permutations(STEPWISE_PHASES):
        broken = set(judge(phase_order(names), ANSWER_SEED).broken)
        line = f"  ({', '.join(names)}): {', '.join(sorted(broken)) or 'breaks nothing'}"
        (found if broken == {BREAK_RULE} else others).append((names, line))
    if not found:
        return f"no order of Stepwise's phases breaks {BREAK_RULE} alone; each breaks:\n" + "\n".join(
            line for _, line in others)
    return (f"Run Stepwise's phases in another order, and nothing else differs. Judged the way a FILE is (seed "
            f"{ANSWER_SEED}), these orders break {BREAK_RULE} alone:\n" + "\n".join(line for _, line in found)
            + "\nand the others break more, or nothing:\n" + "\n".join(line for _, line in others)
            + "\n\nThe first as a FILE:\n\n" + phase_order_source(found[0][0]))


def grade_fix(path: Path, seed: int | None = None) -> Grade:
    judgement, refused = graded(path, seed, NOT_USED_FIX)
    if judgement is None:
        return Grade(False, refused)
    lines = report(judgement, path, FIX_NUMBER)
    if not judgement.broken:
        return Grade(True, ["correct: every rule holds", *lines])
    return Grade(False, [f"not yet: {', '.join(judgement.broken)} still break(s)", *lines])

BREAK = Exercise(
    number=BREAK_NUMBER,
    title="write a scheduler that breaks exactly one rule",
    task=(
        f"Write a scheduler that breaks {BREAK_RULE} and keeps the {len(RULE_IDS) - 1} other rules. FILE is a\n"
        "Python file defining Scheduler(token_budget=, max_seqs=, kv_tokens=) with add(rid, prompt_len,\n"
        "max_new), schedule() -> [(rid, n), ...] and complete(plan) -> [rids that emitted a token], written\n"
        "in FILE (it may subclass the policy written as overridable steps, `from stallfree.variants import\n"
        "Stepwise`, variants/stepwise.py; not the faults). It is judged under the monitor on the hand trace\n"
        f"and {NUM_RANDOM} small random workloads, drawn afresh for each grading (the report names the seed;\n"
        "--seed replays it). Then run: stallfree exercise 4 FILE"
    ),
    hints=(
        "docs/learn.md section 6 shows one order that breaks DECODE-FIRST. `prefill-first` breaks only it on "
        "that workload, but docs/examples/prefill_first.py, whose decodes wait for steps with no prompt work, "
        "also breaks WORK-CONSERVING: why?",
        "Stepwise.schedule() runs its phases in order: plan_decodes, plan_partials, admit. Each takes what "
        "budget the phases before it left.",
        "Every rule but DECODE-FIRST still applies: the budget must be used in full while something can run, "
        "and partial prompts must still come before admissions.",
    ),
    answer=break_answer,
    grade=grade_break,
)

FIX = Exercise(
    number=FIX_NUMBER,
    title="fix a faulty scheduler",
    task=(
        "`stallfree exercise 5 --starter > faulty.py` writes a scheduler with two faults. Find them with\n"
        "`stallfree exercise 5 faulty.py` (which rules break, and a workload for each) and\n"
        "`stallfree trace --scheduler faulty:Scheduler --workload W.json --keep-going`, fix them in the\n"
        "file (a fix, so it may import none of stallfree's schedulers: not the reference, the variants or the\n"
        "faults), and run: stallfree exercise 5 faulty.py"
    ),
    hints=(
        "One fault shows as BUDGET: find a step whose tokens exceed the budget. Which entries does it carry?",
        "The other shows as KV: compare the free KV the scheduler reports after a request finishes with what "
        "that request reserved at admission.",
        "Look at how much budget the chunk of a partial prompt may take, and at what release() gives back.",
    ),
    answer=lambda: (
        "Derived when asked: one-token edits of the starter's step methods (another field, attribute or\n"
        "local in place of one), judged the way a FILE is; the first edit, or pair on two lines, that keeps\n"
        f"every rule (seed {ANSWER_SEED}) is the fix:\n\n" + fix_diff()
    ),
    grade=grade_fix,
)
