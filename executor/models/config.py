"""Model shapes: a tiny one for tests, and the shapes of real Llama models for timing with random
weights (optionally with fewer layers)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from stallfree.costs import model as costs_model
from stallfree.spec import InvalidField


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """A Llama-architecture decoder. Heads split across tensor-parallel ranks, so the head counts,
    the FFN width and the vocab must divide by the world size (see `check_divisible`); heads that do
    not are zero-padded first (padding.py: SmolLM2's 9 query and 3 KV heads run at 4 ranks as 12 and
    4, `real_heads` keeping 9 and 3)."""

    name: str
    hidden: int
    num_layers: int
    num_heads: int  # query heads
    num_kv_heads: int  # key/value heads (grouped-query attention: num_heads % num_kv_heads == 0)
    ffn: int  # SwiGLU inner width
    vocab: int
    rms_eps: float = 1e-5
    rope_theta: float = 500000.0
    real_heads: tuple[int, int] | None = None  # (query, KV) heads before zero padding (padding.py); None: unpadded

    @property
    def head_dim(self) -> int:
        real = self.num_heads if self.real_heads is None else self.real_heads[0]
        return self.hidden // real

    @property
    def num_params(self) -> int:
        """Parameters of the whole model (embedding and LM head counted separately)."""
        attn = self.hidden * self.head_dim * (2 * self.num_heads + 2 * self.num_kv_heads)
        mlp = 3 * self.hidden * self.ffn
        return self.num_layers * (attn + mlp + 2 * self.hidden) + 2 * self.vocab * self.hidden + self.hidden

    @property
    def layer_params(self) -> int:
        """Parameters of one decoder layer's matmuls: what a step streams per layer."""
        return self.hidden * self.head_dim * (2 * self.num_heads + 2 * self.num_kv_heads) + 3 * self.hidden * self.ffn

    def with_layers(self, num_layers: int | None) -> ModelConfig:
        """The same shape with `num_layers` layers (None: unchanged), for timing a slice of a model."""
        if num_layers is None:
            return self
        if num_layers < 1:
            raise InvalidField(f"num_layers must be >= 1, got {num_layers}")
        return replace(self, num_layers=num_layers)

    def check_divisible(self, world_size: int) -> None:
        """Raise naming the field when this shape cannot be split over `world_size` ranks."""
        if world_size < 1:
            raise InvalidField(f"tp must be >= 1, got {world_size}")
        if self.real_heads is None and self.hidden % self.num_heads:
            raise InvalidField(f"{self.name}: hidden={self.hidden} is not a multiple of num_heads={self.num_heads}")
        if self.num_heads % self.num_kv_heads:
            raise InvalidField(
                f"{self.name}: num_heads={self.num_heads} is not a multiple of num_kv_heads={self.num_kv_heads}"
            )
        for field in ("num_heads", "num_kv_heads", "ffn", "vocab"):
            value = getattr(self, field)
            if value % world_size:
                raise InvalidField(f"{self.name}: {field}={value} does not divide over tp={world_size} ranks")


def from_preset(name: str) -> ModelConfig:
    """The executor's shape of a model the cost model presets (`stallfree.costs.MODELS`), same fields."""
    m = costs_model(name)
    if m.hidden != m.num_heads * m.head_dim:
        raise InvalidField(f"{name}: hidden={m.hidden} is not num_heads x head_dim = {m.num_heads} x {m.head_dim}")
    return ModelConfig(name, hidden=m.hidden, num_layers=m.num_layers, num_heads=m.num_heads,
                       num_kv_heads=m.num_kv_heads, ffn=m.ffn, vocab=m.vocab)


MODELS: dict[str, ModelConfig] = {
    m.name: m
    for m in (
        # Small enough that TP=4 on 2 CPU cores runs a step in milliseconds.
        ModelConfig("tiny", hidden=256, num_layers=2, num_heads=8, num_kv_heads=4, ffn=768, vocab=2048),
        # Four times wider than tiny: the "wider one" of the CPU benchmarks.
        ModelConfig("wide", hidden=1024, num_layers=2, num_heads=16, num_kv_heads=4, ffn=3072, vocab=8192),
        # The published shapes, written once in the cost model's presets.
        *(from_preset(name) for name in ("llama-3.1-8b", "llama-3.3-70b")),
    )
}


def model_config(name: str, num_layers: int | None = None) -> ModelConfig:
    if name not in MODELS:
        raise InvalidField(f"model must be one of {', '.join(MODELS)}, got {name!r}")
    return MODELS[name].with_layers(num_layers)
