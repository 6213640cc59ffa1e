"""A user's paged or prefix scheduler runs in a host process of its own, as a reservation one does
(`cli/commands/hosting.py`): the plan's `preempted` rids and `cached` claims, the pool it declares and
shows, its waiting and running lines and a prefix request's content cross the pipe as data, and the
monitor judges them as it judges stallfree's own in process. Each user scheduler is a module file in
tmp_path, imported by its path (the child's working folder); each run a child `stallfree trace`,
waited on as an event (the limit only turns a hang into a failure)."""

from __future__ import annotations

import functools
from pathlib import Path

import hostile
import pytest
from hostile import EVENT_LIMIT_S, assert_clean, assert_refused

spawn = functools.partial(hostile.spawn, timeout=EVENT_LIMIT_S)

PAGED = ["--request", "0:3:8", "--request", "1:3:8", "--request", "2:2:2@1", "--budget", "4", "--kv", "12"]
PREFIX = ["--workload", str(Path(__file__).parent.parent / "docs" / "examples" / "prefix-hits.json")]

USER = """
import ctypes
import stallfree.spec.paged.monitor
from stallfree.faults.paged import *  # noqa: F403  the registry's paged faults, as a user's own module
from stallfree.paged import small_blocks  # noqa: F401
from stallfree.prefix import small_blocks as prefix_small  # noqa: F401
from stallfree.prefix.faults import HitOneMore, ChargeCached  # noqa: F401
from stallfree.prefix import Scheduler as PrefixScheduler


class PatchesTheJudge(PreemptOldest):  # noqa: F405  in process, this would silence every paged rule
    def schedule(self):
        stallfree.spec.paged.monitor.judge = lambda *args, **kwargs: None
        return super().schedule()


class LongCCall(PagedFault):  # noqa: F405  the paged scheduler on the faults' pool
    def schedule(self):
        ctypes.CDLL(None).sleep(3600)  # one C call holding the thread: no signal handler runs meanwhile


def raising(base, call, at):  # base whose `call` raises on its at-th call (never when at is 0: the control)
    def method(self, *args):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == at:
            raise KeyError("lost track")
        return getattr(super(made, self), call)(*args)
    made = type(f"{base.__name__}Raises", (base,), {call: method})
    return made


class PrefixFault(PrefixScheduler):  # the prefix scheduler on 2-token blocks, as its small_blocks
    def __init__(self, token_budget, max_seqs, kv_tokens):
        super().__init__(token_budget, max_seqs, kv_tokens, block_size=2, watermark=0)


class PagedSegfaults(PagedFault):  # noqa: F405  its second schedule() reads address 0
    def schedule(self):
        self.calls = getattr(self, "calls", 0) + 1
        return ctypes.string_at(0) if self.calls == 2 else super().schedule()


CALLS = ("schedule", "complete", "add")
PagedSchedule, PagedComplete, PagedAdd = (raising(PagedFault, c, 2) for c in CALLS)  # noqa: F405
PagedControl = raising(PagedFault, "schedule", 0)  # noqa: F405
PrefixSchedule, PrefixComplete, PrefixAdd = (raising(PrefixFault, c, 2) for c in CALLS)
PrefixControl = raising(PrefixFault, "schedule", 0)
"""


@pytest.fixture
def user(tmp_path: Path) -> Path:
    (tmp_path / "userpaged.py").write_text(USER)
    return tmp_path


def verdicts(out: str) -> list[str]:
    """The report less its first line (which names the target as given)."""
    return out.splitlines()[1:]


CASES = [
    ("stallfree.paged:small_blocks", "small_blocks", PAGED, None),  # the control: every rule holds
    ("stallfree.faults.paged:PreemptOldest", "PreemptOldest", PAGED, "PREEMPT-BOUND    BROKEN"),  # plan.preempted
    ("stallfree.faults.paged:RequeueAtBack", "RequeueAtBack", PAGED, "PREEMPT-ORDER    BROKEN"),  # the lines
    ("stallfree.faults.paged:LeakOnEnd", "LeakOnEnd", PAGED, "BLOCKS           BROKEN"),  # free_blocks
    ("stallfree.faults.paged:IgnoreWatermark", "IgnoreWatermark", PAGED, "WATERMARK        BROKEN"),  # the pool
    ("stallfree.prefix:small_blocks", "prefix_small", PREFIX, None),
    ("stallfree.prefix.faults:HitOneMore", "HitOneMore", PREFIX, "HIT-SAME-TOKENS  BROKEN"),  # plan.cached
    ("stallfree.prefix.faults:ChargeCached", "ChargeCached", PREFIX, "CACHED-NOT-CHARGED BROKEN"),
]


@pytest.mark.parametrize(("own", "name", "workload", "broken"), CASES, ids=[c[1] for c in CASES])
def test_a_hosted_paged_or_prefix_scheduler_gets_the_verdict_it_gets_in_process(
        user: Path, own: str, name: str, workload: list[str], broken: str | None) -> None:
    in_process = spawn(["trace", "--scheduler", own, *workload], cwd=user)
    hosted = spawn(["trace", "--scheduler", f"userpaged:{name}", *workload], cwd=user)
    assert_clean(hosted)
    assert hosted.status == in_process.status == (0 if broken is None else 1), (hosted.out[-2000:], hosted.err[-2000:])
    assert verdicts(hosted.out) == verdicts(in_process.out)
    if broken is None:
        assert "BROKEN" not in hosted.out and "holds" in hosted.out
    else:
        assert broken in hosted.out


