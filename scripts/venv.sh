# Sourced by the other scripts: create or reuse ./.venv and install stallfree with every extra.
# torch: where none is installed, take 2.13.0 (a CPU build this machine holds locally) before the
# extras ask for any torch, so pip never reaches for a multi-GB CUDA build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ ! -x .venv/bin/python ]; then
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
  touch "$stamp"
fi
