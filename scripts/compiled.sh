#!/usr/bin/env bash
# Build a mypyc-compiled copy of the core (spec/ and reference/) for long campaigns and benchmarks
# (docs/testing.md). The sources are unchanged: mypyc compiles the same files that mypy --strict
# checks, into C extension modules. The test command runs the plain Python; one test builds a copy
# in a temporary folder and checks it does the same work and catches every fault
# (tests/test_campaign_compiled.py).
#   scripts/compiled.sh                                  build into build/compiled (~30 s)
#   scripts/compiled.sh stallfree campaign ARGS...       build if needed, then run a campaign on it
#   scripts/compiled.sh python benchmarks/SCRIPT.py ...  ... or a benchmark
# The compiled copy converts field types before the core validates them (docs/testing.md), so it
# runs campaigns and benchmarks only: the other stallfree commands are refused here.
# STALLFREE_COMPILED: where the copy goes (default build/compiled); STALLFREE_PYTHON: the interpreter
# to build for and run with (default: the project's .venv, created if missing).
set -euo pipefail
caller="$PWD"
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
if [ -n "${STALLFREE_PYTHON:-}" ]; then
  root="$(dirname "$(dirname "$self")")"
  cd "$root"
  py="$STALLFREE_PYTHON"
else
  . "$(dirname "$self")/venv.sh"  # cds to the repository root
  py=python
fi
if [ "${1:-}" = stallfree ] && [ "${2:-}" != campaign ]; then
  echo "scripts/compiled.sh: only 'stallfree campaign' runs on the compiled copy (got 'stallfree ${2:-}');" \
       "run other commands on the Python core" >&2
  exit 2
fi
stage="${STALLFREE_COMPILED:-build/compiled}"
case "$stage" in /*) ;; *) stage="$root/$stage" ;; esac
case "$stage" in *:*) echo "scripts/compiled.sh: STALLFREE_COMPILED '$stage' holds ':', which PYTHONPATH cannot carry" >&2; exit 2 ;; esac
marker="$stage/.stallfree-compiled"  # written by this script: the only kind of folder it replaces
# The modules a campaign runs: the contract, the monitor, workloads, and the reference scheduler.
# errors.py stays Python: mypyc cannot compile subclasses of ValueError.
core=(spec/types.py spec/ending.py spec/lines.py spec/chunk.py spec/returned.py spec/calls.py spec/rule.py spec/shown.py spec/invariant.py spec/reservation/shadow.py spec/reservation/invariants.py spec/reservation/facts.py spec/reservation/rules.py spec/reservation/ordinary.py spec/watch.py spec/reservation/monitor.py spec/phase.py
      spec/workload.py spec/play.py testing/generate.py reference/sequence.py reference/step.py reference/progress.py reference/views.py reference/stops.py reference/scheduler.py)
# Every folder the package maps (pyproject.toml's package-dir), so the copy imports as the source does.
mapfile -t packages < <("$py" -c 'import tomllib; d = tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["package-dir"]; print("\n".join(v for v in d.values() if v != "cli"))')
# Rebuild when anything the copy holds, this script, the interpreter or mypyc changed.
fingerprint="$( (find cli "${packages[@]}" -type f -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum
                 sha256sum < "$self"; "$py" --version; "$py" -m mypyc --version) | sha256sum | cut -c1-64)"
if [ ! -f "$marker" ] || [ "$(cat "$marker")" != "$fingerprint" ]; then
  if [ -e "$stage" ] && [ ! -f "$marker" ] && [ -n "$(ls -A "$stage")" ]; then
    echo "scripts/compiled.sh: $stage is not empty and was not made by this script; not replacing it" >&2
    exit 2
  fi
  echo "scripts/compiled.sh: compiling ${#core[@]} modules of spec/ and reference/ with mypyc into $stage" >&2
  rm -rf "$stage"
  mkdir -p "$stage"
  : > "$marker"
  cp -r cli "$stage/stallfree"
  for pkg in "${packages[@]}"; do cp -r "$pkg" "$stage/stallfree/$pkg"; done
  find "$stage" -name __pycache__ -prune -exec rm -rf {} +
  (cd "$stage" && "$py" -m mypyc --strict "${core[@]/#/stallfree/}" >mypyc.log 2>&1) || { cat "$stage/mypyc.log" >&2; exit 1; }
  echo "$fingerprint" > "$marker"
fi
if [ $# -gt 0 ]; then
  cd "$caller"
  case "$1" in  # the interpreter the copy was built for
    stallfree) set -- "$py" -m stallfree "${@:2}" ;;
    python|python3) set -- "$py" "${@:2}" ;;
  esac
  PYTHONPATH="$stage${PYTHONPATH:+:$PYTHONPATH}" exec "$@"
fi
