"""The paged design on the real step path (tiny model, one rank, fp32): KV in blocks gathered
through each request's block table, blocks given back and reused, preemption and recompute on the
model. A preempted-and-recomputed request emits exactly the tokens (and, within fp32 rounding, the
logits) of an unpreempted run (RECOMPUTE), and no step reads a block after it was given back
(BLOCKS); each check fails on a broken executor or a wrong paged scheduler."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")

from tiny_runs import model, play

from stallfree.executor.engine.job import Job
from stallfree.executor.exactness.equivalence import compare
from stallfree.executor.exactness.recompute import recompute_exactness
from stallfree.executor.runs.runspec import RunSpec
from stallfree.executor.runs.workloads import preempting
from stallfree.spec import Arrival, Cancel, Config, Workload

PAGED = "stallfree.paged:Scheduler"
SMALL = preempting()  # 6 blocks of 16: rid 2 is preempted at step 13
EXAMPLE = Path(__file__).parents[1] / "docs" / "examples" / "preempting.json"
ROOMY = Workload(Config(64, 8, 2048), SMALL.requests)  # never preempts


def job(workload: Workload = SMALL, **kwargs: object) -> Job:
    return Job(workload, PAGED, keep_logits=True, **kwargs)  # type: ignore[arg-type]


def test_the_documented_workload_is_the_preempting_one() -> None:
    assert Workload.loads(EXAMPLE.read_text()) == SMALL
    assert json.loads(EXAMPLE.read_text()) == SMALL.to_json()


def test_preemption_gives_blocks_back_and_recompute_is_exact() -> None:
    """BLOCKS, RECOMPUTE: rid 2 is preempted after 13 tokens; its blocks go to the decodes of rids 0
    and 1; re-admitted, it prefills 33 positions (prompt and outputs) and goes on; every rule holds
    on the real path and in the paged monitor, and every request's tokens and logits equal those of
    the run that never preempts."""
    small, roomy = play(job(), job(ROOMY))
    assert small.ok and roomy.ok, (small.violation, roomy.violation)
    preempting_step = next(s for s in small.steps if s.preempted)
    assert (preempting_step.step, preempting_step.preempted) == (13, [2])
    r2 = small.requests[2]
    assert r2.num_preemptions == 1 and len(r2.outputs) == 24
    assert (2, 33) in small.steps[24].plan and small.steps[24].plan[0] == (2, 33)  # ahead of rid 3
    assert small.steps[-1].free_kv == 6  # every block back at the end
    held = set(small.requests[0].cells) | set(small.requests[1].cells)
    assert set(small.requests[3].cells) <= held and set(r2.cells) & held  # their blocks, reused
    report = recompute_exactness(small, roomy)
    assert report.ok is True and report.num_preempted == 1, report.summary()
    assert report.max_logit_diff <= report.logit_tol
    exact = compare(RunSpec((), tp=1, dtype="fp32"), small, model())
    assert exact.ok is True, exact.summary()


def test_recompute_that_drops_an_emitted_token_is_caught() -> None:
    """Negative control: a recompute that prefills the outputs less the first (the last repeated,
    so every length is right) passes every step check, yet emits other tokens than the
    unpreempted run (RECOMPUTE broken) and fails exactness."""
    broken, roomy = play(job(variant="RecomputeDropsOne"), job(ROOMY))
    assert broken.ok, broken.violation
    report = recompute_exactness(broken, roomy)
    assert report.ok is False and report.differ, report.summary()
    assert "rid 2" in report.differ[0]
    exact = compare(RunSpec((), tp=1, dtype="fp32"), broken, model())
    assert exact.ok is False


def test_recompute_is_not_judged_when_nothing_is_preempted() -> None:
    roomy, again = play(job(ROOMY), job(ROOMY))
    report = recompute_exactness(roomy, again)
    assert report.ok is None and "not judged" in report.summary()


# rid 2's 40-token prompt takes 3 of 7 blocks; its decode at position 48 needs a fourth, and as
# the newest it is its own victim: its 3 blocks are given back and stay free for a while.
SELF_PREEMPTING = Workload(Config(64, 8, 112), (*SMALL.requests[:2], Arrival(2, 40, 24, 0)))


@pytest.mark.parametrize(("workload", "holder"), [(SMALL, "rid 0 finished at step 23"),
                                                  (SELF_PREEMPTING, "rid 2 was preempted at step")])
def test_a_read_of_a_block_given_back_is_caught(workload: Workload, holder: str) -> None:
    """Negative control (BLOCKS reads): decodes that also read a cell of the latest block given back
    are refused on the real path, naming the block's last holder: on the preempting workload the
    preempted blocks go straight to the decodes, so the first free ones are a finished request's."""
    (result,) = play(job(workload, variant="ReadFreedBlock"))
    assert result.violation is not None
    rule, _, message, where = result.violation
    assert (rule, where) == ("BLOCKS", "real path") and holder in message, result.violation


