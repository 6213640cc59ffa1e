"""Tensor parallelism over 4 ranks (gloo, CPU, tiny model, fp32): exactness of continuous batching
against an unbatched one-rank run at budgets 1, 7, 64 and 2,048, and the same check failing on a
causal mask that sees one future token; every real-path check failing on a wrong scheduler and on a
broken executor at TP=4; a rank that raises, dies or hangs stops the run, naming that rank."""

from __future__ import annotations

import multiprocessing
import re
import time
from dataclasses import replace

import pytest

pytest.importorskip("torch")

from stallfree.executor.engine.broken import BROKEN
from stallfree.executor.engine.checks import REAL_PATH_RULES
from stallfree.executor.engine.job import Job, JobResult
from stallfree.executor.exactness.equivalence import compare, reference_model
from stallfree.executor.exactness.isolation import isolation, perturbed
from stallfree.executor.runs.launch import RankFailure, launch
from stallfree.executor.runs.runspec import RunSpec
from stallfree.faults import FAULTS
from stallfree.spec import Arrival, Config, Workload

BUDGETS = (1, 7, 64, 2048)
# Prompts of 1 to 41 tokens arriving over 4 steps; at budget 7 the long ones take several chunks.
REQUESTS = (Arrival(0, 5, 4, 0), Arrival(1, 23, 3, 0), Arrival(2, 41, 5, 1), Arrival(3, 1, 3, 2),
            Arrival(4, 9, 2, 4))
HAND = Workload(Config(8, 4, 64), (Arrival(0, 8, 6, 0), Arrival(1, 20, 3, 1), Arrival(2, 3, 1, 1)))
LAUNCH_TIMEOUT_S = 600.0  # only turns a hang into a failure: starting ranks on a loaded machine is slow
EVENT_LIMIT_S = 300.0  # the same, for an event waited on (every rank gone, both ranks started)


def equivalence_job(budget: int, variant: str | None = None) -> Job:
    return Job(Workload(Config(budget, 4, 256), REQUESTS), keep_logits=True, variant=variant,
               label=f"budget {budget}")


def control_jobs() -> tuple[Job, ...]:
    wrong = tuple(Job(HAND, f"stallfree.faults.catalog:{FAULTS[r].__name__}", (), label=r) for r in REAL_PATH_RULES)
    broken = tuple(Job(HAND, variant=name, label=name) for name in sorted(BROKEN))
    return wrong + broken


# The last jobs of the launch: the future-token mask at budget 7 (chunks not from position 0), then
# rank 2 raises at its second batch.
FUTURE = replace(equivalence_job(7, "SeeOneFutureToken"), label="future")
ISOLATED = (replace(equivalence_job(7), label="isolation"),
            replace(perturbed(equivalence_job(7), 2, 0, 2048), label="isolation, rid 2 perturbed"))
CRASH = Job(HAND, crash=(2, 1, "raise"), label="crash")


@pytest.fixture(scope="module")
def tp4_launch() -> tuple[RunSpec, RankFailure]:
    """One launch of 4 ranks runs every job in turn (starting the ranks is most of the cost), and
    ends with a rank raising: the failure carries the results of the jobs before it."""
    spec = RunSpec((*(equivalence_job(b) for b in BUDGETS), *control_jobs(), FUTURE, *ISOLATED, CRASH), tp=4,
                   dtype="fp32")
    with pytest.raises(RankFailure) as failure:
        launch(spec, timeout_s=LAUNCH_TIMEOUT_S)
    return spec, failure.value


@pytest.fixture(scope="module")
def tp4(tp4_launch) -> tuple[RunSpec, list[JobResult]]:  # type: ignore[no-untyped-def]
    spec, failure = tp4_launch
    assert len(failure.results) == len(spec.jobs) - 1, failure
    return spec, failure.results


@pytest.fixture(scope="module")
def reference(tp4):  # type: ignore[no-untyped-def]
    return reference_model(tp4[0])


