#!/usr/bin/env bash
# Create or reuse ./.venv-sglang: SGLang's scheduling policy (PrefillAdder over a radix cache and a
# CPU KV pool) in a venv of its own, with stallfree installed beside it for the SGLang adapter and
# its tests. Sourced or run; idempotent (a stamp file records a finished install).
#
# sglang 0.5.23 declares torch==2.14.1 and dozens of GPU/serving requirements; only the policy
# modules are imported here, so sglang goes in with --no-deps on torch 2.13.0+cpu (the local CPU
# wheel), and only the pure-Python modules its policy import chain reaches follow. triton is the
# real wheel (a stand-in breaks inside torch); torchvision is absent (its served build is a CUDA
# build that fails to load) and the adapter installs an import-hook stand-in for it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv=.venv-sglang
stamp="$venv/.stallfree-sglang-installed"
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "the SGLang venv needs Python 3.11 or later; python3 is $(python3 --version 2>&1)" >&2
    exit 2
  fi
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/sglang-venv.sh -nt "$stamp" ]; then
  py="$venv/bin/python"
  "$py" -m pip install -q --upgrade pip >/dev/null
  "$py" -m pip install -q "torch==2.13.0"
  "$py" -m pip install -q --no-deps "sglang==0.5.23"
  "$py" -m pip install -q numpy orjson psutil pybase64 requests packaging pillow starlette \
    msgspec pydantic pyzmq tqdm IPython aiohttp "transformers==5.19.0" dill \
    "apache-tvm-ffi==0.1.11" "sentencepiece==0.2.1" "compressed-tensors==0.18.0" gguf \
    "openai==2.8.0" partial_json_parser triton
  # SGLang's Scheduler module (its abort code, for the adapter with cancels) imports these four more
  "$py" -m pip install -q setproctitle einops uvicorn fastapi
  "$py" -m pip uninstall -q -y torchvision >/dev/null 2>&1 || true
  "$py" -m pip install -q --no-deps -e .
  "$py" -m pip install -q "pytest>=8" "hypothesis>=6.100" "pytest-timeout>=2.2"
  "$py" -c 'import torch; assert torch.__version__.startswith("2.13.0"), torch.__version__'
  touch "$stamp"
fi