def test_a_paged_scheduler_that_swaps_the_paged_judge_is_judged_all_the_same(user: Path) -> None:
    """Hosted, the patch reaches only the host's copy of the monitor: the fault still breaks."""
    ran = spawn(["trace", "--scheduler", "userpaged:PatchesTheJudge", *PAGED], cwd=user)
    assert ran.status == 1, (ran.out[-2000:], ran.err[-2000:])
    assert "PREEMPT-BOUND    BROKEN at step 3: the oldest running request, rid 0, was preempted" in ran.out


def test_a_paged_scheduler_stuck_in_one_c_call_is_stopped_naming_the_call(user: Path) -> None:
    ran = spawn(["trace", "--scheduler", "userpaged:LongCCall", *PAGED, "--timeout", "1"], cwd=user)
    assert_refused(ran, "schedule() did not return within 1 s", status=3)
    assert "TIMEOUT          BROKEN at step 0" in ran.out


def test_a_design_the_targets_module_registers_itself_is_still_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy design exists only once its module is imported (with this variable set, its module registers
    it): unknown to the oracle's registry, so that target is loaded in process (its rules are the user's
    code too), and its rule judges it. Hosted, the design would be unknown: exit 2."""
    monkeypatch.setenv("STALLFREE_TEST_TOY_DESIGN", "1")
    ran = spawn(["trace", "--scheduler", "test_toy_design:Fault", "--request", "0:4:3", "--request", "1:4:3",
                 "--budget", "8", "--max-seqs", "2"])
    assert_clean(ran)
    assert ran.status == 1, (ran.out[-2000:], ran.err[-2000:])
    assert "ONE-AT-A-TIME" in ran.out and "BROKEN" in ran.out


RAISES = [  # (the user's class, the workload, the call that raises, the step it raises at)
    ("PagedSchedule", PAGED, "schedule()", 1), ("PagedComplete", PAGED, "complete()", 1),
    ("PagedAdd", PAGED, "add()", 0),
    ("PrefixSchedule", PREFIX, "schedule()", 1), ("PrefixComplete", PREFIX, "complete()", 1),
    ("PrefixAdd", PREFIX, "add()", None),
]


@pytest.mark.parametrize(("name", "workload", "call", "step"), RAISES, ids=[r[0] for r in RAISES])
def test_a_paged_or_prefix_scheduler_that_raises_gets_the_crash_verdict(
        user: Path, name: str, workload: list[str], call: str, step: int | None) -> None:
    """As the reservation design's (test_view_trace.py): the line under the table, every rule not judged
    past the step, the CRASH verdict, the stderr line naming the target, exit 3; no internal error."""
    ran = spawn(["trace", "--scheduler", f"userpaged:{name}", *workload], cwd=user)
    assert_clean(ran)
    assert ran.status == 3, (ran.out[-2000:], ran.err[-2000:])
    assert "internal error" not in ran.err
    crash = [line for line in ran.out.splitlines() if line.startswith("CRASH ")]
    assert len(crash) == 1 and crash[0].endswith(f"{call} raised KeyError: 'lost track'"), ran.out[-2000:]
    at = int(crash[0].split("at step ")[1].split(":")[0])
    assert step is None or at == step
    assert f"^ the scheduler raised at step {at}: {call} raised KeyError: 'lost track'" in ran.out
    assert f"not judged (held until step {at}, where CRASH stopped the run; nothing judged after)" in ran.out
    assert "holds" not in ran.out
    assert f"stallfree trace: userpaged:{name} raised: {call} raised KeyError: 'lost track'" in ran.err


@pytest.mark.parametrize(("name", "workload"), [("PagedControl", PAGED), ("PrefixControl", PREFIX)])
def test_the_same_scheduler_not_raising_still_holds(user: Path, name: str, workload: list[str]) -> None:
    ran = spawn(["trace", "--scheduler", f"userpaged:{name}", *workload], cwd=user)
    assert ran.status == 0, (ran.out[-2000:], ran.err[-2000:])
    assert "BROKEN" not in ran.out and "holds" in ran.out and "CRASH" not in ran.out


def test_a_paged_scheduler_that_segfaults_is_a_crash_naming_the_signal(user: Path) -> None:
    ran = spawn(["trace", "--scheduler", "userpaged:PagedSegfaults", *PAGED], cwd=user)
    assert_refused(ran, "schedule()", "killed by SIGSEGV", status=3)
    assert "CRASH            BROKEN at step 1" in ran.out


SIMULATE = ["simulate", "--limit", "60", "--kv", "3000", "--scheduler"]  # preempts twice: the preemptions cross too


def test_simulate_runs_a_hosted_paged_scheduler_itself_not_the_designs_own(user: Path) -> None:
    """The user's class (the faults' pool, nothing changed) hosted gives the figures stallfree's same class
    gives in process; the design's own scheduler (16-token blocks) would give others."""
    def figures(out: str) -> list[str]:  # less the header naming the target and the seconds it took
        return [line for line in out.splitlines()[1:] if not line.startswith("simulated in")]

    hosted = spawn([*SIMULATE, "userpaged:PagedControl"], cwd=user)
    in_process = spawn([*SIMULATE, "stallfree.faults.paged:PagedFault"], cwd=user)
    own = spawn([*SIMULATE, "paged"], cwd=user)
    assert hosted.status == in_process.status == own.status == 0, (hosted.err[-2000:], in_process.err[-2000:])
    assert hosted.out.startswith("trace conv[:60], policy userpaged:PagedControl:")
    assert "preemptions: 2;" in hosted.out
    assert figures(hosted.out) == figures(in_process.out) != figures(own.out)


def test_simulate_of_a_paged_scheduler_that_raises_is_a_crash(user: Path) -> None:
    ran = spawn([*SIMULATE, "userpaged:PagedSchedule"], cwd=user)
    assert_refused(ran, "userpaged:PagedSchedule crashed: KeyError: 'lost track'", status=3)
