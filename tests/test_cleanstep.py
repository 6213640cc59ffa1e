"""The engine checker's shortcut for a step that breaks no rule (`conformance/trace/cleanstep.py`) never
changes a verdict: on the reference's dense trace, the recorded vLLM traces and each fault's trace, and
on thousands of seeded mutations of them (an entry's n moved, an entry dropped or doubled, a token
dropped or added, a finish moved or given a reason, an add delayed, an admission or a preemption
planted, a smaller budget, S or K), the verdict with the shortcut is the verdict of the full judgement
of every step, message for message. A shortcut with one of its checks planted out of it (each of
`PLANTED`) is caught by the same comparison."""

from __future__ import annotations

import functools
import inspect
import json
import random
import sys
import types
from pathlib import Path

import pytest
from test_conformance_trace import live_violation
from test_trace_v2 import VLLM, imported

from stallfree.conformance.trace import cleanstep, enginecheck
from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.tracefile import TraceError
from stallfree.reference import Scheduler
from stallfree.spec import RULE_IDS

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
from check_trace_throughput import dense_workload

MUTANTS = 120  # seeded mutations of each base trace


def as_v2(lines: list[str]) -> list[str]:
    header = json.loads(lines[0])
    header["stallfree_trace"] = 2
    return [json.dumps(header), *lines[1:]]


def dense() -> list[str]:
    import io

    out = io.StringIO()
    record_trace(dense_workload(300), Scheduler, out)
    return as_v2(out.getvalue().splitlines())


def bases() -> dict[str, list[str]]:
    traces = {"dense reference": dense()}
    for path in VLLM:
        traces[path.stem] = imported(path.stem)
    for rule in ("FCFS", "BUDGET", "PARTIAL-NEXT", "WORK-CONSERVING", "DECODE-FIRST", "TOKENS"):
        traces[f"fault {rule}"] = as_v2([line.decode() if isinstance(line, bytes) else line
                                         for line in live_violation(rule)[2]])
    return traces


def verdict_of(lines: list[str]) -> object:
    """Everything a verdict says (or the format error), the clock left out."""
    try:
        v = check_engine_trace(lines)
    except TraceError as error:
        return ("TraceError", str(error))
    return (v.steps, v.lines, v.ended, v.unfinished_step, v.partial, v.not_judged,
            {rule: (b.rule, b.step, b.message, line) for rule, (b, line) in v.violations.items()})


def mutate(lines: list[str], rng: random.Random) -> list[str]:
    """One seeded change to one step line (or two, for a moved finish or add)."""
    out = list(lines)
    steps = [i for i, line in enumerate(out) if '"step"' in line]
    i = rng.choice(steps)
    data = json.loads(out[i])
    plan, emitted, finished = data["plan"], data["emitted"], data["finished"]
    rids = [rid for rid, _ in plan]
    kind = rng.randrange(14)
    if kind == 13:  # a smaller budget, S or K in the header
        header = json.loads(out[0])
        key = rng.choice(("token_budget", "max_seqs", "kv_tokens"))
        config = header["config"]
        config[key] = max(1, min(config[key], rng.choice((4, 8, 16, 64, 200, 1000))))
        out[0] = json.dumps(header)
        return out
    if kind == 0 and plan:
        plan[rng.randrange(len(plan))][1] += rng.choice((-1, 1, 2))
    elif kind == 1 and plan:
        plan.pop(rng.randrange(len(plan)))
    elif kind == 2 and plan:
        plan.append(list(rng.choice(plan)))
    elif kind == 3 and emitted:
        emitted.pop(rng.randrange(len(emitted)))
    elif kind == 4 and rids:
        emitted.append(rng.choice(rids))
    elif kind == 5 and finished:
        rid = finished.pop(rng.randrange(len(finished)))
        j = min(steps[-1], max(steps[0], i + rng.choice((-1, 1))))
        other = json.loads(out[j])
        other["finished"].append(rid)
        out[j] = json.dumps(other)
    elif kind == 6 and rids:
        finished.append([rng.choice(rids), rng.choice(("stop", "cancel", "length"))])
    elif kind == 7 and data.get("add") and i + 1 < len(out) and '"step"' in out[i + 1]:
        later = json.loads(out[i + 1])
        later["add"] = data.pop("add") + later.get("add", [])
        out[i + 1] = json.dumps(later)
    elif kind == 8 and rids:
        data["admit"] = [[rng.choice(rids), rng.choice((0, 1, 16))]]
    elif kind == 9 and rids:
        data["preempt"] = [[rng.choice(rids), rng.choice(("recompute", "swap"))]]
    elif kind == 10 and len(plan) > 1:
        rng.shuffle(plan)
    elif kind == 11 and data.get("add"):
        entry = rng.choice(data["add"])
        entry[rng.choice((1, 2))] = rng.choice((1, 2, entry[1] * 2, entry[2] * 40))
    elif kind == 12:
        return mutate(mutate(out, rng), rng)
    out[i] = json.dumps(data)
    return out


