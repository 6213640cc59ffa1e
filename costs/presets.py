"""Models and GPUs with published figures, by the names the CLI takes.

Model shapes are the `config.json` of each model's Hugging Face release; parameter counts are the
sum over its safetensors weights. GPU figures are the vendor's datasheet, dense (the datasheets
also quote twice these numbers "with sparsity", which a plain forward pass does not get).
"""

from __future__ import annotations

from .gpu import Gpu
from .model import Model

TERA = 1e12
GIGA = 1e9

MODELS: dict[str, Model] = {
    "llama-3.3-70b": Model(
        name="Llama 3.3 70B",
        num_params=70.55e9,
        num_layers=80,
        hidden=8192,
        num_heads=64,
        num_kv_heads=8,
        head_dim=128,
        ffn=28672,
        vocab=128256,
        source="huggingface.co/meta-llama/Llama-3.3-70B-Instruct (config.json; 70,553,706,496 parameters)",
    ),
    "llama-3.1-8b": Model(
        name="Llama 3.1 8B",
        num_params=8.03e9,
        num_layers=32,
        hidden=4096,
        num_heads=32,
        num_kv_heads=8,
        head_dim=128,
        ffn=14336,
        vocab=128256,
        source="huggingface.co/meta-llama/Llama-3.1-8B-Instruct (config.json; 8,030,261,248 parameters)",
    ),
}

GPUS: dict[str, Gpu] = {
    "h100-sxm": Gpu(
        name="H100 SXM",
        peak_flops={"fp8": 1979 * TERA, "bf16": 989 * TERA, "fp16": 989 * TERA},
        mem_bandwidth=3.35 * TERA,
        mem_bytes=80 * GIGA,
        source="NVIDIA H100 Tensor Core GPU datasheet, SXM column "
        "(1,979 TFLOP/s FP8 and 989 BF16 dense, 3.35 TB/s, 80 GB)",
    ),
    "h200": Gpu(
        name="H200 SXM",
        peak_flops={"fp8": 1979 * TERA, "bf16": 989 * TERA, "fp16": 989 * TERA},
        mem_bandwidth=4.8 * TERA,
        mem_bytes=141 * GIGA,
        source="NVIDIA H200 Tensor Core GPU datasheet, SXM column (same FLOP/s as H100 SXM, 4.8 TB/s, 141 GB)",
    ),
    "a100-80gb": Gpu(
        name="A100 80GB SXM",
        peak_flops={"bf16": 312 * TERA, "fp16": 312 * TERA},  # no FP8 tensor cores
        mem_bandwidth=2.039 * TERA,
        mem_bytes=80 * GIGA,
        source="NVIDIA A100 Tensor Core GPU datasheet, 80GB SXM column (312 TFLOP/s BF16 dense, 2,039 GB/s, 80 GB)",
    ),
}


def model(name: str) -> Model:
    found = MODELS.get(name)
    if found is None:
        raise ValueError(f"model {name!r} is not a preset; choose one of {', '.join(MODELS)}")
    return found


def gpu(name: str) -> Gpu:
    found = GPUS.get(name)
    if found is None:
        raise ValueError(f"gpu {name!r} is not a preset; choose one of {', '.join(GPUS)}")
    return found
