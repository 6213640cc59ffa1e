"""The independent reference (executor/exactness/independent.py): SmolLM2's fp32 logits from the executor's
dense path equal those of Hugging Face `transformers` loading the same GGUF file, within fp32
rounding over the model's depth; a planted rope theta (10,000 for 100,000) fails it. Optional: runs
where the `reference` extra (transformers, accelerate) is installed."""

from __future__ import annotations

from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")
# Deliberate: the `reference` extra is optional (not in `all`: transformers is large); where it is
# missing, this independent check is not run, and says so here.
pytest.importorskip("transformers", reason="the optional `reference` extra (transformers) is not installed")
pytest.importorskip("accelerate", reason="the optional `reference` extra (accelerate) is not installed")

from stallfree.executor.exactness.independent import depth_tolerance, transformers_logits  # noqa: E402
from stallfree.executor.layers.group import Group  # noqa: E402
from stallfree.executor.models.checkpoints import gguf_path  # noqa: E402
from stallfree.executor.models.model import Transformer  # noqa: E402
from stallfree.executor.models.weights import load  # noqa: E402
from stallfree.executor.runs.runspec import RunSpec  # noqa: E402

# A chat-templated prompt's ids (<|im_start|>system ... <|im_start|>user ...), and a plain one.
SEQUENCES = [[1, 9690, 198, 2683, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198],
             [504, 3575, 282, 4649, 314, 7042, 30, 378, 2939, 282]]


@pytest.fixture(scope="module")
def theirs() -> list[torch.Tensor]:
    return transformers_logits(gguf_path("smollm2"), SEQUENCES)


def ours(rope_theta: float | None = None) -> tuple[list[torch.Tensor], object]:
    spec = RunSpec((), model="smollm2", tp=1, dtype="fp32")
    cfg = spec.model_config()
    cfg = cfg if rope_theta is None else replace(cfg, rope_theta=rope_theta)
    model = Transformer(cfg, Group(), torch.float32, torch.float32)
    load(model, spec.gguf.tensor)
    return [model.dense(torch.tensor(s)) for s in SEQUENCES], cfg


def test_fp32_logits_equal_an_independent_runtime(theirs: list[torch.Tensor]) -> None:
    mine, cfg = ours()
    for a, b in zip(mine, theirs, strict=True):
        assert float((a - b).abs().max()) <= depth_tolerance(cfg, b)
        assert torch.equal(a.argmax(-1), b.argmax(-1))


def test_a_wrong_rope_theta_fails_the_independent_reference(theirs: list[torch.Tensor]) -> None:
    mine, cfg = ours(rope_theta=10_000.0)
    assert max(float((a - b).abs().max()) / depth_tolerance(cfg, b) for a, b in zip(mine, theirs, strict=True)) > 10
