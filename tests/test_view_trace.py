"""`stallfree trace` explains itself: arrivals and why each request waits, milliseconds from the
cost model, the plan that broke a rule printed under its step, keeping going past it, and the
policy names `stallfree simulate` accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallfree.costs import Roofline, StepLoad
from stallfree.main import main
from stallfree.spec import RULE_IDS

SKIP_AHEAD = ["trace", "--scheduler", "stallfree.faults.catalog:SkipAhead", "--kv", "25",
              "--request", "0:10:5", "--request", "1:10:8", "--request", "2:2:2"]


def out_of(argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 0) -> list[str]:
    assert main(argv) == code
    return capsys.readouterr().out.splitlines()


def step_row(lines: list[str], step: int) -> list[str]:
    return [line for line in lines if line[:5].strip() == str(step)]


def test_arrivals_and_waiting_reasons_are_columns(capsys: pytest.CaptureFixture[str]) -> None:
    lines = out_of(["trace", "--kv", "25", "--request", "0:10:5", "--request", "1:10:8", "--request", "2:2:2"],
                   capsys)
    assert "arrived" in lines[1] and lines[1].endswith("waiting")
    [step0] = step_row(lines, 0)
    assert "r0 r1 r2" in step0 and step0.endswith("r1 not enough free KV, r2 behind r1")


def test_the_broken_plan_is_printed_under_its_step(capsys: pytest.CaptureFixture[str]) -> None:
    lines = out_of(SKIP_AHEAD, capsys, code=1)
    [step1] = step_row(lines, 1)
    assert "r0 chunk 8-10, r2 chunk 0-2 (admitted)" in step1 and "(not run)" in step1
    marker = lines[lines.index(step1) + 1]
    assert marker.strip() == "^ FCFS broken at step 1: admitted rid 2 while rid 1 waited ahead of it"
    assert not step_row(lines, 2)  # the run stopped there


def test_keep_going_replays_past_the_broken_rule(capsys: pytest.CaptureFixture[str]) -> None:
    lines = out_of([*SKIP_AHEAD, "--keep-going"], capsys, code=1)
    assert any("keeping going: replaying with FCFS unchecked" in line for line in lines)
    assert len(step_row(lines, 1)) == 2  # the broken plan, then the same plan run
    assert step_row(lines, 14)[0].split()[-2] == "25"  # the last step: all KV free again
    verdicts = {line.split()[0]: line for line in lines if line.split() and line.split()[0] in RULE_IDS}
    assert verdicts["FCFS"].startswith("FCFS             BROKEN at step 1")
    assert all("holds (15 steps)" in v for rule, v in verdicts.items() if rule != "FCFS")


def test_keep_going_writes_one_trace_that_check_trace_judges(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "run.jsonl"
    out_of([*SKIP_AHEAD, "--keep-going", "--jsonl", str(trace)], capsys, code=1)
    steps = [line for line in trace.read_text().splitlines() if '"step"' in line]
    assert len(steps) == 15  # each step once, the replayed one included
    lines = out_of(["check-trace", str(trace)], capsys, code=1)
    assert any(line.startswith("FCFS") and "at step 1" in line for line in lines)


def roofline(mode: str = "floor") -> Roofline:
    from stallfree.costs import Deployment, gpu, model

    return Roofline(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8", "bf16"), mode)


def ms_cells(lines: list[str]) -> list[str]:
    """The ms column, right-aligned under its header, of every step row."""
    header = next(line for line in lines if line.lstrip().startswith("step"))
    end = header.index(" ms ") + 3
    return [line[end - 7:end].strip() for line in lines if line[:5].strip().isdigit()]


def test_ms_column_is_the_cost_model_step_time(capsys: pytest.CaptureFixture[str]) -> None:
    lines = out_of(["trace", "--example", "hand", "--ms"], capsys)
    assert lines[1].startswith("ms: Llama 3.3 70B") and " ms " in lines[2]
    floor = f"{roofline().decode_floor_seconds * 1e3:.1f}"  # 8 tokens: the weight read bounds the step
    assert ms_cells(lines) == [floor] * 6
    lines = out_of(["trace", "--budget", "2048", "--kv", "4096", "--request", "0:2048:1", "--ms"], capsys)
    full = roofline().step_seconds(StepLoad(2048, StepLoad.chunk_pairs(0, 2048), 0)) * 1e3
    assert ms_cells(lines)[0] == f"{full:.1f}" != floor  # past the ridge: compute bound


def test_policy_names_of_simulate_are_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    lines = out_of(["trace", "--scheduler", "prefill-first", "--max-seqs", "2", "--request", "0:8:6",
                    "--request", "1:20:3@1"], capsys, code=1)
    assert lines[0].endswith("scheduler prefill-first")
    assert any(line.startswith("DECODE-FIRST     BROKEN at step 1") for line in lines)
    assert out_of(["trace", "--scheduler", "reference", "--example", "hand"], capsys)[-1].endswith("holds (6 steps)")
    out_of(["trace", "--scheduler", "unchunked", "--example", "hand"], capsys, code=1)


def test_unknown_scheduler_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "--scheduler", "prefil-first", "--example", "hand"]) == 2
    assert "--scheduler 'prefil-first'" in capsys.readouterr().err


CRASHES_ON_SECOND_STEP = """
from stallfree.reference import Scheduler


class Crash:
    \"\"\"Plans like the reference, then raises inside complete() at step 1.\"\"\"

    def __init__(self, **config):
        self.inner = Scheduler(**config)
        self.steps = 0

    def add(self, rid, prompt_len, max_new):
        self.inner.add(rid, prompt_len, max_new)

    def schedule(self):
        return self.inner.schedule()

    def complete(self, plan):
        self.steps += 1
        if self.steps == 2:
            raise KeyError("lost track")
        return self.inner.complete(plan)
"""


def test_a_scheduler_that_raises_is_reported_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A real module file, as a user's scheduler is: it runs in a host process of its own, which
    # imports it by the path this process has.
    (tmp_path / "crashing_for_trace.py").write_text(CRASHES_ON_SECOND_STEP)
    monkeypatch.syspath_prepend(str(tmp_path))
    lines = out_of(["trace", "--example", "hand", "--scheduler", "crashing_for_trace:Crash", "--keep-going"],
                   capsys, code=3)  # a crash of the checked scheduler, not a broken rule
    assert "^ the scheduler raised at step 1: complete() raised KeyError: 'lost track'" in [x.strip() for x in lines]
    assert lines[-1] == "CRASH            BROKEN at step 1: complete() raised KeyError: 'lost track'"
    assert "BUDGET           not judged (held until step 1, where CRASH stopped the run; nothing judged after)" in lines
