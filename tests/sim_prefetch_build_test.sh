#!/usr/bin/env bash
# The simulator's prefetch hooks survive compilation: every event type with a prefetch hook
# (the fabric's Arrival and Serialized, the host's Timer) issues prefetch instructions in the
# binary. A compiler once deleted them all without a word (BENCHMARKS.md, "Session 11"), which
# no behavioural test can see: prefetches change no result. x86-64 builds only (prefetcht0);
# skipped (exit 77) elsewhere or without objdump.
set -euo pipefail
MRC=$1
[[ $(uname -m) == x86_64 ]] || exit 77
command -v objdump > /dev/null || exit 77
dis=$(mktemp)
trap 'rm -f "$dis"' EXIT
objdump -d -C --no-show-raw-insn "$MRC" > "$dis"
status=0
for event in 'mrc::sim::Fabric::Arrival' 'mrc::sim::Fabric::Serialized' 'mrc::sim::SimHost::Timer'; do
  # The event's stored call (EventQueue::schedule<Event>'s lambda), where the hook is inlined.
  n=$(awk -v ev="schedule<$event>" '
    /^[0-9a-f]+ <.*>:$/ { inside = index($0, ev) > 0 && index($0, "_FUN") > 0 }
    inside && /prefetcht0/ { n++ }
    END { print n + 0 }' "$dis")
  if [[ $n -eq 0 ]]; then
    # Not inlined: the hook is a function of its own.
    n=$(awk -v hook="<$event::prefetch(int) const>:" '
      index($0, hook) { inside = 1; next } /^[0-9a-f]+ <.*>:$/ { inside = 0 } inside && /prefetcht0/ { n++ }
      END { print n + 0 }' "$dis")
  fi
  echo "$event: $n prefetch instructions"
  [[ $n -gt 0 ]] || { echo "FAIL: $event's prefetch hook issues no prefetch" >&2; status=1; }
done
exit $status
