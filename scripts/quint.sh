#!/usr/bin/env bash
# Install Quint (the simulator of the Quint spec, proofs/quint/) from its lock file, with npm ci;
# skipped when node_modules is newer than the lock file. Needs node and npm on PATH.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/proofs/quint"
stamp="$dir/node_modules/.stallfree-installed"
if [ ! -f "$stamp" ] || [ "$dir/package-lock.json" -nt "$stamp" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "scripts/quint.sh: npm is not on PATH; the Quint tests need node and npm" >&2
    exit 2
  fi
  (cd "$dir" && npm ci --silent --no-audit --no-fund >/dev/null)
  touch "$stamp"
fi
