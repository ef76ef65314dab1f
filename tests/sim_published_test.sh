#!/usr/bin/env bash
# The scenarios that reproduce published results (docs/SIMULATION.md, "Published results
# reproduced"; bench/published.py runs them in full) must keep loading and running: each is run
# with its messages shrunk (same fabric, transport, faults), the smallest one as shipped, and
# the driver's override of a [section] key is checked on one of them.
set -euo pipefail
MRC=$1
SRC=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

files=(mrc64-ring-mrc mrc64-ring-roce mrc64-a2a-mrc mrc64-a2a-roce
       mrc-incast-victim-mrc mrc-incast-victim-roce mrc-incast-victim-roce-pfc mrc-ev-drop20 mrc-two-flows-one-ev
       ndp-fattree-k8-mrc ndp-fattree-k8-mptcp ndp-fattree-k8-roce)
check_ok() {  # FILE: run it, require exit 0 and "ok": true
  "$MRC" sim "$1" --json --quiet > "$dir/out.json" 2> "$dir/err.txt" \
    || fail "$2: exit $?: $(tail -3 "$dir/err.txt")"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["ok"], r["failure"]; assert r["bytes_verified"] == r["bytes_written"] > 0' \
    "$dir/out.json" || fail "$2: not ok"
}
for f in "${files[@]}"; do
  path="$SRC/scenarios/$f.toml"
  [ -f "$path" ] || fail "missing $path"
  case $f in
    mrc64-a2a-*) size=4096 ;;       # 64 x 63 flows
    mrc64-ring-*) size=262144 ;;    # 4 KiB chunks
    *) size=65536 ;;
  esac
  sed -e "s/^message_bytes = .*/message_bytes = $size/" -e "s/^messages = .*/messages = 1/" "$path" > "$dir/$f.toml"
  check_ok "$dir/$f.toml" "$f (shrunk)"
done
# The smallest as shipped, end to end: 20 % drop on one of 16 paths, 64 MiB.
check_ok "$SRC/scenarios/mrc-ev-drop20.toml" "mrc-ev-drop20"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["fabric_drops"] > 0 and r["ev_transitions"]["to_assumed_bad"] > 0, r' \
  "$dir/out.json" || fail "mrc-ev-drop20: the lossy path was not seen"
# The driver's overrides: 4 QPs per connection on the ring, a loss fault appended.
python3 - "$SRC" "$dir" <<'PY' || fail "bench/published.py override"
import sys, importlib.util, os
spec = importlib.util.spec_from_file_location("published", os.path.join(sys.argv[1], "bench", "published.py"))
p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
t = p.override(open(os.path.join(sys.argv[1], "scenarios", "mrc64-ring-roce.toml")).read(),
               {"workload.qps": 4, "workload.message_bytes": 262144, "fabric.routing": "spray"})
assert "\nqps = 4\n" in t and "\nmessage_bytes = 262144\n" in t, t
assert t.index('routing = "spray"') > t.index("[fabric]") and t.index('routing = "spray"') < t.index("[qp]")
open(os.path.join(sys.argv[2], "q4.toml"), "w").write(t.replace('routing = "spray"', 'routing = "ecmp"'))
PY
check_ok "$dir/q4.toml" "ring with 4 QPs"
echo "ok"