@pytest.mark.parametrize("budget", BUDGETS)
def test_exactness_tp4_batched_equals_unbatched_one_rank(tp4, reference, budget: int) -> None:  # type: ignore[no-untyped-def]
    """TOKENS, FIRST-TOKEN: every request's tokens at TP=4 under continuous batching equal those of
    the whole request run on one rank; logits within fp32 rounding."""
    spec, results = tp4
    result = results[BUDGETS.index(budget)]
    assert result.ok, result.violation
    report = compare(spec, result, reference)
    assert report.ok, report.summary()
    assert report.num_tokens == sum(a.max_new for a in REQUESTS)
    assert report.num_equal == report.num_tokens and report.max_logit_diff < report.logit_tol < 1e-4


def test_exactness_fails_on_future_token_mask_at_tp4(tp4, reference) -> None:  # type: ignore[no-untyped-def]
    """Causality (negative control): chunks that see one future position break no step check (the
    cell is written, finite) but move the logits far past fp32 rounding."""
    result = by_label(tp4, "future")
    assert result.ok, result.violation
    report = compare(tp4[0], result, reference)
    assert not report.ok and report.max_logit_diff > 100 * report.logit_tol, report.summary()


def test_isolation_at_tp4(tp4) -> None:  # type: ignore[no-untyped-def]
    """Changing one prompt token of rid 2 leaves every other request's logits bit-for-bit equal at TP=4
    (all-reduces and gathers are elementwise: a row is computed from its own request's numbers)."""
    report = isolation(by_label(tp4, "isolation"), by_label(tp4, "isolation, rid 2 perturbed"), 2)
    assert report.ok is True and report.num_requests == len(REQUESTS) - 1, report.summary()


def by_label(tp4, label: str) -> JobResult:  # type: ignore[no-untyped-def]
    spec, results = tp4
    return results[[job.label for job in spec.jobs].index(label)]


def test_equivalence_check_can_fail(tp4, reference) -> None:  # type: ignore[no-untyped-def]
    """Negative control: one token replaced by the reference's least likely token is a mismatch."""
    spec, results = tp4
    result = results[BUDGETS.index(64)]
    request = result.requests[2]
    good = list(request.outputs)
    import torch

    worst = int(torch.from_numpy(request.logits[1]).argmin())
    request.outputs[1] = worst
    try:
        report = compare(spec, result, reference)
    finally:
        request.outputs[:] = good
    assert not report.ok and report.mismatches[0].rid == 2


@pytest.mark.parametrize("index", range(len(REAL_PATH_RULES) + len(BROKEN)))
def test_real_path_checks_fail_at_tp4(tp4, index: int) -> None:  # type: ignore[no-untyped-def]
    """Negative controls at TP=4: each wrong scheduler (monitor silenced) and each broken executor
    is caught on the real path, naming its rule."""
    spec, results = tp4
    job = spec.jobs[len(BUDGETS) + index]
    rule = BROKEN[job.variant].breaks if job.variant else job.label
    violation = results[len(BUDGETS) + index].violation
    assert violation is not None and violation[0] == rule and violation[3] == "real path", (job.label, violation)


def test_rank_that_raises_stops_every_rank(tp4_launch) -> None:  # type: ignore[no-untyped-def]
    """A rank that raises mid-run (TP=4): every rank stops, the failure names that rank and its error
    (not a peer whose collective was cut off), and nothing is left running."""
    _, failure = tp4_launch
    assert failure.rank == 2 and "injected fault" in failure.cause, failure
    raised_at = float(re.search(r"\(at ([0-9.]+)\)", failure.cause).group(1))  # type: ignore[union-attr]
    assert failure.stopped_at is not None and failure.stopped_at >= raised_at
    assert _all_gone()


def test_rank_that_dies_stops_every_rank() -> None:
    """A rank that dies without a word (here at TP=2: starting ranks is most of this test's time):
    the failure names it and its exit code; every rank is stopped."""
    with pytest.raises(RankFailure) as failure:
        launch(RunSpec((Job(HAND, crash=(1, 1, "exit")),), tp=2, dtype="fp8"), timeout_s=LAUNCH_TIMEOUT_S)
    assert failure.value.rank == 1 and "exited with code 3" in failure.value.cause, failure.value
    assert _all_gone()


def _all_gone() -> bool:
    """True once no rank process of this one is left, waited on (EVENT_LIMIT_S only fails a hang)."""
    deadline = time.monotonic() + EVENT_LIMIT_S
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not multiprocessing.active_children()


