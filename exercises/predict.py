"""Exercise 1: predict the next plan. The learner sees a trace up to a step and writes the plan of
the step after it; the reference under the monitor is the judge. Each learner's instance is a small
workload drawn from their seed, and the step to predict one whose plan has work of two kinds."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Workload
from stallfree.view import StepView, record
from stallfree.view.table import header, row

from .base import AnswerError, Exercise, Grade, read_text, wrapped

ENTRY = re.compile(r"^r(\d+)\s+(?:(decode)|chunk\s+(\d+)\s*-\s*(\d+))(?:\s*\(admitted\))?$")
MAX_DRAWS = 1000  # workloads drawn for one instance before giving up (a few suffice)
FIRST_STEP = 2  # the step to predict comes after at least this many shown


@dataclass(frozen=True, slots=True)
class Instance:
    workload: Workload
    step: int  # the step to predict; the trace is shown up to the step before it

    @property
    def steps(self) -> list[StepView]:
        return record(self.workload, Scheduler).steps

    def command(self) -> str:
        requests = " ".join(f"--request {a.rid}:{a.prompt_len}:{a.max_new}@{a.arrival_step}"
                            for a in self.workload.requests)
        cfg = self.workload.config
        return f"stallfree trace --budget {cfg.token_budget} --max-seqs {cfg.max_seqs} --kv {cfg.kv_tokens} {requests}"

    def shown_rows(self) -> list[str]:
        cfg = self.workload.config
        return [header(cfg.token_budget)] + [row(v, cfg.kv_tokens) for v in self.steps[:self.step]]

    def expected(self) -> list[str]:
        return [e.describe() for e in self.steps[self.step].entries]


def teaches(view: StepView) -> bool:
    """A step worth predicting: its plan mixes decodes with prompt work, or holds two chunks."""
    kinds = {e.kind for e in view.entries}
    return len(view.entries) >= 2 and (len(kinds) >= 2 or "decode" not in kinds)


def draw(rng: random.Random) -> Instance:
    for _ in range(MAX_DRAWS):
        budget, max_seqs = rng.randint(4, 8), rng.randint(2, 3)
        steps = sorted(rng.choice((0, 0, 1, 2)) for _ in range(4))  # rids in the order the requests arrive
        arrivals = tuple(Arrival(rid, rng.randint(2, 12), rng.randint(2, 4), at) for rid, at in enumerate(steps))
        kv = rng.choice((sum(a.prompt_len + a.max_new for a in arrivals), 2 * 16 + rng.randint(0, 16)))
        kv = max(kv, max(a.prompt_len + a.max_new for a in arrivals))
        workload = Workload(Config(token_budget=budget, max_seqs=max_seqs, kv_tokens=kv), arrivals)
        steps = record(workload, Scheduler).steps
        candidates = [v.step for v in steps[FIRST_STEP:] if teaches(v)]
        if candidates:
            return Instance(workload, candidates[0])
    raise RuntimeError(f"no workload of {MAX_DRAWS} drawn has a step worth predicting")


def parse(text: str, instance: Instance) -> list[str]:
    """The plan in trace notation (`r0 decode, r2 chunk 2-3`) or as JSON `[[rid, n], ...]`, as the
    entries trace prints. JSON gives only the sizes, so its chunks are placed where the reference's are."""
    text = text.strip()
    if text.startswith("["):
        return _from_json(text, instance)
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


def _from_json(text: str, instance: Instance) -> list[str]:
    try:
        pairs = json.loads(text)
        plan = [(int(rid), int(n)) for rid, n in pairs]
    except (ValueError, TypeError) as error:
        raise AnswerError(f"expected JSON [[rid, n], ...]: {error}") from None
    view = instance.steps[instance.step]
    starts = {e.rid: e.start for e in view.entries}
    out = []
    for rid, n in plan:
        start = starts.get(rid)
        if start is None:  # a decode, or a request the reference does not plan: shown as its size
            out.append(f"r{rid} decode" if n == 1 else f"r{rid} n={n}")
        else:
            out.append(f"r{rid} chunk {start}-{start + n}" + (" (admitted)" if start == 0 else ""))
    return out


def grade(path: Path, instance: Instance) -> Grade:
    mine, right = parse(read_text(path), instance), instance.expected()
    if not mine:
        raise AnswerError("the file holds no plan entries")
    step = instance.step
    if mine == right:
        return Grade(True, [f"correct: step {step} plans {', '.join(right)}"])
    lines = [f"not yet: your plan for step {step} is {', '.join(mine)}"]
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


def describe(workload: Workload) -> str:
    cfg = workload.config
    requests = ", ".join(f"r{a.rid} ({a.prompt_len}, {a.max_new}) before step {a.arrival_step}"
                         for a in workload.requests)
    return (f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}, with requests "
            f"(prompt_len, max_new) {requests}")


def exercise(rng: random.Random) -> Exercise:
    instance = draw(rng)
    step = instance.step
    cfg = instance.workload.config

    def answer() -> str:
        return (", ".join(instance.expected()) + "\n"
                "The reference's plan: the decodes of every request whose prompt is done, then the next chunk of a "
                "partial prompt, then admissions first come first served while a slot, KV and budget are left.\n"
                "Check: " + instance.command())

    return Exercise(
        number=1,
        title="predict the next plan",
        task=(wrapped(f"The reference scheduler runs {describe(instance.workload)}. Its first steps:") + "\n\n"
              + "\n".join(instance.shown_rows()) + "\n\n"
              f"What does step {step} plan? Write it in FILE as trace prints entries, in budget order, e.g.\n"
              "`r0 decode, r1 chunk 6-9` (or as JSON [[rid, n], ...]), then run: stallfree exercise 1 FILE"),
        hints=(
            f"Decodes come first: which requests have their prompt done after step {step - 1}? Each gets exactly "
            "1 token.",
            "A partial prompt goes next: its chunk is min(what is left of it, budget left); the table shows how "
            "far each prompt got.",
            f"Then admissions, first come first served, while a slot (max_seqs {cfg.max_seqs}), its KV "
            "(prompt_len + max_new) and budget are free; a request finishing in this step still holds its slot "
            "during it.",
        ),
        answer=answer,
        grade=lambda path, seed: grade(path, instance),
    )
