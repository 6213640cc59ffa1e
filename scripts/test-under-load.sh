#!/usr/bin/env bash
# Run scripts/test.sh (the CI profile; extra arguments go to it) with two CPU-bound processes beside
# it for the whole run, as on a machine with other work running, and print how long it took. The
# suite must pass the same under load as on an idle machine: no test bounds wall time, searches are
# bounded by counts, and process tests wait on the event (docs/testing.md, "A busy machine").
# Exits with scripts/test.sh's status.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
NUM_HOGS=2

hogs=()
stop_hogs() {
  for pid in "${hogs[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${hogs[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM

for _ in $(seq "$NUM_HOGS"); do
  # A pure CPU loop in a shell of its own: no I/O, no memory, one core's worth of work.
  bash -c 'while :; do :; done' &
  hogs+=("$!")
done

began=$(date +%s)
status=0
bash "$root/scripts/test.sh" "$@" || status=$?
took=$(( $(date +%s) - began ))
for pid in "${hogs[@]}"; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "test-under-load: CPU-bound process $pid ended before the tests did: the run was not under load" >&2
    status=3
  fi
done
printf 'scripts/test.sh under load (%d CPU-bound processes beside it): exit %d after %dm%02ds\n' \
  "$NUM_HOGS" "$status" $((took / 60)) $((took % 60)) >&2
exit "$status"
