"""What a run needs on every rank: the model and how to build it, the jobs, and the launch limits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from stallfree.spec import InvalidField

from .config import ModelConfig, model_config
from .fp8 import FP8
from .group import COLLECTIVE_TIMEOUT_S, Group
from .job import Job
from .model import Transformer
from .weights import checkpoint_config, load, random_source, safetensors_source

DTYPES = ("fp8", "bf16", "fp32")
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True, slots=True)
class RunSpec:
    jobs: tuple[Job, ...]
    model: str = "tiny"
    num_layers: int | None = None  # None: the model's own
    dtype: str = "fp8"  # the matmul weights: fp8 (float8_e4m3fn + scales), bf16 or fp32
    tp: int = 4
    device: str = "cpu"
    seed: int = 0
    checkpoint: str | None = None  # a folder with config.json and *.safetensors; replaces random weights
    collective_timeout_s: float = COLLECTIVE_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise InvalidField(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.device not in DEVICES:
            raise InvalidField(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        self.model_config().check_divisible(self.tp)
        if self.device == "cuda" and torch.cuda.device_count() < self.tp:
            raise InvalidField(f"device cuda with tp={self.tp} needs {self.tp} CUDA device(s); "
                               f"this machine has {torch.cuda.device_count()}")

    def model_config(self) -> ModelConfig:
        if self.checkpoint is not None:
            return checkpoint_config(Path(self.checkpoint)).with_layers(self.num_layers)
        return model_config(self.model, self.num_layers)

    def dtypes(self) -> tuple[torch.dtype, torch.dtype]:
        """(matmul weights, activations). FP8 activations are quantized per matmul, so between
        matmuls they live in fp32 on CPU and bf16 on CUDA (what _scaled_mm writes fastest)."""
        if self.dtype == "fp8":
            return FP8, torch.bfloat16 if self.device == "cuda" else torch.float32
        return (torch.bfloat16,) * 2 if self.dtype == "bf16" else (torch.float32,) * 2

    def device_for(self, rank: int) -> torch.device:
        return torch.device(f"cuda:{rank}") if self.device == "cuda" else torch.device("cpu")

    def build(self, group: Group, dtype: str | None = None) -> Transformer:
        """This rank's shard of the model, weights loaded (`dtype` overrides the spec's)."""
        spec = self if dtype is None else _with_dtype(self, dtype)
        wdtype, adtype = spec.dtypes()
        device = self.device_for(group.rank)
        with torch.device(device):
            model = Transformer(self.model_config(), group, wdtype, adtype)
        source = (safetensors_source(Path(self.checkpoint)) if self.checkpoint is not None
                  else random_source(self.seed, device))
        load(model, source)
        return model


def _with_dtype(spec: RunSpec, dtype: str) -> RunSpec:
    from dataclasses import replace

    return replace(spec, dtype=dtype)