def full_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every step judged in full."""
    monkeypatch.setattr(enginecheck, "decode_step", lambda judge, step: False)
    monkeypatch.setattr(enginecheck, "clean_step", lambda judge, step: False)


def test_the_shortcut_takes_most_steps_of_a_dense_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = {"decode": 0, "clean": 0, "full": 0}

    def decode(judge: enginecheck.Judge, step: object) -> bool:
        took = cleanstep.decode_step(judge, step)  # type: ignore[arg-type]
        taken["decode"] += took
        return took

    def clean(judge: enginecheck.Judge, step: object) -> bool:
        took = cleanstep.clean_step(judge, step)  # type: ignore[arg-type]
        taken["clean" if took else "full"] += 1
        return took

    monkeypatch.setattr(enginecheck, "decode_step", decode)
    monkeypatch.setattr(enginecheck, "clean_step", clean)
    verdict = check_engine_trace(dense())
    assert verdict.ok
    assert sum(taken.values()) == verdict.steps
    assert taken["decode"] > 0.9 * verdict.steps, taken


@functools.cache
def cases() -> list[tuple[str, list[str]]]:
    rng = random.Random(26)
    return [(name, case) for name, lines in bases().items()
            for case in [lines] + [mutate(lines, rng) for _ in range(MUTANTS)]]


@functools.cache
def full_verdicts() -> list[object]:
    with pytest.MonkeyPatch.context() as full:
        full_only(full)
        return [verdict_of(case) for _, case in cases()]


def test_the_shortcut_never_changes_a_verdict() -> None:
    differ = [(name, got, expected) for (name, case), expected in zip(cases(), full_verdicts(), strict=True)
              if (got := verdict_of(case)) != expected]
    assert not differ, differ[:3]
    broken = {rule for v in full_verdicts() if v[0] != "TraceError" for rule in v[6]}  # type: ignore[index]
    assert broken == set(RULE_IDS) | {"PROTOCOL"}  # the mutations break every rule: not a comparison of clean traces


# Each a check of the shortcut, planted out of it (its `return False` or `return None` made `pass`):
# the comparison above catches it.
PLANTED = [
    "return None  # FCFS",
    "return None  # FCFS, or not a whole prompt (then the full judgement)",
    "return False  # KV: its KV back before its last token",
    "return False  # KV: its last token is not out",
    "return None  # WORK-CONSERVING: the waiting head fits",
    "return None  # PREFILL-ONCE (a chunk past the known tokens), FIRST-TOKEN",
    "return None  # FIRST-TOKEN: a token from a chunk that does not reach the known tokens",
]


@pytest.mark.parametrize("check", PLANTED)
def test_a_shortcut_without_one_of_its_checks_is_caught(monkeypatch: pytest.MonkeyPatch, check: str) -> None:
    source = inspect.getsource(cleanstep).splitlines()
    assert sum(line.strip() == check for line in source) >= 1
    planted = [line.replace(check, "pass") if line.strip() == check else line for line in source]
    module = types.ModuleType("planted")
    module.__package__ = cleanstep.__package__
    exec(compile("\n".join(planted), "planted", "exec"), module.__dict__)
    monkeypatch.setattr(enginecheck, "decode_step", module.decode_step)
    monkeypatch.setattr(enginecheck, "clean_step", module.clean_step)
    caught = sum(outcome(case) != expected for (_, case), expected in zip(cases(), full_verdicts(), strict=True))
    assert caught > 0


def outcome(lines: list[str]) -> object:
    """The verdict, or the crash of a planted shortcut (a different outcome too)."""
    try:
        return verdict_of(lines)
    except Exception as error:  # any crash differs from the verdict
        return ("crash", repr(error))
