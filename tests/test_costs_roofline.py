"""The roofline's full mode against its floor, presets, and errors that name the field and value."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stallfree.costs import (
    GPUS,
    MODELS,
    Deployment,
    Roofline,
    StepLoad,
    first_token,
    full_step,
    gpu,
    model,
    worst_step,
)
from stallfree.main import main

SEVENTY_B = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8")
FLOOR = Roofline(SEVENTY_B, "floor")
FULL = Roofline(SEVENTY_B, "full")

loads = st.builds(
    StepLoad,
    num_tokens=st.integers(1, 20_000),
    attention_pairs=st.integers(0, 10**9),
    kv_read_tokens=st.integers(0, 10**7),
)


@given(loads)
def test_full_is_never_below_the_floor(load: StepLoad) -> None:
    assert FULL.step_seconds(load) >= FLOOR.step_seconds(load) > 0
    assert FULL.seconds(load.num_tokens, load.attention_pairs, load.kv_read_tokens) == FULL.step_seconds(load)


@given(loads, st.integers(1, 5_000))
def test_more_tokens_never_cost_less(load: StepLoad, extra: int) -> None:
    more = StepLoad(load.num_tokens + extra, load.attention_pairs, load.kv_read_tokens)
    for roofline in (FLOOR, FULL):
        assert roofline.step_seconds(more) >= roofline.step_seconds(load)


def test_full_mode_prices_context() -> None:
    """A long prompt's later chunks attend to more positions: full mode makes them slower."""
    early = StepLoad(2048, StepLoad.chunk_pairs(0, 2048), 0)
    late = StepLoad(2048, StepLoad.chunk_pairs(30_000, 2048), 30_000)
    assert FULL.step_seconds(late) > FULL.step_seconds(early)
    assert FLOOR.step_seconds(late) == FLOOR.step_seconds(early)
    # Decode at long context: KV reads make a decode-only step memory-heavier than the weight read.
    decodes = StepLoad(64, 64 * 8192, 64 * 8191)
    assert FULL.step_seconds(decodes) > FULL.decode_floor_seconds


@given(st.integers(1, 20_000), st.integers(1, 100_000), st.integers(0, 255), st.integers(1, 4096))
def test_worst_step_bounds_every_step_of_the_chain(budget: int, prompt_len: int, decodes: int, context: int) -> None:
    """Every step of the floor chain (decodes at growing context, chunks of a long prompt) stays
    within worst_step for the largest context any of its requests reach."""
    if decodes >= budget:
        return
    chain = first_token(FULL, budget, prompt_len, decodes, context)
    max_context = max(prompt_len, context + chain.num_steps)
    kv = prompt_len + decodes * (context + chain.num_steps)
    assert chain.worst_step_seconds <= worst_step(FULL, budget, max_context, kv)


def test_worst_step_in_floor_mode_is_a_full_step() -> None:
    assert worst_step(FLOOR, 2048, 10**5, 10**6) == full_step(FLOOR, 2048)
    assert worst_step(FLOOR, 64, 10**5, 10**6) == FLOOR.decode_floor_seconds


def test_chunk_pairs_is_causal() -> None:
    assert StepLoad.chunk_pairs(0, 1) == 1
    assert StepLoad.chunk_pairs(0, 4) == 1 + 2 + 3 + 4
    assert StepLoad.chunk_pairs(10, 2) == 11 + 12


def test_kv_capacity_from_memory() -> None:
    # 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B a token.
    assert SEVENTY_B.kv_bytes_per_token == 327_680
    assert SEVENTY_B.kv_tokens == int((4 * 80e9 * 0.9 - 70.55e9) // 327_680)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_presets_cite_a_source(name: str) -> None:
    assert "huggingface.co" in MODELS[name].source


@pytest.mark.parametrize("name", sorted(GPUS))
def test_gpu_presets_cite_a_source(name: str) -> None:
    assert "datasheet" in GPUS[name].source


def test_h200_has_h100_flops_and_more_bandwidth() -> None:
    assert GPUS["h200"].peak_flops == GPUS["h100-sxm"].peak_flops
    assert GPUS["h200"].mem_bandwidth == 4.8e12


@pytest.mark.parametrize(
    ("build", "names"),
    [
        (lambda: Deployment(model("llama-3.3-70b"), gpu("a100-80gb"), 4, "fp8"), ("dtype", "fp8")),
        (lambda: Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 3, "fp8"), ("tp 3",)),
        (lambda: Roofline(SEVENTY_B, "exact"), ("mode", "exact")),
        (lambda: model("gpt-5"), ("model", "gpt-5")),
        (lambda: first_token(FLOOR, 64, 100, 64), ("num_decodes 64", "budget 64")),
        (lambda: Deployment(model("llama-3.3-70b"), gpu("a100-80gb"), 1, "bf16").kv_tokens, ("tp=1",)),
    ],
)
def test_errors_name_the_field_and_value(build, names: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError) as error:
        build()
    for name in names:
        assert name in str(error.value)


def test_budget_cli_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["budget", "--gpu", "a100-80gb", "--dtype", "fp8"]) == 2
    assert "fp8" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["budget", "--budgets", "512,x"])
    assert exit_.value.code == 2
    assert "budget 'x': expected a positive int" in capsys.readouterr().err