def test_stopped_rank_is_named() -> None:
    """A rank stopped by SIGSTOP (alive, silent; its peers wait in a collective, still beating): the
    launcher names that rank, by its progress or its heartbeat, and stops every rank."""
    with pytest.raises(RankFailure) as failure:
        launch(RunSpec((Job(HAND, crash=(1, 1, "stop")),), tp=2, dtype="fp32"), timeout_s=LAUNCH_TIMEOUT_S)
    f = failure.value
    assert f.rank == 1 and ("fell behind" in f.cause or "no heartbeat" in f.cause), f
    assert _all_gone()


def test_rank_hung_inside_a_step_is_named_by_progress(capsys) -> None:  # type: ignore[no-untyped-def]
    """`stallfree run --tp 4 --fault hang:2@3`: rank 2 sleeps inside step 3 (its heartbeat goes on;
    its peers wait for it in a collective). The launcher names rank 2, and no other, as the rank that
    fell behind in step 3, before the collectives' own timeout; exit 3; no rank is left running."""
    from stallfree.main import main

    code = main(["run", "--tp", "4", "--fault", "hang:2@3", "--no-equivalence", "--timeout", str(LAUNCH_TIMEOUT_S)])
    err = capsys.readouterr().err
    assert code == 3, err
    failed = [line for line in err.splitlines() if line.startswith("stallfree run: rank")]
    assert len(failed) == 1 and failed[0].startswith("stallfree run: rank 2 failed: fell behind: stuck in step 3"), err
    assert _all_gone()


def test_leader_hung_inside_a_step_is_named_by_progress() -> None:
    """Rank 0 (the scheduler's rank) asleep before it sends step 2's batch: it is the one named."""
    with pytest.raises(RankFailure) as failure:
        launch(RunSpec((Job(HAND, crash=(0, 2, "hang")),), tp=2, dtype="fp32"), timeout_s=LAUNCH_TIMEOUT_S)
    assert failure.value.rank == 0 and "fell behind: stuck in step 2" in failure.value.cause, failure.value
    assert _all_gone()


def test_killing_the_launcher_ends_every_rank(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL to the launcher (no cleanup can run in it): every rank ends (waited on: a rank still
    importing torch when its launcher died ends once it looks, which on a loaded machine takes long)."""
    import os
    import signal
    import subprocess
    import sys

    script = tmp_path / "launcher.py"
    script.write_text(
        "from stallfree.executor.engine.job import Job\n"
        "from stallfree.executor.runs.launch import launch\n"
        "from stallfree.executor.runs.runspec import RunSpec\n"
        "from stallfree.spec import Arrival, Config, Workload\n"
        "if __name__ == '__main__':\n"
        "    w = Workload(Config(1, 1, 4096), (Arrival(0, 4000, 1, 0),))\n"  # 4,000 steps of one token
        "    launch(RunSpec((Job(w),), tp=2, dtype='fp32'), timeout_s=600)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, text=True)
    try:
        ranks = _children_once_running(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=EVENT_LIMIT_S)
        deadline = time.monotonic() + EVENT_LIMIT_S
        while time.monotonic() < deadline and any(_alive(pid) for pid in ranks):
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in ranks), ranks
    finally:
        if proc.poll() is None:
            proc.kill()


def _children_once_running(pid: int) -> list[int]:
    """The launcher's two rank processes, once both have loaded torch (importing the rest, loading the
    model or running: the kernel's parent-death signal, or the heartbeat's look at its parent, ends
    a rank at any of these)."""
    deadline = time.monotonic() + LAUNCH_TIMEOUT_S
    ranks: list[int] = []
    while time.monotonic() < deadline:
        children = [int(c) for c in _read(f"/proc/{pid}/task/{pid}/children").split()]
        ranks = [r for r in children if "spawn_main" in _read(f"/proc/{r}/cmdline")]
        if len(ranks) == 2 and all("libtorch" in _read(f"/proc/{r}/maps") for r in ranks):
            return ranks
        time.sleep(0.2)
    raise AssertionError(f"the ranks of {pid} never started: {ranks}")


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
