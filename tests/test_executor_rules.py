"""The rules on the real step path, one rank, in process: they hold for the reference scheduler,
and each check fails, naming its rule, on a deliberately wrong scheduler (stallfree.faults, with the
monitor silenced so that the plan reaches the model) and on a deliberately broken executor."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from stallfree.executor.engine.broken import BROKEN
from stallfree.executor.engine.checks import REAL_PATH_RULES
from stallfree.executor.engine.job import Job, JobResult
from stallfree.executor.layers.group import Group
from stallfree.executor.models.model import Transformer
from stallfree.executor.runs.launch import run_local
from stallfree.executor.runs.runspec import RunSpec
from stallfree.executor.runs.workloads import long_prompt_amid_decodes
from stallfree.faults import FAULTS
from stallfree.spec import Arrival, Config, Workload

# The contract's hand trace (budget 8, a stream decoding, a 20-token prompt arrives) with a third
# request that finishes early, so that freed KV is reused while others still read theirs.
HAND = Workload(Config(token_budget=8, max_seqs=4, kv_tokens=64),
                (Arrival(0, 8, 6, 0), Arrival(1, 20, 3, 1), Arrival(2, 3, 1, 1), Arrival(3, 5, 2, 3)))
NO_MONITOR: tuple[str, ...] = ()  # the monitor follows the protocol but judges nothing


MODELS: dict[str, Transformer] = {}  # built once for the module: the runs reset only the KV cache


def play(*jobs: Job, dtype: str = "fp32") -> list[JobResult]:
    spec = RunSpec(tuple(jobs), tp=1, dtype=dtype)
    if dtype not in MODELS:
        MODELS[dtype] = spec.build(Group())
    return run_local(spec, MODELS[dtype]).results


def fault(rule: str) -> str:
    return f"stallfree.faults.catalog:{FAULTS[rule].__name__}"


def test_real_path_rules_hold_for_the_reference() -> None:
    """BUDGET, PREFILL-ONCE, FIRST-TOKEN, KV, DECODE-FIRST hold on every step, every KV cell is free
    at the end, and a stream decoding when the long prompt arrives gets a token every step."""
    (hand,) = play(Job(HAND), dtype="fp8")
    (default,) = play(Job(long_prompt_amid_decodes()))
    for result in (hand, default):
        assert result.ok, result.violation
        assert result.steps[-1].free_kv == result.steps[0].free_kv + sum(
            len(r.prompt) + len(r.outputs) for r in result.requests.values() if r.admitted_at == 0)
    assert [s.num_tokens for s in hand.steps[1:4]] == [8, 8, 8]
    assert hand.requests[1].emitted_at[0] == 3  # chunks of 7, 7, 6; the first token from the third
    stream = default.requests[0]
    assert stream.tpot_steps == 1.0
    assert default.steps[-1].free_kv == 2048


@pytest.mark.parametrize("rule", REAL_PATH_RULES)
def test_real_path_catches_wrong_scheduler(rule: str) -> None:
    """Negative control: FAULTS[rule] with the monitor silenced is caught on the real path."""
    (result,) = play(Job(HAND, fault(rule), NO_MONITOR))
    assert result.violation is not None
    assert result.violation[0] == rule and result.violation[3] == "real path", result.violation


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_real_path_catches_broken_executor(name: str) -> None:
    """Negative control: each broken executor, driven by the correct reference, breaks its rule."""
    (result,) = play(Job(HAND, variant=name))
    assert result.violation is not None
    assert result.violation[0] == BROKEN[name].breaks and result.violation[3] == "real path", result.violation


def test_budget_plan_refused_before_it_runs() -> None:
    """A plan breaking a rule is refused by the monitor, with its rule ID, before any forward pass."""
    (result,) = play(Job(HAND, fault("BUDGET")))
    assert result.violation is not None
    rule, step, _, where = result.violation
    assert (rule, where) == ("BUDGET", "monitor")
    assert [s.step for s in result.steps] == list(range(step))  # the refused step never ran


def test_any_plain_protocol_scheduler_drives_the_executor() -> None:
    (result,) = play(Job(HAND, "stallfree.variants.stepwise:Stepwise"))
    assert result.ok, result.violation


def test_tokens_greedy_and_seeded_sampling_do_not_depend_on_batching() -> None:
    """TOKENS: with the same seed, each request's tokens are the same at budget 1 and budget 64,
    greedy or sampled."""
    wide = Workload(Config(64, 4, 256), HAND.requests)
    narrow = Workload(Config(1, 4, 256), HAND.requests)
    for temperature in (0.0, 1.0):
        a, b = play(Job(wide, temperature=temperature), Job(narrow, temperature=temperature))
        assert {r: q.outputs for r, q in a.requests.items()} == {r: q.outputs for r, q in b.requests.items()}
