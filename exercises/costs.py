"""Exercises 2 and 3, on the roofline cost model: a budget for a TPOT target, and the ridge."""

from __future__ import annotations

from pathlib import Path

from stallfree.costs import Deployment, Roofline, full_step, gpu, model

from .base import Exercise, Grade, read_int

MS = 1e3
TPOT_TARGET_MS = 20.0
TPOT_TOLERANCE = 0.01  # a budget within 1% below the largest that meets the target counts


def h100() -> Roofline:
    """`stallfree budget`'s default deployment: Llama 3.3 70B on 4 x H100 SXM, FP8 weights, floor mode."""
    return Roofline(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8", "bf16"), "floor")


def a100() -> Roofline:
    return Roofline(Deployment(model("llama-3.3-70b"), gpu("a100-80gb"), 4, "bf16", "bf16"), "floor")


def largest_budget(roofline: Roofline, target_ms: float) -> int:
    """The largest B whose full step takes at most `target_ms` (full_step grows with B)."""
    low, high = 1, 1
    while full_step(roofline, high) * MS <= target_ms:
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if full_step(roofline, mid) * MS <= target_ms else (low, mid)
    return low


def grade_tpot(path: Path) -> Grade:
    budget = read_int(path)
    if budget < 1:
        return Grade(False, [f"not yet: a budget is at least 1 token, got {budget}"])
    roofline = h100()
    ms = full_step(roofline, budget) * MS
    best = largest_budget(roofline, TPOT_TARGET_MS)
    if ms > TPOT_TARGET_MS:
        return Grade(False, [f"not yet: a full step of {budget:,} tokens takes {ms:.2f} ms, over the "
                             f"{TPOT_TARGET_MS:g} ms target: a stream could wait that long between two tokens"])
    if budget < best * (1 - TPOT_TOLERANCE):
        return Grade(False, [f"not yet: {budget:,} tokens meets the target ({ms:.2f} ms a full step), but a "
                             "larger budget meets it too: every extra token a step carries shortens a long "
                             "prompt's wait for its first token"])
    return Grade(True, [f"correct: a full step of {budget:,} tokens takes {ms:.2f} ms; the largest budget "
                        f"within {TPOT_TARGET_MS:g} ms is {best:,}"])


def ridge(roofline: Roofline) -> float:
    """Tokens per step at which compute time equals the weight read."""
    return roofline.weight_read_seconds / roofline.seconds_per_token


def grade_ridge(path: Path) -> Grade:
    tokens = read_int(path)
    roofline = a100()
    exact = ridge(roofline)
    if abs(tokens - exact) <= 1:
        return Grade(True, [f"correct: the ridge is {exact:.1f} tokens; below it a step costs the weight "
                            f"read, {roofline.weight_read_seconds * MS:.1f} ms, however few tokens it carries"])
    compute_ms = tokens * roofline.seconds_per_token * MS
    side = "still memory-bound" if tokens < exact else "already compute-bound"
    return Grade(False, [f"not yet: at {tokens:,} tokens a step is {side}: its compute is {compute_ms:.1f} ms "
                         f"against a weight read of {roofline.weight_read_seconds * MS:.1f} ms"])


TPOT = Exercise(
    number=2,
    title="tune the budget for a TPOT target",
    task=(
        "Llama 3.3 70B on 4 x H100 SXM, FP8 weights (`stallfree budget`'s defaults), floor mode. Under the\n"
        "contract's policy every running stream decodes in every step, so the longest a stream waits between\n"
        "two tokens is one step, and the longest step is a full one: B tokens.\n\n"
        f"What is the largest token budget B whose full step takes at most {TPOT_TARGET_MS:g} ms? Write the\n"
        "number in FILE, then run: stallfree exercise 2 FILE"
    ),
    hints=(
        "`stallfree budget --budgets 512,1024,2048` prints the step ms of each budget: bracket the target.",
        "Past the ridge a full step is compute-bound: its time is B x (2 x parameters) / peak FLOP/s, the "
        "numbers `stallfree budget` prints on its second line.",
        "Seconds per token = 1.41e11 / 7.92e15. Divide the target by it and round down.",
    ),
    answer=(
        "1122 (anything from 1111 to 1122 is accepted): one token's compute is 2 x 70.55e9 / (4 x 1,979e12)\n"
        "s = 17.82 us, and 20 ms / 17.82 us = 1122.04. `stallfree budget --budgets 1122,1123` rounds both to\n"
        "20.0 ms: the exercise asks for the exact bound, 19.999 ms against 20.017."
    ),
    grade=grade_tpot,
)

RIDGE = Exercise(
    number=3,
    title="find the ridge",
    task=(
        "On 4 x A100 80GB in BF16 (`stallfree budget --gpu a100-80gb --dtype bf16`), Llama 3.3 70B, floor\n"
        "mode: up to how many tokens does a step cost no more than one read of the weights? That is the\n"
        "ridge of the roofline. Write it as a whole number of tokens in FILE (within 1 token is right), then\n"
        "run: stallfree exercise 3 FILE"
    ),
    hints=(
        "Try `stallfree budget --gpu a100-80gb --dtype bf16 --budgets 64,128,256`: where does step ms stop "
        "being the decode-only floor?",
        "At the ridge, tokens x seconds per token = the weight read: ridge = weight read / seconds per token. "
        "Both are on the first lines `stallfree budget` prints.",
        "The model's size cancels out: ridge = peak FLOP/s x bytes per weight / (2 x memory bandwidth).",
    ),
    answer=(
        "153: peak 312e12 FLOP/s x 2 bytes per BF16 weight / (2 x 2.039e12 B/s) = 153.0 tokens. On H100 in\n"
        "FP8 it is 1,979e12 x 1 / (2 x 3.35e12) = 295: FP8 halves the bytes and the H100 has 6 times the FLOP/s,\n"
        "so its steps stay memory-bound for twice as many tokens."
    ),
    grade=grade_ridge,
)
