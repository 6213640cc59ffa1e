#!/usr/bin/env bash
# Mutation testing with mutmut over reference/ or spec/ (docs/mutation.md). Not part of CI: minutes.
#   scripts/mutation.sh reference|spec [more mutmut run arguments]
# mutmut names a mutant after its file's path, so it runs in a staged copy laid out as the package
# is imported (build/mutation-TARGET/src/stallfree/...), with the fast tests of tests/test_mutation_*.py
# and the contract's own tests; [tool.mutmut] in pyproject.toml holds the settings, relative to it.
set -euo pipefail
target="${1:-reference}"
shift || true
. "$(dirname "$0")/venv.sh"  # cds to the repository root
stage=build/mutation-$target
rm -rf "$stage"
mkdir -p "$stage/src" "$stage/tests"
cp -r cli "$stage/src/stallfree"
for pkg in spec reference faults testing; do cp -r "$pkg" "$stage/src/stallfree/$pkg"; done
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
# The fast tests only: each mutant runs every selected test that reaches the mutated function.
cp tests/conftest.py tests/test_mutation_*.py tests/test_reference_*.py tests/test_contract_types.py \
  tests/test_contract_hand_trace.py tests/test_monitor_faults.py "$stage/tests/"
cp pyproject.toml "$stage/"
cd "$stage"
mutmut run "stallfree.$target.*" --max-children "${MUTMUT_JOBS:-2}" "$@" || true
mutmut results --all true > results.txt || true
grep -c ": killed" results.txt | sed 's/^/killed: /'
grep -vc ": killed" results.txt | sed 's/^/not killed: /'
grep -v ": killed" results.txt || true
