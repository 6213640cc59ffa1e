"""Which rules a learner's scheduler breaks: its FILE loaded as a module, `Scheduler` taken from it,
and run under the monitor over a fixed set of workloads (the hand trace, then seeded random ones,
small enough to read). On each workload every broken rule is found by replaying it with the rules
broken so far left unchecked, the same way `stallfree trace --keep-going` goes on."""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stallfree.spec import RULE_IDS, RuleViolation, Workload, play
from stallfree.spec.verdict import CRASH  # not a rule: the scheduler raised instead of answering
from stallfree.testing.generate import Ranges, random_workload

from .base import AnswerError

FACTORY = "Scheduler"
NUM_RANDOM = 150
SEED = 19
RANGES = Ranges(max_budget=16, max_seqs=4, max_prompt=24, max_new=6, max_requests=8, max_gap=3)


def workloads() -> list[Workload]:
    from stallfree.commands.trace import HAND_TRACE

    rng = random.Random(SEED)
    return [HAND_TRACE, *(random_workload(rng, RANGES) for _ in range(NUM_RANDOM))]


def load(path: Path) -> Callable[..., Any]:
    """`Scheduler` from the Python file `path`; AnswerError if it cannot be loaded."""
    if not path.is_file():
        raise AnswerError(f"FILE {str(path)!r}: no such file")
    name = f"_stallfree_answer_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AnswerError(f"FILE {str(path)!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # whatever the learner's module raises on import, it is the answer's fault
        raise AnswerError(f"FILE {str(path)!r}: importing it raised {type(error).__name__}: {error}") from None
    finally:
        sys.modules.pop(name, None)
    factory = getattr(module, FACTORY, None)
    if not callable(factory):
        raise AnswerError(f"FILE {str(path)!r}: it defines no {FACTORY}(token_budget=, max_seqs=, kv_tokens=)")
    return factory  # type: ignore[no-any-return]


@dataclass(slots=True)
class Finding:
    rule: str
    step: int
    message: str
    workload: Workload


@dataclass(slots=True)
class Judgement:
    broken: dict[str, Finding] = field(default_factory=dict)  # rule -> its first finding
    num_workloads: int = 0

    @property
    def held(self) -> list[str]:
        return [r for r in RULE_IDS if r not in self.broken]


def judge(factory: Callable[..., Any]) -> Judgement:
    out = Judgement()
    for workload in workloads():
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


def report(judgement: Judgement, path: Path) -> list[str]:
    """What broke, each with a workload to replay it on."""
    lines = [f"judged on {judgement.num_workloads} workloads under the monitor, every rule checked"]
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
