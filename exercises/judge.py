"""Which rules a learner's scheduler breaks: `Scheduler` from FILE (`loading`), run under the monitor
over the hand trace, then random workloads small enough to read, drawn afresh for each grading run
from a seed the report names (`--seed` replays it). On each workload every broken rule is found by
replaying it with the rules broken so far left unchecked, the way `stallfree trace --keep-going` goes on."""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stallfree.spec import RULE_IDS, RuleViolation, Workload, play
from stallfree.spec.examples import HAND_TRACE
from stallfree.spec.verdict import CRASH  # not a rule: the scheduler raised instead of answering
from stallfree.testing.generate import Ranges, random_workload

from .loading import FACTORY

NUM_RANDOM = 150
SEED_BITS = 32
RANGES = Ranges(max_budget=16, max_seqs=4, max_prompt=24, max_new=6, max_requests=8, max_gap=3)


def fresh_seed() -> int:
    """A seed no learner can know before the grading run draws it."""
    return secrets.randbits(SEED_BITS)


def workloads(seed: int) -> list[Workload]:
    rng = random.Random(seed)
    return [HAND_TRACE, *(random_workload(rng, RANGES) for _ in range(NUM_RANDOM))]


@dataclass(slots=True)
class Finding:
    rule: str
    step: int
    message: str
    workload: Workload


@dataclass(slots=True)
class Judgement:
    seed: int
    broken: dict[str, Finding] = field(default_factory=dict)  # rule -> its first finding
    num_workloads: int = 0

    @property
    def held(self) -> list[str]:
        return [r for r in RULE_IDS if r not in self.broken]


def judge(factory: Callable[..., Any], seed: int, drawn: list[Workload] | None = None) -> Judgement:
    """Every rule `factory` breaks on `seed`'s workloads (or on `drawn`, some of them)."""
    out = Judgement(seed)
    for workload in workloads(seed) if drawn is None else drawn:
        out.num_workloads += 1
        checked = list(RULE_IDS)
        while True:
            try:
                play(workload, factory, checked)
            except RuleViolation as violation:
                out.broken.setdefault(violation.rule, Finding(violation.rule, violation.step, violation.message,
                                                              workload))
                if violation.rule not in checked:  # PROTOCOL: the run cannot be followed further
                    break
                checked.remove(violation.rule)
                continue
            except Exception as error:  # a scheduler that raises has not answered: stop this workload
                out.broken.setdefault(CRASH, Finding(CRASH, -1, f"{type(error).__name__}: {error}", workload))
            break
    return out


def report(judgement: Judgement, path: Path, number: int) -> list[str]:
    """What broke, each with a workload to replay it on, and the seed that replays this grading."""
    lines = [f"judged on {judgement.num_workloads} workloads under the monitor, every rule checked: the hand "
             f"trace and {judgement.num_workloads - 1} drawn from seed {judgement.seed} (this grading again: "
             f"stallfree exercise {number} {path} --seed {judgement.seed})"]
    for rule, f in judgement.broken.items():
        where = "raised" if rule == CRASH else f"broken at step {f.step}"
        lines.append(f"  {rule} {where}: {f.message}")
        lines.append(f"    on {f.workload.dumps()}")
    if judgement.broken:
        lines.append(f"  replay one: save it as W.json, then stallfree trace --workload W.json "
                     f"--scheduler {path.stem}:{FACTORY} --keep-going (from {path.parent or '.'})")
    held = judgement.held
    lines.append(f"  held: {', '.join(held) if held else 'none'}")
    return lines
