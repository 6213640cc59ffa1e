"""Zero-padded heads: a shape whose query and KV heads do not divide over the ranks runs on a padded
shape that does, computing exactly the same function.

Grouped-query attention keeps its group size g = num_heads / num_kv_heads: the KV heads are padded
to the next multiple of the world size and the query heads to g times that, so query head i still
reads KV head i // g and every rank holds whole groups (SmolLM2, 9 / 3 heads over 4 ranks: 12 / 4,
heads 9 to 11 and KV head 3 are padding, all on rank 3). The padded rows of q, k and v are zero,
and so are the padded columns of o_proj: a padded head attends uniformly (its scores are all 0) over
values that are 0, and whatever it produced, o_proj's zero columns would add exactly nothing. The
MLP, the embedding and the LM head are not touched, nor are the other heads' weights: a padded model
holds the unpadded one's numbers and adds zeros (`test_padded_heads_compute_the_unpadded_function`,
and its negative control, a pad that is not zero).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch

from ..models.config import ModelConfig

# (checkpoint name suffix, which heads its rows or columns follow, padded along rows or columns)
PADDED = {"q_proj.weight": (0, "rows"), "k_proj.weight": (1, "rows"), "v_proj.weight": (1, "rows"),
          "o_proj.weight": (0, "columns")}

Source = Callable[[str, tuple[int, ...]], torch.Tensor]
Blank = Callable[..., torch.Tensor]  # torch.zeros-like: the pad (a negative control passes another)


def needs_padding(cfg: ModelConfig, world_size: int) -> bool:
    """True when the heads do not divide over `world_size` ranks but the padded heads would."""
    heads_split = cfg.num_heads % world_size == 0 and cfg.num_kv_heads % world_size == 0
    return not heads_split and cfg.real_heads is None and cfg.num_heads % cfg.num_kv_heads == 0


def padded(cfg: ModelConfig, world_size: int) -> ModelConfig:
    """`cfg` with its KV heads padded to a multiple of `world_size` and its query heads to the same
    group size; `cfg` itself when its heads already divide."""
    if not needs_padding(cfg, world_size):
        return cfg
    group = cfg.num_heads // cfg.num_kv_heads
    kv = -(-cfg.num_kv_heads // world_size) * world_size
    return replace(cfg, num_heads=kv * group, num_kv_heads=kv, real_heads=(cfg.num_heads, cfg.num_kv_heads))


def padded_source(source: Source, cfg: ModelConfig, blank: Blank = torch.zeros) -> Source:
    """`source` for the padded shape `cfg`: q, k, v and o_proj read at their real shapes and padded
    with `blank` (zeros) to the padded ones; every other tensor as it is."""
    if cfg.real_heads is None:
        return source
    real = cfg.real_heads

    def source_padded(name: str, shape: tuple[int, ...]) -> torch.Tensor:
        suffix = next((s for s in PADDED if name.endswith(s)), None)
        if suffix is None:
            return source(name, shape)
        which, side = PADDED[suffix]
        width = real[which] * cfg.head_dim
        if side == "rows":
            w = source(name, (width, shape[1]))
            return torch.cat((w, blank(shape[0] - width, shape[1], dtype=w.dtype)), dim=0)
        w = source(name, (shape[0], width))
        return torch.cat((w, blank(shape[0], shape[1] - width, dtype=w.dtype)), dim=1)

    return source_padded
