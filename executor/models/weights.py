"""Where weights come from: random from a seed (no download is possible here) or a Llama checkpoint
in safetensors format from a local folder. Either is a `Source`: a function from a tensor's
checkpoint name to the whole tensor; every rank asks for whole tensors and keeps its shard."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from pathlib import Path

import torch

from stallfree.spec import InvalidField

from ..layers.parallel import ParallelLinear, VocabParallelEmbedding
from ..layers.seeds import generator
from .config import ModelConfig
from .model import RMSNorm, Transformer

Source = Callable[[str, tuple[int, ...]], torch.Tensor]  # (checkpoint name, shape) -> whole tensor


def checkpoint_name(module_name: str) -> str:
    """`layers.0.mlp.up_proj` -> `model.layers.0.mlp.up_proj.weight` (the Llama checkpoint layout)."""
    return f"{module_name}.weight" if module_name == "lm_head" else f"model.{module_name}.weight"


def random_source(seed: int, device: torch.device | str = "cpu") -> Source:
    """Each tensor drawn from its own generator (the seed and the tensor's name), so a tensor is the
    same whatever order ranks ask for it in. Matmul weights ~ N(0, 1/in) keep activations near unit
    scale through the layers; norms are 1; the embedding is N(0, 1)."""

    def source(name: str, shape: tuple[int, ...]) -> torch.Tensor:
        if name.endswith("norm.weight"):
            return torch.ones(shape, device=device)
        gen = generator(seed * 1_000_003 + zlib.crc32(name.encode()), device)
        std = 1.0 if "embed_tokens" in name else shape[-1] ** -0.5
        return torch.randn(shape, generator=gen, device=device) * std

    return source


def safetensors_source(folder: Path) -> Source:
    """Tensors from every *.safetensors file in `folder`, by name; a missing LM head falls back to
    the embedding (tied weights)."""
    from safetensors import safe_open

    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        raise InvalidField(f"checkpoint folder {str(folder)!r} holds no *.safetensors file")
    where: dict[str, Path] = {}
    for path in files:
        with safe_open(str(path), framework="pt") as f:
            for key in f.keys():  # noqa: SIM118 (safe_open is not a mapping)
                where[key] = path

    def source(name: str, shape: tuple[int, ...]) -> torch.Tensor:
        key = name if name in where or name != "lm_head.weight" else "model.embed_tokens.weight"
        if key not in where:
            raise InvalidField(f"checkpoint {str(folder)!r} lacks tensor {name!r}")
        with safe_open(str(where[key]), framework="pt") as f:
            tensor = f.get_tensor(key)
        if tuple(tensor.shape) != shape:
            raise InvalidField(f"checkpoint tensor {key!r} has shape {tuple(tensor.shape)}, the model needs {shape}")
        return tensor.float()

    return source


def checkpoint_config(folder: Path, name: str = "checkpoint") -> ModelConfig:
    """The shape from a checkpoint's config.json (Llama field names)."""
    path = Path(folder) / "config.json"
    try:
        c = json.loads(path.read_text())
        return ModelConfig(
            name, hidden=c["hidden_size"], num_layers=c["num_hidden_layers"], num_heads=c["num_attention_heads"],
            num_kv_heads=c.get("num_key_value_heads", c["num_attention_heads"]), ffn=c["intermediate_size"],
            vocab=c["vocab_size"], rms_eps=c.get("rms_norm_eps", 1e-5), rope_theta=c.get("rope_theta", 10000.0),
        )
    except (OSError, json.JSONDecodeError, KeyError) as error:
        raise InvalidField(f"checkpoint config {str(path)!r}: {type(error).__name__}: {error}") from None


def load(model: Transformer, source: Source) -> None:
    """Fill every weight of `model` from `source`, each rank keeping its shard."""
    cfg = model.cfg
    shapes = {
        "embed_tokens": (cfg.vocab, cfg.hidden),
        "lm_head": (cfg.vocab, cfg.hidden),
    }
    for name, module in model.named_modules():
        if isinstance(module, ParallelLinear):
            module.load(source(checkpoint_name(name), (module.out_features, module.in_features)))
        elif isinstance(module, VocabParallelEmbedding):
            module.load(source(checkpoint_name(name), shapes["embed_tokens"]))
        elif isinstance(module, RMSNorm):
            module.weight.data.copy_(source(checkpoint_name(name), (cfg.hidden,)).to(module.weight))
