# Sourced by the bench scripts that run on the namespace testbed (compare.sh,
# allreduce_compare.sh). Needs PREFIX (the testbed prefix), RAW (where raw files go) and say().
# Sets TB (the testbed command) and PIDS (background processes to kill), takes down a testbed
# left by an earlier run under the same prefix, and makes sure this one is always taken down:
# on exit, error or interrupt.
TB=(scripts/testbed.sh --prefix "$PREFIX")
PIDS=()
testbed_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  "${TB[@]}" down >/dev/null 2>&1 || say "WARNING: '${TB[*]} down' failed; run it by hand"
  [ "$rc" = 0 ] || say "failed (exit $rc); testbed '$PREFIX' taken down; raw files in $RAW"
  exit "$rc"
}
trap testbed_cleanup EXIT
trap 'exit 130' INT TERM

if "${TB[@]}" status >/dev/null 2>&1; then
  say "a testbed '$PREFIX' is up from an earlier run: taking it down first"
  "${TB[@]}" down >/dev/null
fi
