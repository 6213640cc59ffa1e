#!/usr/bin/env bash
# Build a mypyc-compiled copy of the core (spec/ and reference/) for long campaigns and benchmarks
# (docs/testing.md). The sources are unchanged: mypyc compiles the same files that mypy --strict
# checks, into C extension modules. The test command runs the plain Python; one test builds a copy
# in a temporary folder and checks it does the same work and catches a fault (test_campaign_compiled.py).
#   scripts/compiled.sh                 build into build/compiled ($STALLFREE_COMPILED if set; ~30 s)
#   scripts/compiled.sh stallfree ...   build if needed, then run the CLI on the compiled copy
# The copy is laid out as installed (build/compiled/stallfree/...); PYTHONPATH puts it ahead of the
# editable install. `stallfree campaign` says which copy of the core it runs.
set -euo pipefail
. "$(dirname "$0")/venv.sh"  # cds to the repository root
stage="${STALLFREE_COMPILED:-build/compiled}"  # where the copy goes (the tests build theirs elsewhere)
case "$stage" in /*) ;; *) stage="$root/$stage" ;; esac
# The modules a campaign runs: the contract, the monitor, workloads, and the reference scheduler.
# errors.py stays Python: mypyc cannot compile subclasses of ValueError.
core=(spec/types.py spec/shadow.py spec/facts.py spec/rules.py spec/monitor.py
      spec/workload.py spec/generate.py reference/sequence.py reference/progress.py reference/scheduler.py)
stamp="$stage/.built"
packages=(spec reference faults conformance proofs executor costs sim)
stale=0
if [ ! -f "$stamp" ] || [ -n "$(find cli "${packages[@]}" -name '*.py' -newer "$stamp" | head -1)" ]; then
  stale=1
fi
if [ "$stale" = 1 ]; then
  if [ -e "$stage" ] && [ ! -d "$stage/stallfree" ] && [ -n "$(ls -A "$stage")" ]; then
    echo "scripts/compiled.sh: $stage holds something other than a compiled copy; not replacing it" >&2
    exit 2
  fi
  echo "scripts/compiled.sh: compiling ${#core[@]} modules of spec/ and reference/ with mypyc into $stage" >&2
  rm -rf "$stage"
  mkdir -p "$stage"
  cp -r cli "$stage/stallfree"
  for pkg in "${packages[@]}"; do cp -r "$pkg" "$stage/stallfree/$pkg"; done
  find "$stage" -name __pycache__ -prune -exec rm -rf {} +
  (cd "$stage" && mypyc --strict "${core[@]/#/stallfree/}" >mypyc.log 2>&1) || { cat "$stage/mypyc.log" >&2; exit 1; }
  touch "$stamp"
fi
if [ $# -gt 0 ]; then
  PYTHONPATH="$stage${PYTHONPATH:+:$PYTHONPATH}" exec "$@"
fi
