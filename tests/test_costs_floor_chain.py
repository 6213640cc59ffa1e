"""The contract's floor chain, reproduced by the cost model and by `stallfree budget`, figure by figure."""

from __future__ import annotations

import re

import pytest

from stallfree.costs import Deployment, Roofline, StepLoad, first_token, full_step, gpu, model
from stallfree.main import main
from stallfree.reference import Scheduler

MS = 1e3
CONTRACT_STEP_MS = {512: "9.1", 2048: "36.5", 8192: "146.0"}
CONTRACT_STEPS_TO_FIRST_TOKEN = {2048: 17, 8192: 5}
PROMPT_LEN = 32_768
NUM_DECODES = 64


@pytest.fixture(scope="module")
def floor() -> Roofline:
    return Roofline(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8"), "floor")


def test_floor_prefill_flops_and_peak(floor: Roofline) -> None:
    d = floor.deployment
    assert d.model.flops_per_token == pytest.approx(1.411e11)
    assert f"{d.peak_flops:.3g}" == "7.92e+15"


@pytest.mark.parametrize("budget", sorted(CONTRACT_STEP_MS))
def test_floor_step_of_budget(floor: Roofline, budget: int) -> None:
    assert f"{full_step(floor, budget) * MS:.1f}" == CONTRACT_STEP_MS[budget]


def test_floor_decode_only_step(floor: Roofline) -> None:
    assert floor.decode_floor_seconds == pytest.approx(70.55e9 / 4 / 3.35e12)
    assert f"{floor.decode_floor_seconds * MS:.1f}" == "5.3"
    # A step of 64 decodes is memory-bound: it costs the weight read, not 64 tokens of compute.
    assert floor.step_seconds(StepLoad(NUM_DECODES)) == floor.decode_floor_seconds


@pytest.mark.parametrize("budget", sorted(CONTRACT_STEPS_TO_FIRST_TOKEN))
def test_floor_steps_to_first_token(floor: Roofline, budget: int) -> None:
    chain = first_token(floor, budget, PROMPT_LEN, NUM_DECODES)
    assert chain.num_steps == CONTRACT_STEPS_TO_FIRST_TOKEN[budget]
    assert chain.worst_step_seconds == pytest.approx(full_step(floor, budget))


@pytest.mark.parametrize("budget", sorted(CONTRACT_STEPS_TO_FIRST_TOKEN))
def test_chain_matches_the_reference_scheduler(budget: int) -> None:
    """DECODE-FIRST and PARTIAL-NEXT are what make the chain true: count the reference's own steps."""
    sched = Scheduler(token_budget=budget, max_seqs=NUM_DECODES + 1, kv_tokens=10**6)
    for rid in range(NUM_DECODES):
        sched.add(rid, 1, 10**4)
    sched.complete(sched.schedule())  # 64 one-token prompts: all ready after one step
    sched.add(NUM_DECODES, PROMPT_LEN, 2)
    steps = 0
    while True:
        plan = sched.schedule()
        steps += 1
        assert sum(1 for _, n in plan if n == 1) >= NUM_DECODES  # every stream decodes each step
        if NUM_DECODES in sched.complete(plan):
            break
    assert steps == CONTRACT_STEPS_TO_FIRST_TOKEN[budget]


def test_budget_cli_prints_the_floor_table(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["budget", "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--tp", "4", "--dtype", "fp8",
                 "--budgets", "512,2048,8192", "--mode", "floor"])
    out = capsys.readouterr().out
    assert code == 0
    assert "prefill FLOPs per token = 2 x 70.55e9 = 1.41e11; peak = 4 x 1,979 TFLOP/s = 7.92e15 FLOP/s" in out
    assert "decode-only step floor = 70.55e9 B / 4 / 3.35e12 B/s = 5.3 ms" in out
    rows = {}
    for line in out.splitlines():
        cells = line.split()
        if cells and re.fullmatch(r"[\d,]+", cells[0]):
            rows[int(cells[0].replace(",", ""))] = cells
    assert sorted(rows) == [512, 2048, 8192]
    for budget, step_ms in CONTRACT_STEP_MS.items():
        assert rows[budget][1] == step_ms
    for budget, steps in CONTRACT_STEPS_TO_FIRST_TOKEN.items():
        assert rows[budget][4] == str(steps)