def test_a_paged_scheduler_that_leaks_blocks_is_caught_on_the_real_path() -> None:
    """Negative control: LeakOnEnd (stallfree.faults.paged) keeps an ended request's blocks; with the
    monitor silenced, the executor's free blocks disagree with the scheduler's (BLOCKS)."""
    (result,) = play(Job(SMALL, "stallfree.faults.paged:LeakOnEnd", ()))
    assert result.violation is not None
    assert result.violation[0] == "BLOCKS" and result.violation[3] == "real path", result.violation


def test_stops_and_cancels_on_the_paged_path() -> None:
    """A stop and a cancel under the paged design: their blocks come back on that step (BLOCKS holds
    every step), the cancelled request emits nothing after, and a cancel of a preempted request,
    waiting to be recomputed, ends it without running it again."""
    (full,) = play(job())
    stop = full.requests[1].outputs[4]
    (result,) = play(job(stop_token=stop, cancels=(Cancel(2, 16),)))
    assert result.ok, result.violation
    assert result.requests[1].finish_reason == "stop" and len(result.requests[1].outputs) == 5
    r2 = result.requests.get(2)
    assert r2 is None or (r2.finish_reason == "cancel" and max(r2.emitted_at) < 16)
    changed = replace(job(), stop_token=stop, cancels=(Cancel(2, 16),))
    assert changed.cancels == (Cancel(2, 16),)


def test_a_paged_scheduler_that_runs_past_max_new_is_caught_on_the_real_path() -> None:
    """Negative control: OverRun (stallfree.faults.paged) keeps a request running one token past its
    max_new; with the monitor silenced, the executor ends the request at max_new and gives its blocks
    back, so the scheduler's free blocks disagree with the executor's on that step (BLOCKS), before
    any plan can name the ended request (which the real path refuses under TOKENS-KEPT)."""
    (result,) = play(Job(SMALL, "stallfree.faults.paged:OverRun", ()))
    assert result.violation is not None
    rule, _, message, where = result.violation
    assert rule == "BLOCKS" and where == "real path" and "the scheduler shows" in message, result.violation


def test_the_paged_real_path_names_the_paged_rules() -> None:
    """The chunk and read checks are RECOMPUTE's under the paged design (each residency's prefill, in
    order, each position once), the memory checks BLOCKS', the token checks TOKENS-KEPT's: its report
    names no rule the paged registry lacks, and a ledger built for it raises under those names."""
    from stallfree.executor.engine.checks import RealPathViolation, WriteLedger
    from stallfree.executor.engine.paged import PagedExecutor
    from stallfree.executor.runs.report import judgements
    from stallfree.spec.paged.rules import PAGED_RULE_IDS

    (small,) = play(job())
    sections, _ = judgements(small, None)
    real = [j.claim for j in sections["real path"]]
    assert set(real) <= set(PAGED_RULE_IDS) and {"RECOMPUTE", "BLOCKS"} <= set(real), real
    assert len(real) == len(set(real))
    import torch

    def writes(positions: list[int], cells: list[int]) -> Any:
        return SimpleNamespace(positions=torch.tensor(positions), write_cells=torch.tensor(cells))

    ledger = WriteLedger(PagedExecutor.memory_rule, PagedExecutor.prefill_rule)
    ledger.reserve(0, [5, 6])
    ledger.check(0, writes([0], [5]), [0])
    with pytest.raises(RealPathViolation) as twice:
        ledger.check(1, writes([1], [5]), [0])
    assert twice.value.rule == "RECOMPUTE"
    with pytest.raises(RealPathViolation) as unreserved:
        ledger.check(1, writes([0], [7]), [9])
    assert unreserved.value.rule == "BLOCKS"
