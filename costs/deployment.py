"""A model served on `tp` GPUs with tensor parallelism: the aggregate roofline and the KV room left.

Tensor parallelism splits every weight matrix and every attention head group across the GPUs, so a
step's FLOPs and bytes divide evenly among them: the deployment behaves as one device with `tp`
times the FLOP/s, bandwidth and memory. (The all-reduces it adds are left out: a floor.)
"""

from __future__ import annotations

from dataclasses import dataclass

from .dtypes import bytes_per_value
from .gpu import Gpu
from .model import Model

# Share of GPU memory the server may use; the rest is left to the runtime and activations.
MEMORY_SHARE = 0.9


@dataclass(frozen=True, slots=True)
class Deployment:
    model: Model
    gpu: Gpu
    tp: int
    dtype: str  # weights and their matmuls
    kv_dtype: str = "bf16"  # KV cache and attention

    def __post_init__(self) -> None:
        if type(self.tp) is not int or self.tp < 1:
            raise ValueError(f"tp must be a positive int, got {self.tp!r}")
        if self.model.num_heads % self.tp:
            raise ValueError(
                f"tp {self.tp} does not divide the {self.model.num_heads} attention heads of {self.model.name}"
            )
        bytes_per_value("dtype", self.dtype)
        self.gpu.flops(self.dtype)
        self.gpu.flops(self.kv_dtype)

    @property
    def peak_flops(self) -> float:
        """Dense FLOP/s of all `tp` GPUs in the weight dtype."""
        return self.tp * self.gpu.flops(self.dtype)

    @property
    def attention_flops(self) -> float:
        """Dense FLOP/s of all `tp` GPUs in the KV dtype, which attention runs in."""
        return self.tp * self.gpu.flops(self.kv_dtype)

    @property
    def bandwidth(self) -> float:
        return self.tp * self.gpu.mem_bandwidth

    @property
    def weight_bytes(self) -> float:
        return self.model.num_params * bytes_per_value("dtype", self.dtype)

    @property
    def kv_bytes_per_token(self) -> int:
        return self.model.kv_bytes_per_token(self.kv_dtype)

    @property
    def kv_tokens(self) -> int:
        """KV capacity K in tokens: the memory share left once the weights are loaded."""
        room = self.tp * self.gpu.mem_bytes * MEMORY_SHARE - self.weight_bytes
        if room < self.kv_bytes_per_token:
            raise ValueError(
                f"{self.model.name} in {self.dtype} needs {self.weight_bytes / 1e9:.1f} GB of weights; "
                f"tp={self.tp} x {self.gpu.name} leaves no room for a KV cache"
            )
        return int(room // self.kv_bytes_per_token)

    def describe(self) -> str:
        return f"{self.model.name} on {self.tp} x {self.gpu.name}, {self.dtype} weights, {self.kv_dtype} KV"
