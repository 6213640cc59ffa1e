"""Exercises 2 and 3, on the roofline cost model: a budget for a TPOT target, and the ridge. Each
learner's instance draws the deployment (and exercise 2's target) from the presets."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from stallfree.costs import Deployment, Roofline, full_step, gpu, model

from .base import Exercise, Grade, read_int, wrapped

MS = 1e3
TPOT_TOLERANCE = 0.01  # a budget within 1% below the largest that meets the target counts
MODEL = "llama-3.3-70b"
# (GPU preset, weight dtype, tensor-parallel GPUs) an instance may draw; KV in bf16, floor mode.
DEPLOYMENTS = tuple((g, dtype, tp) for g, dtype in (("h100-sxm", "fp8"), ("h100-sxm", "bf16"), ("h200", "fp8"),
                                                    ("h200", "bf16"), ("a100-80gb", "bf16")) for tp in (4, 8))
TARGETS_MS = (10.0, 15.0, 20.0, 25.0, 30.0, 40.0)
MIN_HEADROOM = 1.5  # a target is at least this many decode-only floors, so a budget well past the ridge meets it


@dataclass(frozen=True, slots=True)
class Setup:
    """One deployment, by its `stallfree budget` flags."""

    gpu: str
    dtype: str
    tp: int

    @property
    def roofline(self) -> Roofline:
        return Roofline(Deployment(model(MODEL), gpu(self.gpu), self.tp, self.dtype, "bf16"), "floor")

    @property
    def flags(self) -> str:
        return f"--gpu {self.gpu} --dtype {self.dtype} --tp {self.tp}"

    def describe(self) -> str:
        return self.roofline.deployment.describe()


def draw_setup(rng: random.Random) -> Setup:
    return Setup(*rng.choice(DEPLOYMENTS))


def largest_budget(roofline: Roofline, target_ms: float) -> int:
    """The largest B whose full step takes at most `target_ms` (full_step grows with B)."""
    low, high = 1, 1
    while full_step(roofline, high) * MS <= target_ms:
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if full_step(roofline, mid) * MS <= target_ms else (low, mid)
    return low


def ridge(roofline: Roofline) -> float:
    """Tokens per step at which compute time equals the weight read."""
    return roofline.weight_read_seconds / roofline.seconds_per_token


def grade_tpot(path: Path, setup: Setup, target_ms: float) -> Grade:
    budget = read_int(path)
    if budget < 1:
        return Grade(False, [f"not yet: a budget is at least 1 token, got {budget}"])
    roofline = setup.roofline
    ms = full_step(roofline, budget) * MS
    best = largest_budget(roofline, target_ms)
    if ms > target_ms:
        return Grade(False, [f"not yet: a full step of {budget:,} tokens takes {ms:.2f} ms, over the "
                             f"{target_ms:g} ms target: a stream could wait that long between two tokens"])
    if budget < best * (1 - TPOT_TOLERANCE):
        return Grade(False, [f"not yet: {budget:,} tokens meets the target ({ms:.2f} ms a full step), but a "
                             "larger budget meets it too: every extra token a step carries shortens a long "
                             "prompt's wait for its first token"])
    return Grade(True, [f"correct: a full step of {budget:,} tokens takes {ms:.2f} ms; the largest budget "
                        f"within {target_ms:g} ms is {best:,}"])


def grade_ridge(path: Path, setup: Setup) -> Grade:
    tokens = read_int(path)
    roofline = setup.roofline
    exact = ridge(roofline)
    if abs(tokens - exact) <= 1:
        return Grade(True, [f"correct: the ridge is {exact:.1f} tokens; below it a step costs the weight "
                            f"read, {roofline.weight_read_seconds * MS:.1f} ms, however few tokens it carries"])
    compute_ms = tokens * roofline.seconds_per_token * MS
    side = "still memory-bound" if tokens < exact else "already compute-bound"
    return Grade(False, [f"not yet: at {tokens:,} tokens a step is {side}: its compute is {compute_ms:.1f} ms "
                         f"against a weight read of {roofline.weight_read_seconds * MS:.1f} ms"])


def tpot_instance(rng: random.Random) -> tuple[Setup, float]:
    """A deployment and a target the full step can meet with room past the decode-only floor."""
    setup = draw_setup(rng)
    floor_ms = setup.roofline.weight_read_seconds * MS
    targets = [t for t in TARGETS_MS if t >= MIN_HEADROOM * floor_ms]
    return (setup, rng.choice(targets)) if targets else tpot_instance(rng)


def tpot(rng: random.Random) -> Exercise:
    setup, target = tpot_instance(rng)
    roofline = setup.roofline
    d = roofline.deployment
    best = largest_budget(roofline, target)

    def answer() -> str:
        low = best - int(best * TPOT_TOLERANCE)
        return (f"{best} (anything from {low} to {best} is accepted): one token's compute is "
                f"{d.model.flops_per_token:.3g} FLOPs / {d.peak_flops:.3g} FLOP/s = "
                f"{roofline.seconds_per_token * 1e6:.2f} us, and {target:g} ms / that = "
                f"{target / MS / roofline.seconds_per_token:.2f}, rounded down: past the ridge a full step is "
                f"compute-bound. `stallfree budget {setup.flags} --budgets {best},{best + 1}` shows the step ms "
                "of both")

    return Exercise(
        number=2,
        title="tune the budget for a TPOT target",
        task=wrapped(f"{setup.describe()} (`stallfree budget {setup.flags}`), floor mode. Under the contract's "
                     "policy every running stream decodes in every step, so the longest a stream waits between two "
                     "tokens is one step, and the longest step is a full one: B tokens.",
                     f"What is the largest token budget B whose full step takes at most {target:g} ms? Write the "
                     "number in FILE, then run: stallfree exercise 2 FILE"),
        hints=(
            f"`stallfree budget {setup.flags} --budgets 256,1024,4096` prints the step ms of each budget: "
            "bracket the target.",
            "Past the ridge a full step is compute-bound: its time is B x (2 x parameters) / peak FLOP/s, the "
            "numbers `stallfree budget` prints on its second line.",
            "Seconds per token = FLOPs per token / peak FLOP/s. Divide the target by it and round down.",
        ),
        answer=answer,
        grade=lambda path, seed: grade_tpot(path, setup, target),
    )


def ridge_exercise(rng: random.Random) -> Exercise:
    setup = draw_setup(rng)
    roofline = setup.roofline
    d = roofline.deployment
    exact = ridge(roofline)
    bytes_per_weight = d.weight_bytes / d.model.num_params

    def answer() -> str:
        return (f"{round(exact)}: peak {d.gpu.flops(d.dtype):.4g} FLOP/s x {bytes_per_weight:g} byte(s) per "
                f"{d.dtype} weight / (2 x {d.gpu.mem_bandwidth:.4g} B/s) = {exact:.1f} tokens. The model's size "
                "and the number of GPUs cancel out: each GPU holds a share of the weights and does the same "
                "share of the work.")

    return Exercise(
        number=3,
        title="find the ridge",
        task=wrapped(f"On {setup.describe()} (`stallfree budget {setup.flags}`), floor mode: up to how many "
                     "tokens does a step cost no more than one read of the weights? That is the ridge of the "
                     "roofline. Write it as a whole number of tokens in FILE (within 1 token is right), then run: "
                     "stallfree exercise 3 FILE"),
        hints=(
            f"Try `stallfree budget {setup.flags} --budgets 64,128,256,512`: where does step ms stop being the "
            "decode-only floor?",
            "At the ridge, tokens x seconds per token = the weight read: ridge = weight read / seconds per token. "
            "Both are on the first lines `stallfree budget` prints.",
            "The model's size cancels out: ridge = peak FLOP/s x bytes per weight / (2 x memory bandwidth).",
        ),
        answer=answer,
        grade=lambda path, seed: grade_ridge(path, setup),
    )
