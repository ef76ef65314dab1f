# Sourced by the bench scripts that run on the namespace testbed (compare.sh,
# allreduce_compare.sh). Needs PREFIX (the testbed prefix), RAW (where raw files go) and say().
# Sets TB (the testbed command) and PIDS (background processes to kill), takes down a testbed
# left by an earlier run under the same prefix, and makes sure this one is always taken down:
# on exit, error or interrupt. Records the tree that was built (GIT_COMMIT, GIT_DIRTY: others may
# commit during the run) and gives machine_context, the lines every context.txt starts with.
GIT_COMMIT=$(git rev-parse HEAD)
GIT_DIRTY=$(git status --porcelain --untracked-files=no | awk '{print $2}' | tr '\n' ' ')
machine_context() {
  cat <<CTX
command $COMMAND_LINE
date $(date -u +%FT%TZ)
git_commit $GIT_COMMIT
git_dirty $GIT_DIRTY
cpu_model $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
nproc $(nproc)
kernel $(uname -r)
mem_total_kb $(awk '/MemTotal/ {print $2}' /proc/meminfo)
CTX
}
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
