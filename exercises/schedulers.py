"""Exercises 4 and 5, on schedulers: break exactly one named rule; fix a faulty scheduler."""

from __future__ import annotations

import ast
from importlib.resources import files
from pathlib import Path

from stallfree.spec import RULE_IDS

from .base import AnswerError, Exercise, Grade, read_text
from .judge import judge, load, report

BREAK_RULE = "DECODE-FIRST"
# A fix must be a fix: the reference, the deliberately wrong schedulers, the simulator's policies and
# these files are not to be imported in its place.
NOT_IMPORTED = ("stallfree.reference", "stallfree.faults", "stallfree.sim", "stallfree.exercises")


def resource(name: str) -> str:
    return (files("stallfree.exercises") / "files" / name).read_text()


STARTER = "faulty.py"
# The two faults of the starter and their fixes: (the faulty line, the fixed line).
FIXES = (
    ("n = min(r.prompt_len - r.num_prefilled, self.token_budget)", "n = min(r.prompt_len - r.num_prefilled, left)"),
    ("self.free_kv += r.prompt_len\n", "self.free_kv += r.reservation\n"),
)


def fixed_source() -> str:
    """The starter with both faults fixed."""
    source = resource(STARTER)
    for faulty, fixed in FIXES:
        if source.count(faulty) != 1:
            raise RuntimeError(f"the starter must hold {faulty!r} exactly once")
        source = source.replace(faulty, fixed)
    return source


def fix_diff() -> str:
    import difflib

    return "".join(difflib.unified_diff(resource(STARTER).splitlines(keepends=True), fixed_source().splitlines(
        keepends=True), fromfile="faulty.py", tofile="fixed.py", n=1))


def grade_break(path: Path) -> Grade:
    judgement = judge(load(path))
    broken = set(judgement.broken)
    lines = report(judgement, path)
    if broken == {BREAK_RULE}:
        return Grade(True, [f"correct: {BREAK_RULE} breaks and every other rule holds", *lines])
    if not broken:
        return Grade(False, [f"not yet: your scheduler keeps every rule; {BREAK_RULE} must break", *lines])
    others = sorted(broken - {BREAK_RULE})
    head = (f"not yet: {BREAK_RULE} breaks, but so do {', '.join(others)}" if BREAK_RULE in broken
            else f"not yet: {BREAK_RULE} holds, and {', '.join(others)} break(s)")
    return Grade(False, [head, *lines])


def imports(source: str) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def grade_fix(path: Path) -> Grade:
    source = read_text(path)
    try:
        forbidden = [n for n in imports(source) if any(n == m or n.startswith(m + ".") for m in NOT_IMPORTED)]
    except SyntaxError as error:
        raise AnswerError(f"FILE {str(path)!r}: it does not parse: {error}") from None
    if forbidden:
        return Grade(False, [f"not yet: it imports {', '.join(forbidden)}; fix the scheduler in the file "
                             "instead of replacing it"])
    judgement = judge(load(path))
    lines = report(judgement, path)
    if not judgement.broken:
        return Grade(True, ["correct: every rule holds", *lines])
    return Grade(False, [f"not yet: {', '.join(judgement.broken)} still break(s)", *lines])


BREAK = Exercise(
    number=4,
    title="write a scheduler that breaks exactly one rule",
    task=(
        f"Write a scheduler that breaks {BREAK_RULE} and keeps the {len(RULE_IDS) - 1} other rules. FILE is a Python "
        "file\n"
        "defining Scheduler(token_budget=, max_seqs=, kv_tokens=) with add(rid, prompt_len, max_new),\n"
        "schedule() -> [(rid, n), ...] and complete(plan) -> [rids that emitted a token]. It is judged under\n"
        "the monitor on the hand trace and 150 small random workloads. Start from the policy written as\n"
        "overridable steps: `from stallfree.variants import Stepwise` (faults/stepwise.py), or from nothing.\n"
        "Then run: stallfree exercise 4 FILE"
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
    answer=(
        "Run the partial prompts before the decodes, and nothing else differs:\n\n" + resource("break_one.py")
    ),
    grade=grade_break,
)

FIX = Exercise(
    number=5,
    title="fix a faulty scheduler",
    task=(
        "`stallfree exercise 5 --starter > faulty.py` writes a scheduler with two faults. Find them with\n"
        "`stallfree exercise 5 faulty.py` (which rules break, and a workload for each) and\n"
        "`stallfree trace --scheduler faulty:Scheduler --workload W.json --keep-going`, fix them in the\n"
        "file (without importing the reference or the faults), and run: stallfree exercise 5 faulty.py"
    ),
    hints=(
        "One fault shows as BUDGET: find a step whose tokens exceed the budget. Which entries does it carry?",
        "The other shows as KV: compare the free KV the scheduler reports after a request finishes with what "
        "that request reserved at admission.",
        "Look at how much budget the chunk of a partial prompt may take, and at what release() gives back.",
    ),
    answer=(
        "Two lines: a partial prompt's chunk takes min(remaining, left), the budget the decodes left, not\n"
        "the whole budget; and a finished request gives back its whole reservation, prompt_len + max_new.\n"
        "The fix:\n\n" + fix_diff()
    ),
    grade=grade_fix,
)
