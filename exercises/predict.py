"""Exercise 1: predict the next plan. The learner sees a trace up to a step and writes the plan of
the step after it; the reference under the monitor is the judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Workload
from stallfree.view import record

from .base import AnswerError, Exercise, Grade, read_text

WORKLOAD = Workload(
    Config(token_budget=6, max_seqs=3, kv_tokens=40),
    (Arrival(0, 5, 4, 0), Arrival(1, 9, 2, 0), Arrival(2, 3, 3, 2), Arrival(3, 12, 2, 2)),
)
STEP = 3  # the step to predict; the trace is shown up to the step before it
ENTRY = re.compile(r"^r(\d+)\s+(?:(decode)|chunk\s+(\d+)\s*-\s*(\d+))(?:\s*\(admitted\))?$")


def command() -> str:
    requests = " ".join(f"--request {a.rid}:{a.prompt_len}:{a.max_new}@{a.arrival_step}" for a in WORKLOAD.requests)
    cfg = WORKLOAD.config
    return f"stallfree trace --budget {cfg.token_budget} --max-seqs {cfg.max_seqs} --kv {cfg.kv_tokens} {requests}"


def shown_rows() -> list[str]:
    """The reference's table up to the step before STEP."""
    from stallfree.steptable import header, row

    steps = record(WORKLOAD, Scheduler).steps
    cfg = WORKLOAD.config
    return [header(cfg.token_budget)] + [row(v, cfg.kv_tokens) for v in steps[:STEP]]


def expected() -> list[str]:
    return [e.describe() for e in record(WORKLOAD, Scheduler).steps[STEP].entries]


def parse(text: str) -> list[str]:
    """The plan in trace notation (`r0 decode, r2 chunk 2-3`) or as JSON `[[rid, n], ...]`, as the
    entries trace prints. JSON gives only the sizes, so its chunks are placed where the reference's are."""
    text = text.strip()
    if text.startswith("["):
        return _from_json(text)
    entries = []
    for part in filter(None, (p.strip() for p in text.replace("\n", ",").split(","))):
        m = ENTRY.match(part)
        if m is None:
            raise AnswerError(f"entry {part!r}: expected `rN decode` or `rN chunk A-B`")
        rid = int(m.group(1))
        if m.group(2):
            entries.append(f"r{rid} decode")
            continue
        start, end = int(m.group(3)), int(m.group(4))
        if end <= start:
            raise AnswerError(f"entry {part!r}: a chunk A-B needs B > A")
        entries.append(f"r{rid} chunk {start}-{end}" + (" (admitted)" if start == 0 else ""))
    return entries


def _from_json(text: str) -> list[str]:
    try:
        pairs = json.loads(text)
        plan = [(int(rid), int(n)) for rid, n in pairs]
    except (ValueError, TypeError) as error:
        raise AnswerError(f"expected JSON [[rid, n], ...]: {error}") from None
    view = record(WORKLOAD, Scheduler).steps[STEP]
    starts = {e.rid: e.start for e in view.entries}
    out = []
    for rid, n in plan:
        start = starts.get(rid)
        if start is None:  # a decode, or a request the reference does not plan: shown as its size
            out.append(f"r{rid} decode" if n == 1 else f"r{rid} n={n}")
        else:
            out.append(f"r{rid} chunk {start}-{start + n}" + (" (admitted)" if start == 0 else ""))
    return out


def grade(path: Path) -> Grade:
    mine, right = parse(read_text(path)), expected()
    if not mine:
        raise AnswerError("the file holds no plan entries")
    if mine == right:
        return Grade(True, [f"correct: step {STEP} plans {', '.join(right)}"])
    lines = [f"not yet: your plan for step {STEP} is {', '.join(mine)}"]
    same = 0
    while same < min(len(mine), len(right)) and mine[same] == right[same]:
        same += 1
    if same:
        lines.append(f"its first {same} entr{'y is' if same == 1 else 'ies are'} right, in the right order")
    if len(mine) != len(right):
        lines.append(f"the plan has {'more' if len(mine) < len(right) else 'fewer'} entries than yours")
    else:
        lines.append(f"entry {same + 1} is the first that differs")
    return Grade(False, lines)


EXERCISE = Exercise(
    number=1,
    title="predict the next plan",
    task=(
        "The reference scheduler runs budget 6, max_seqs 3, kv_tokens 40, with r0 (prompt 5, max_new 4)\n"
        "and r1 (9, 2) from step 0, and r2 (3, 3) and r3 (12, 2) arriving before step 2. Its first steps:\n\n"
        + "\n".join(shown_rows()) + "\n\n"
        f"What does step {STEP} plan? Write it in FILE as trace prints entries, in budget order, e.g.\n"
        "`r0 decode, r1 chunk 6-9` (or as JSON [[rid, n], ...]), then run: stallfree exercise 1 FILE"
    ),
    hints=(
        "Decodes come first: which requests have their prompt done after step 2? Each gets exactly 1 token.",
        "r2's prompt has 3 tokens and step 2 ran positions 0-2 of it: a partial prompt gets min(what is left, "
        "budget left).",
        "Can r3 be admitted at step 3? Count the requests running against max_seqs 3 (a request finishing in "
        "step 3 still holds its slot during it).",
    ),
    answer=(
        "r0 decode, r1 decode, r2 chunk 2-3\n"
        "r0 and r1 are ready (r1's last chunk, 6-9, ran in step 2), so each decodes; r2 needs its last\n"
        "prompt token; r3 waits: three requests hold the three slots. 3 of the 6 tokens go unused, and\n"
        "WORK-CONSERVING allows it because the waiting head has no slot. Check: " + command()
    ),
    grade=grade,
)
